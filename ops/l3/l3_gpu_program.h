// The CUDA program of the GPU decoder: l3_decode.cu, compiled by NVRTC to PTX for a virtual architecture. The op's
// GPU kernel, Liquid>CompileL3Kernels and the standalone GPU check (tests/cuda_device) all come here, so a test
// without a GPU compiles exactly what a GPU runs. No TensorFlow.
#ifndef TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_
#define TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_

#include <string>

#include "common/cuda_api.h"

namespace tfliquid::l3 {

inline constexpr char kDecodePatchesKernel[] = "l3_decode_patches";

// The text of l3_decode.cu and of its one header: embedded in the op library at build time (setup.py), read from
// ops/l3 by the GPU check.
struct KernelSource {
  const char* decode_cu = "";
  const char* task_fields_h = "";
};

// PTX of the kernel for `arch` ("compute_75"). False with NVRTC's log when the source does not compile for it.
bool CompileL3Kernels(const cuda::Nvrtc& nvrtc, const KernelSource& source, const std::string& arch, std::string* ptx,
                      std::string* error);

// The newest virtual architecture NVRTC supports that is not newer than compute capability major.minor (the
// driver compiles its PTX for the device itself); false if the device is older than all of them.
bool ArchitectureFor(const cuda::Nvrtc& nvrtc, int major, int minor, std::string* arch, std::string* error);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_
