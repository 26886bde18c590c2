// Names of the seeded-order op, shared by its registration (data_ops.cc) and kernel (data_kernels.cc). Python
// calls it liquid_seeded_order_keys.
#ifndef TFLIQUID_OPS_DATA_DATA_OPS_H_
#define TFLIQUID_OPS_DATA_DATA_OPS_H_

namespace tfliquid {

inline constexpr char kSeededOrderKeysOp[] = "Liquid>SeededOrderKeys";
// The order as text, "num_items,seed,num_workers,worker_index" (data/seeded_order.h).
inline constexpr char kOrderAttr[] = "order";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_DATA_DATA_OPS_H_
