#include "l3/l3_gpu_program.h"

#include <vector>

#include "common/cuda_api.h"

namespace tfliquid::l3 {
namespace {

bool NvrtcCheck(const cuda::Nvrtc& nvrtc, nvrtcResult result, const char* call, std::string* error) {
  if (result == NVRTC_SUCCESS) return true;
  *error = std::string(call) + ": " + nvrtc.nvrtcGetErrorString(result);
  return false;
}

bool Ptx(const cuda::Nvrtc& nvrtc, nvrtcProgram program, std::string* ptx, std::string* error) {
  size_t ptx_size = 0;
  if (!NvrtcCheck(nvrtc, nvrtc.nvrtcGetPTXSize(program, &ptx_size), "nvrtcGetPTXSize", error)) return false;
  ptx->assign(ptx_size, '\0');
  if (!NvrtcCheck(nvrtc, nvrtc.nvrtcGetPTX(program, ptx->data()), "nvrtcGetPTX", error)) return false;
  ptx->resize(ptx_size > 0 ? ptx_size - 1 : 0);  // drop the terminating NUL NVRTC counts
  return true;
}

}  // namespace

bool CompileL3Kernels(const cuda::Nvrtc& nvrtc, const KernelSource& source, const std::string& arch, std::string* ptx,
                      std::string* error) {
  const char* headers[] = {source.task_fields_h};
  const char* header_names[] = {"l3_task_fields.h"};
  nvrtcProgram program;
  if (!NvrtcCheck(nvrtc, nvrtc.nvrtcCreateProgram(&program, source.decode_cu, "l3_decode.cu", 1, headers, header_names),
                  "nvrtcCreateProgram", error)) {
    return false;
  }
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str()};
  const nvrtcResult compiled = nvrtc.nvrtcCompileProgram(program, 1, options);
  bool ok;
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtc.nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtc.nvrtcGetProgramLog(program, log.data());
    *error = "NVRTC cannot compile l3_decode.cu for " + arch + ": " + nvrtc.nvrtcGetErrorString(compiled) + "\n" +
             log.c_str();
    ok = false;
  } else {
    ok = Ptx(nvrtc, program, ptx, error);
  }
  nvrtc.nvrtcDestroyProgram(&program);
  return ok;
}

bool ArchitectureFor(const cuda::Nvrtc& nvrtc, int major, int minor, std::string* arch, std::string* error) {
  int count = 0;
  if (!NvrtcCheck(nvrtc, nvrtc.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs", error)) return false;
  std::vector<int> supported(count);
  if (!NvrtcCheck(nvrtc, nvrtc.nvrtcGetSupportedArchs(supported.data()), "nvrtcGetSupportedArchs", error)) {
    return false;
  }
  const int device = major * 10 + minor;
  int best = 0;
  for (const int candidate : supported) {
    if (candidate <= device && candidate > best) best = candidate;
  }
  if (best == 0) {
    *error = "this NVRTC compiles for no architecture up to the GPU's compute capability " + std::to_string(major) +
             "." + std::to_string(minor);
    return false;
  }
  *arch = "compute_" + std::to_string(best);
  return true;
}

}  // namespace tfliquid::l3
