// Names of the throttled I/O ops, shared by their registration (io_ops.cc) and kernels (io_kernels.cc).
// Python calls them liquid_read_file, liquid_read_file_range, ...
#ifndef TFLIQUID_OPS_COMMON_IO_OPS_H_
#define TFLIQUID_OPS_COMMON_IO_OPS_H_

namespace tfliquid {

inline constexpr char kReadFileOp[] = "Liquid>ReadFile";
inline constexpr char kReadFileRangeOp[] = "Liquid>ReadFileRange";
inline constexpr char kSetReadBandwidthOp[] = "Liquid>SetReadBandwidth";
inline constexpr char kDrawReadBandwidthOp[] = "Liquid>DrawReadBandwidth";
inline constexpr char kReadStatsOp[] = "Liquid>ReadStats";
inline constexpr char kCrc32cOp[] = "Liquid>Crc32c";
// Per-worker read queues (common/read_queues.h).
inline constexpr char kQueuedReadFileOp[] = "Liquid>QueuedReadFile";
inline constexpr char kSetReadQueueThreadsOp[] = "Liquid>SetReadQueueThreads";
inline constexpr char kReadQueueCountsOp[] = "Liquid>ReadQueueCounts";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_IO_OPS_H_
