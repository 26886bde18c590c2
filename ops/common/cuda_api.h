// The CUDA driver API and NVRTC, loaded with dlopen on first use: the op library links neither, so it loads, and
// its CPU kernels run, on machines without CUDA. Only the functions tfliquid calls; types and names come from the
// CUDA headers TensorFlow's wheel ships (third_party/gpus/cuda/include).
#ifndef TFLIQUID_OPS_COMMON_CUDA_API_H_
#define TFLIQUID_OPS_COMMON_CUDA_API_H_

#include <string>

#include "absl/status/status.h"
#include "third_party/gpus/cuda/include/cuda.h"
#include "third_party/gpus/cuda/include/nvrtc.h"

namespace tfliquid::cuda {

// Where the libraries are looked for, in order (docs/l3.md, "The GPU kernel"): the file an environment variable
// names, if set (then only that); the loader's search path (LD_LIBRARY_PATH, the system's library cache); and, for
// NVRTC, the nvidia-cuda-nvrtc-cu12 wheel beside TensorFlow's, where `tensorflow[and-cuda]` installs it.
inline constexpr char kDriverLibraryEnv[] = "TFLIQUID_CUDA_DRIVER_LIBRARY";
inline constexpr char kNvrtcLibraryEnv[] = "TFLIQUID_NVRTC_LIBRARY";

// One member per function, named as in cuda.h (whose macros pick the versioned entry points, cuCtxPushCurrent_v2
// for cuCtxPushCurrent, exactly as a program linked against libcuda would).
struct Driver {
  decltype(&::cuInit) cuInit;
  decltype(&::cuGetErrorName) cuGetErrorName;
  decltype(&::cuGetErrorString) cuGetErrorString;
  decltype(&::cuDeviceGetCount) cuDeviceGetCount;
  decltype(&::cuDeviceGetAttribute) cuDeviceGetAttribute;
  decltype(&::cuStreamGetCtx) cuStreamGetCtx;
  decltype(&::cuCtxPushCurrent) cuCtxPushCurrent;
  decltype(&::cuCtxPopCurrent) cuCtxPopCurrent;
  decltype(&::cuCtxGetDevice) cuCtxGetDevice;
  decltype(&::cuModuleLoadData) cuModuleLoadData;
  decltype(&::cuModuleGetFunction) cuModuleGetFunction;
  decltype(&::cuMemcpyHtoDAsync) cuMemcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) cuMemcpyDtoHAsync;
  decltype(&::cuMemsetD8Async) cuMemsetD8Async;
  decltype(&::cuLaunchKernel) cuLaunchKernel;
  decltype(&::cuStreamSynchronize) cuStreamSynchronize;
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

// The driver, loaded and initialised (cuInit) once per process; FailedPrecondition saying what is missing (the
// library, a function in it, or cuInit's error) when it cannot be. Thread-safe.
absl::Status LoadDriver(const Driver** driver);
absl::Status LoadNvrtc(const Nvrtc** nvrtc);

// OK, or Internal naming the call and the driver's error: "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid
// argument)".
absl::Status Check(const Driver& driver, CUresult result, const char* call);

}  // namespace tfliquid::cuda

#endif  // TFLIQUID_OPS_COMMON_CUDA_API_H_
