// Names of the seeded-order op and of the StallMonitor's ops, shared by their registrations (data_ops.cc) and
// kernels (data_kernels.cc, stall_kernels.cc). Python calls them liquid_seeded_order_keys,
// liquid_stall_stamp_dataset and liquid_stall_ring_read.
#ifndef TFLIQUID_OPS_DATA_DATA_OPS_H_
#define TFLIQUID_OPS_DATA_DATA_OPS_H_

namespace tfliquid {

inline constexpr char kSeededOrderKeysOp[] = "Liquid>SeededOrderKeys";
// The order as text, "num_items,seed,num_workers,worker_index" (data/seeded_order.h).
inline constexpr char kOrderAttr[] = "order";

inline constexpr char kStallStampDatasetOp[] = "Liquid>StallStampDataset";
inline constexpr char kStallRingReadOp[] = "Liquid>StallRingRead";
inline constexpr char kStallRingAttr[] = "ring";          // the ring's name (data/stall_ring.h)
inline constexpr char kStallCapacityAttr[] = "capacity";  // its stamps

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_DATA_DATA_OPS_H_
