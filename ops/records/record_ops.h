// Names of the record ops and their attributes, shared by their registration (record_ops.cc) and kernels
// (record_kernels.cc). Python calls them liquid_record_bytes_dataset, liquid_record_dataset and
// liquid_declared_cardinality_dataset.
#ifndef TFLIQUID_OPS_RECORDS_RECORD_OPS_H_
#define TFLIQUID_OPS_RECORDS_RECORD_OPS_H_

namespace tfliquid {

inline constexpr char kRecordBytesDatasetOp[] = "Liquid>RecordBytesDataset";
inline constexpr char kRecordDatasetOp[] = "Liquid>RecordDataset";
inline constexpr char kDeclaredCardinalityDatasetOp[] = "Liquid>DeclaredCardinalityDataset";

inline constexpr char kReadQueueAttr[] = "read_queue";  // common/read_queues.h; "" for none
inline constexpr char kShuffleAttr[] = "shuffle";
inline constexpr char kWithKeysAttr[] = "with_keys";
inline constexpr char kWithContextAttr[] = "with_context";
// The input's elements are (hit, bytes) pairs (a cache's, tfliquid/cache): every item carries the bool.
inline constexpr char kWithCacheHitsAttr[] = "with_cache_hits";
inline constexpr char kItemFormatAttr[] = "item_format";      // a name registered in records/item_format.h
inline constexpr char kItemChannelsAttr[] = "item_channels";  // C of [H, W, C] items

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_RECORDS_RECORD_OPS_H_
