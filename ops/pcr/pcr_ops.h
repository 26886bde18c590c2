// Names of the PCR dataset ops and their attributes, shared by its registration (pcr_ops.cc) and kernel
// (pcr_dataset_kernel.cc). Python calls it liquid_pcr_record_dataset.
#ifndef TFLIQUID_OPS_PCR_PCR_OPS_H_
#define TFLIQUID_OPS_PCR_PCR_OPS_H_

namespace tfliquid {

inline constexpr char kPCRRecordDatasetOp[] = "Liquid>PCRRecordDataset";

inline constexpr char kScanGroupVariableTokenOp[] = "Liquid>ScanGroupVariableToken";

inline constexpr char kNumScanGroupVariablesAttr[] = "num_scan_group_variables";
inline constexpr char kScanGroupVariableTokenAttr[] = "scan_group_variable_token";
inline constexpr char kShuffleAttr[] = "shuffle";
inline constexpr char kWithKeysAttr[] = "with_keys";
inline constexpr char kWithCacheHitsAttr[] = "with_cache_hits";
// > 0: the record's items are Liquid raw items of that many channels, emitted as uint8 [H, W, C] pixels.
inline constexpr char kRawItemChannelsAttr[] = "raw_item_channels";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_PCR_PCR_OPS_H_
