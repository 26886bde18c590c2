#include "common/cuda_api.h"

#include <dlfcn.h>
#include <limits.h>

#include <cstdlib>
#include <vector>

namespace tfliquid::cuda {
namespace {

// Two levels, so that a function name cuda.h redefines (cuCtxPushCurrent -> cuCtxPushCurrent_v2) is looked up
// under the name it expands to.
#define TFLIQUID_SYMBOL_NAME(name) #name
#define TFLIQUID_EXPANDED_SYMBOL_NAME(name) TFLIQUID_SYMBOL_NAME(name)
#define TFLIQUID_LOAD(table, name) LoadSymbol(handle, TFLIQUID_EXPANDED_SYMBOL_NAME(name), &(table).name, &missing)

template <typename Function>
void LoadSymbol(void* handle, const char* name, Function* function, std::vector<std::string>* missing) {
  *function = reinterpret_cast<Function>(dlsym(handle, name));
  if (*function == nullptr) missing->push_back(name);
}

// The directory holding TensorFlow's framework library, which the op library depends on; "" where it is not
// loaded (the GPU check).
std::string TensorFlowLibraryDirectory() {
  void* framework = dlopen("libtensorflow_framework.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (framework == nullptr) return "";
  char origin[PATH_MAX] = "";
  const bool found = dlinfo(framework, RTLD_DI_ORIGIN, origin) == 0;
  dlclose(framework);
  return found ? origin : "";
}

std::string Joined(const std::vector<std::string>& parts, const char* separator) {
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

// dlopen of the first candidate that loads; nullptr and every candidate's error otherwise.
void* OpenFirst(const char* env_variable, std::vector<std::string> candidates, std::string* errors) {
  if (const char* chosen = std::getenv(env_variable); chosen != nullptr && *chosen != '\0') {
    candidates = {chosen};
  }
  std::vector<std::string> failures;
  for (const std::string& candidate : candidates) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* error = dlerror();
    failures.push_back(error != nullptr ? error : candidate + ": not loadable");
  }
  *errors = Joined(failures, "; ");
  return nullptr;
}

bool Missing(const char* library, const std::vector<std::string>& missing, std::string* error) {
  *error = std::string(library) + " lacks " + Joined(missing, ", ") + ": it is older than CUDA 12";
  return false;
}

bool OpenDriver(Driver* driver, std::string* error) {
  std::string errors;
  void* handle = OpenFirst(kDriverLibraryEnv, {"libcuda.so.1"}, &errors);
  if (handle == nullptr) {
    *error = "the CUDA driver library cannot be loaded (no NVIDIA driver installed?): " + errors;
    return false;
  }
  std::vector<std::string> missing;
  TFLIQUID_LOAD(*driver, cuInit);
  TFLIQUID_LOAD(*driver, cuGetErrorName);
  TFLIQUID_LOAD(*driver, cuGetErrorString);
  TFLIQUID_LOAD(*driver, cuDeviceGetCount);
  TFLIQUID_LOAD(*driver, cuDeviceGet);
  TFLIQUID_LOAD(*driver, cuDeviceGetName);
  TFLIQUID_LOAD(*driver, cuDeviceGetAttribute);
  TFLIQUID_LOAD(*driver, cuDevicePrimaryCtxRetain);
  TFLIQUID_LOAD(*driver, cuStreamGetCtx);
  TFLIQUID_LOAD(*driver, cuCtxPushCurrent);
  TFLIQUID_LOAD(*driver, cuCtxPopCurrent);
  TFLIQUID_LOAD(*driver, cuCtxGetDevice);
  TFLIQUID_LOAD(*driver, cuModuleLoadData);
  TFLIQUID_LOAD(*driver, cuModuleGetFunction);
  TFLIQUID_LOAD(*driver, cuFuncGetAttribute);
  TFLIQUID_LOAD(*driver, cuFuncSetAttribute);
  TFLIQUID_LOAD(*driver, cuOccupancyMaxActiveBlocksPerMultiprocessor);
  TFLIQUID_LOAD(*driver, cuMemAlloc);
  TFLIQUID_LOAD(*driver, cuMemFree);
  TFLIQUID_LOAD(*driver, cuMemHostAlloc);
  TFLIQUID_LOAD(*driver, cuMemFreeHost);
  TFLIQUID_LOAD(*driver, cuMemsetD8Async);
  TFLIQUID_LOAD(*driver, cuMemcpyHtoDAsync);
  TFLIQUID_LOAD(*driver, cuMemcpyDtoHAsync);
  TFLIQUID_LOAD(*driver, cuLaunchKernel);
  TFLIQUID_LOAD(*driver, cuStreamCreate);
  TFLIQUID_LOAD(*driver, cuStreamSynchronize);
  TFLIQUID_LOAD(*driver, cuEventCreate);
  TFLIQUID_LOAD(*driver, cuEventRecord);
  TFLIQUID_LOAD(*driver, cuEventSynchronize);
  TFLIQUID_LOAD(*driver, cuEventElapsedTime);
  if (!missing.empty()) return Missing("the CUDA driver library", missing, error);
  if (const CUresult result = driver->cuInit(0); result != CUDA_SUCCESS) {
    const char* name = "unknown error";
    driver->cuGetErrorName(result, &name);
    *error = std::string("cuInit failed: ") + name;
    return false;
  }
  return true;
}

bool OpenNvrtc(Nvrtc* nvrtc, std::string* error) {
  std::vector<std::string> candidates = {"libnvrtc.so.12"};
  if (const std::string tensorflow = TensorFlowLibraryDirectory(); !tensorflow.empty()) {
    candidates.push_back(tensorflow + "/../nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  }
  std::string errors;
  void* handle = OpenFirst(kNvrtcLibraryEnv, candidates, &errors);
  if (handle == nullptr) {
    *error = "NVRTC cannot be loaded (pip install tfliquid[gpu] installs it): " + errors;
    return false;
  }
  std::vector<std::string> missing;
  TFLIQUID_LOAD(*nvrtc, nvrtcVersion);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetErrorString);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetNumSupportedArchs);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetSupportedArchs);
  TFLIQUID_LOAD(*nvrtc, nvrtcCreateProgram);
  TFLIQUID_LOAD(*nvrtc, nvrtcCompileProgram);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetProgramLogSize);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetProgramLog);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetPTXSize);
  TFLIQUID_LOAD(*nvrtc, nvrtcGetPTX);
  TFLIQUID_LOAD(*nvrtc, nvrtcDestroyProgram);
  if (!missing.empty()) return Missing("NVRTC", missing, error);
  return true;
}

// Loads once; every later call returns the first call's outcome.
template <typename Table>
bool LoadOnce(bool (*open)(Table*, std::string*), const Table** table, std::string* error) {
  static Table loaded{};
  static std::string open_error;
  static const bool opened = open(&loaded, &open_error);
  if (opened) *table = &loaded;
  *error = open_error;
  return opened;
}

}  // namespace

bool LoadDriver(const Driver** driver, std::string* error) { return LoadOnce(OpenDriver, driver, error); }

bool LoadNvrtc(const Nvrtc** nvrtc, std::string* error) { return LoadOnce(OpenNvrtc, nvrtc, error); }

bool Check(const Driver& driver, CUresult result, const char* call, std::string* error) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = "unknown error";
  const char* description = "";
  driver.cuGetErrorName(result, &name);
  driver.cuGetErrorString(result, &description);
  *error = std::string(call) + ": " + name + " (" + description + ")";
  return false;
}

}  // namespace tfliquid::cuda
