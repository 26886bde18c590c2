// The CUDA program of the GPU decoder: l3_decode.cu (embedded in the op library at build time, see setup.py),
// compiled by NVRTC to PTX for a virtual architecture. The GPU kernel and Liquid>CompileL3Kernels both come here,
// so a test without a GPU compiles exactly what a GPU would run.
#ifndef TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_
#define TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_

#include <string>

#include "absl/status/status.h"
#include "common/cuda_api.h"

namespace tfliquid::l3 {

inline constexpr char kDecodePatchesKernel[] = "l3_decode_patches";
inline constexpr char kAddGreenKernel[] = "l3_add_green";

// PTX of both kernels for `arch` ("compute_75"), compiled once per architecture and process. InvalidArgument with
// NVRTC's log when the source does not compile for it.
absl::Status CompileL3Kernels(const cuda::Nvrtc& nvrtc, const std::string& arch, std::string* ptx);

// The newest virtual architecture NVRTC supports that is not newer than compute capability major.minor (the
// driver compiles its PTX for the device itself); InvalidArgument if the device is older than all of them.
absl::Status ArchitectureFor(const cuda::Nvrtc& nvrtc, int major, int minor, std::string* arch);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_GPU_PROGRAM_H_
