// Names of the JPEG ops and their attributes, shared by their registration (jpeg_ops.cc) and kernels
// (jpeg_kernels.cc). Python calls them liquid_jpeg_to_progressive and liquid_jpeg_scan_ends.
#ifndef TFLIQUID_OPS_JPEG_JPEG_OPS_H_
#define TFLIQUID_OPS_JPEG_JPEG_OPS_H_

namespace tfliquid {

inline constexpr char kJpegToProgressiveOp[] = "Liquid>JpegToProgressive";
inline constexpr char kJpegScanEndsOp[] = "Liquid>JpegScanEnds";

inline constexpr char kKeepMarkersAttr[] = "keep_markers";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_JPEG_JPEG_OPS_H_
