// Names of the Liquid ops, shared by their registration (liquid_ops.cc) and kernels (liquid_kernels.cc). Python
// calls it liquid_decode_raw_item.
#ifndef TFLIQUID_OPS_LIQUID_LIQUID_OPS_H_
#define TFLIQUID_OPS_LIQUID_LIQUID_OPS_H_

namespace tfliquid {

inline constexpr char kDecodeRawItemOp[] = "Liquid>DecodeRawItem";

inline constexpr char kChannelsAttr[] = "channels";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_LIQUID_LIQUID_OPS_H_
