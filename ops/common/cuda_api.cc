#include "common/cuda_api.h"

#include <dlfcn.h>
#include <limits.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// The directory holding TensorFlow's framework library (already loaded: this library depends on it).
std::string TensorFlowLibraryDirectory() {
  void* framework = dlopen("libtensorflow_framework.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (framework == nullptr) return "";
  char origin[PATH_MAX] = "";
  const bool found = dlinfo(framework, RTLD_DI_ORIGIN, origin) == 0;
  dlclose(framework);
  return found ? origin : "";
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
  *errors = absl::StrJoin(failures, "; ");
  return nullptr;
}

absl::Status Missing(const char* library, const std::vector<std::string>& missing) {
  return absl::FailedPreconditionError(
      absl::StrCat(library, " lacks ", absl::StrJoin(missing, ", "), ": it is older than CUDA 12"));
}

absl::Status OpenDriver(Driver* driver) {
  std::string errors;
  void* handle = OpenFirst(kDriverLibraryEnv, {"libcuda.so.1"}, &errors);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA driver library cannot be loaded (no NVIDIA driver installed?): ", errors));
  }
  std::vector<std::string> missing;
  TFLIQUID_LOAD(*driver, cuInit);
  TFLIQUID_LOAD(*driver, cuGetErrorName);
  TFLIQUID_LOAD(*driver, cuGetErrorString);
  TFLIQUID_LOAD(*driver, cuDeviceGetCount);
  TFLIQUID_LOAD(*driver, cuDeviceGetAttribute);
  TFLIQUID_LOAD(*driver, cuStreamGetCtx);
  TFLIQUID_LOAD(*driver, cuCtxPushCurrent);
  TFLIQUID_LOAD(*driver, cuCtxPopCurrent);
  TFLIQUID_LOAD(*driver, cuCtxGetDevice);
  TFLIQUID_LOAD(*driver, cuModuleLoadData);
  TFLIQUID_LOAD(*driver, cuModuleGetFunction);
  TFLIQUID_LOAD(*driver, cuMemcpyHtoDAsync);
  TFLIQUID_LOAD(*driver, cuMemcpyDtoHAsync);
  TFLIQUID_LOAD(*driver, cuMemsetD8Async);
  TFLIQUID_LOAD(*driver, cuLaunchKernel);
  TFLIQUID_LOAD(*driver, cuStreamSynchronize);
  if (!missing.empty()) return Missing("the CUDA driver library", missing);
  if (const CUresult result = driver->cuInit(0); result != CUDA_SUCCESS) {
    const char* name = "unknown error";
    driver->cuGetErrorName(result, &name);
    return absl::FailedPreconditionError(absl::StrCat("cuInit failed: ", name));
  }
  return absl::OkStatus();
}

absl::Status OpenNvrtc(Nvrtc* nvrtc) {
  std::vector<std::string> candidates = {"libnvrtc.so.12"};
  if (const std::string tensorflow = TensorFlowLibraryDirectory(); !tensorflow.empty()) {
    candidates.push_back(tensorflow + "/../nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  }
  std::string errors;
  void* handle = OpenFirst(kNvrtcLibraryEnv, candidates, &errors);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC cannot be loaded (pip install tfliquid[gpu] installs it): ", errors));
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
  if (!missing.empty()) return Missing("NVRTC", missing);
  return absl::OkStatus();
}

// Loads once; every later call returns the first call's outcome.
template <typename Table>
absl::Status LoadOnce(absl::Status (*open)(Table*), const Table** table) {
  static Table loaded{};
  static const absl::Status status = open(&loaded);
  if (status.ok()) *table = &loaded;
  return status;
}

}  // namespace

absl::Status LoadDriver(const Driver** driver) { return LoadOnce(OpenDriver, driver); }

absl::Status LoadNvrtc(const Nvrtc** nvrtc) { return LoadOnce(OpenNvrtc, nvrtc); }

absl::Status Check(const Driver& driver, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = "unknown error";
  const char* description = "";
  driver.cuGetErrorName(result, &name);
  driver.cuGetErrorString(result, &description);
  return absl::InternalError(absl::StrCat(call, ": ", name, " (", description, ")"));
}

}  // namespace tfliquid::cuda
