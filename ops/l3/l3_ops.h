// Names of the L3 ops and their attributes, shared by their registration (l3_ops.cc) and kernels (l3_kernels.cc,
// l3_gpu_kernels.cc). Python calls them liquid_decode_l3, liquid_decode_l3_batch, ...
#ifndef TFLIQUID_OPS_L3_L3_OPS_H_
#define TFLIQUID_OPS_L3_L3_OPS_H_

namespace tfliquid {

inline constexpr char kDecodeL3Op[] = "Liquid>DecodeL3";
inline constexpr char kEncodeL3Op[] = "Liquid>EncodeL3";
inline constexpr char kDecodeL3BatchOp[] = "Liquid>DecodeL3Batch";        // CPU and GPU kernels
inline constexpr char kL3GpuSupportOp[] = "Liquid>L3GpuSupport";          // why the GPU kernel cannot run, or ""
inline constexpr char kCompileL3KernelsOp[] = "Liquid>CompileL3Kernels";  // PTX of the GPU kernel's program

inline constexpr char kProfileAttr[] = "profile";
inline constexpr char kArchAttr[] = "arch";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_L3_L3_OPS_H_
