// Names of the PCR ops and their attributes, shared by their registration (pcr_ops.cc) and kernels
// (scan_group_variable.cc). Python calls them liquid_scan_group_dataset and liquid_scan_group_variable_token.
#ifndef TFLIQUID_OPS_PCR_PCR_OPS_H_
#define TFLIQUID_OPS_PCR_PCR_OPS_H_

namespace tfliquid {

inline constexpr char kScanGroupDatasetOp[] = "Liquid>ScanGroupDataset";
inline constexpr char kScanGroupVariableTokenOp[] = "Liquid>ScanGroupVariableToken";

inline constexpr char kScanGroupVariableTokenAttr[] = "scan_group_variable_token";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_PCR_PCR_OPS_H_
