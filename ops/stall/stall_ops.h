// Names of the StallMonitor's ops (tfliquid/keras/stall_monitor.py), shared by their registrations
// (stall_ops.cc) and kernels (stall_kernels.cc). Python calls them liquid_stall_stamp_dataset and
// liquid_stall_ring_read.
#ifndef TFLIQUID_OPS_STALL_STALL_OPS_H_
#define TFLIQUID_OPS_STALL_STALL_OPS_H_

namespace tfliquid {

inline constexpr char kStallStampDatasetOp[] = "Liquid>StallStampDataset";
inline constexpr char kStallRingReadOp[] = "Liquid>StallRingRead";
// The name of the counters both ops share (stall/stall_counters.h): one per StallMonitor.
inline constexpr char kStallRingAttr[] = "ring";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_STALL_STALL_OPS_H_
