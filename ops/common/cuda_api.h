// The CUDA driver API and NVRTC, loaded with dlopen on first use: neither the op library nor the standalone GPU
// check (tests/cuda_device) links them, so the op library loads, and its CPU kernels run, on machines without
// CUDA. Only the functions tfliquid calls. No TensorFlow and no Abseil: the GPU check builds this file with a CUDA
// toolkit alone. Types and names come from cuda.h and nvrtc.h: TensorFlow's copies (under third_party/ in its
// include directory) when the op library is built, the toolkit's otherwise.
#ifndef TFLIQUID_OPS_COMMON_CUDA_API_H_
#define TFLIQUID_OPS_COMMON_CUDA_API_H_

#include <string>

#if __has_include("third_party/gpus/cuda/include/cuda.h")
#include "third_party/gpus/cuda/include/cuda.h"
#include "third_party/gpus/cuda/include/nvrtc.h"
#else
#include <cuda.h>
#include <nvrtc.h>
#endif

namespace tfliquid::cuda {

// Where the libraries are looked for, in order (docs/l3.md, "The GPU kernel"): the file an environment variable
// names, if set (then only that); the loader's search path (LD_LIBRARY_PATH, the system's library cache); and, for
// NVRTC, the nvidia-cuda-nvrtc-cu12 wheel beside TensorFlow's, where `tensorflow[and-cuda]` installs it.
inline constexpr char kDriverLibraryEnv[] = "TFLIQUID_CUDA_DRIVER_LIBRARY";
inline constexpr char kNvrtcLibraryEnv[] = "TFLIQUID_NVRTC_LIBRARY";

// One member per function, named as in cuda.h (whose macros pick the versioned entry points, cuCtxPushCurrent_v2
// for cuCtxPushCurrent, exactly as a program linked against libcuda would). The op's GPU kernel uses the stream,
// context, module, host memory, copy and launch functions; the GPU check also creates its own context, stream,
// device memory (cleared before each check) and events, and reads the device's name and the kernel's occupancy.
struct Driver {
  decltype(&::cuInit) cuInit;
  decltype(&::cuGetErrorName) cuGetErrorName;
  decltype(&::cuGetErrorString) cuGetErrorString;
  decltype(&::cuDeviceGetCount) cuDeviceGetCount;
  decltype(&::cuDeviceGet) cuDeviceGet;
  decltype(&::cuDeviceGetName) cuDeviceGetName;
  decltype(&::cuDeviceGetAttribute) cuDeviceGetAttribute;
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain;
  decltype(&::cuStreamGetCtx) cuStreamGetCtx;
  decltype(&::cuCtxPushCurrent) cuCtxPushCurrent;
  decltype(&::cuCtxPopCurrent) cuCtxPopCurrent;
  decltype(&::cuCtxGetDevice) cuCtxGetDevice;
  decltype(&::cuModuleLoadData) cuModuleLoadData;
  decltype(&::cuModuleGetFunction) cuModuleGetFunction;
  decltype(&::cuFuncGetAttribute) cuFuncGetAttribute;
  decltype(&::cuFuncSetAttribute) cuFuncSetAttribute;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) cuOccupancyMaxActiveBlocksPerMultiprocessor;
  decltype(&::cuMemAlloc) cuMemAlloc;
  decltype(&::cuMemFree) cuMemFree;
  decltype(&::cuMemHostAlloc) cuMemHostAlloc;
  decltype(&::cuMemFreeHost) cuMemFreeHost;
  decltype(&::cuMemsetD8Async) cuMemsetD8Async;
  decltype(&::cuMemcpyHtoDAsync) cuMemcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) cuMemcpyDtoHAsync;
  decltype(&::cuLaunchKernel) cuLaunchKernel;
  decltype(&::cuStreamCreate) cuStreamCreate;
  decltype(&::cuStreamSynchronize) cuStreamSynchronize;
  decltype(&::cuEventCreate) cuEventCreate;
  decltype(&::cuEventRecord) cuEventRecord;
  decltype(&::cuEventSynchronize) cuEventSynchronize;
  decltype(&::cuEventElapsedTime) cuEventElapsedTime;
};

struct Nvrtc {
  decltype(&::nvrtcVersion) nvrtcVersion;
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString;
  decltype(&::nvrtcGetNumSupportedArchs) nvrtcGetNumSupportedArchs;
  decltype(&::nvrtcGetSupportedArchs) nvrtcGetSupportedArchs;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog;
  decltype(&::nvrtcGetPTXSize) nvrtcGetPTXSize;
  decltype(&::nvrtcGetPTX) nvrtcGetPTX;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram;
};

// The driver, loaded and initialised (cuInit) once per process; false, saying what is missing (the library, a
// function in it, or cuInit's error), when it cannot be. Thread-safe; every call returns the first one's outcome.
bool LoadDriver(const Driver** driver, std::string* error);
bool LoadNvrtc(const Nvrtc** nvrtc, std::string* error);

// True on CUDA_SUCCESS; otherwise false with `error` naming the call and the driver's error:
// "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid argument)".
bool Check(const Driver& driver, CUresult result, const char* call, std::string* error);

}  // namespace tfliquid::cuda

#endif  // TFLIQUID_OPS_COMMON_CUDA_API_H_
