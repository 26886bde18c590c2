// Names of the StallMonitor's ops, shared by their registrations (data_ops.cc) and kernels (stall_kernels.cc).
// Python calls them liquid_stall_stamp_dataset and liquid_stall_ring_read.
#ifndef TFLIQUID_OPS_DATA_DATA_OPS_H_
#define TFLIQUID_OPS_DATA_DATA_OPS_H_

namespace tfliquid {

inline constexpr char kStallStampDatasetOp[] = "Liquid>StallStampDataset";
inline constexpr char kStallRingReadOp[] = "Liquid>StallRingRead";
inline constexpr char kStallRingAttr[] = "ring";          // the ring's name (data/stall_ring.h)
inline constexpr char kStallCapacityAttr[] = "capacity";  // its stamps

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_DATA_DATA_OPS_H_
