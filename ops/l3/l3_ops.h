// Names of the L3 ops and their attributes, shared by their registration (l3_ops.cc) and kernels
// (l3_kernels.cc). Python calls them liquid_decode_l3 and liquid_encode_l3.
#ifndef TFLIQUID_OPS_L3_L3_OPS_H_
#define TFLIQUID_OPS_L3_L3_OPS_H_

namespace tfliquid {

inline constexpr char kDecodeL3Op[] = "Liquid>DecodeL3";
inline constexpr char kEncodeL3Op[] = "Liquid>EncodeL3";

inline constexpr char kProfileAttr[] = "profile";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_L3_L3_OPS_H_
