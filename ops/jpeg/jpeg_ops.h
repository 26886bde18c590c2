// Names of the JPEG ops and their attributes, shared by their registration (jpeg_ops.cc) and kernels
// (jpeg_kernels.cc). Python calls them liquid_jpeg_to_progressive, liquid_jpeg_scan_ends, liquid_check_jpeg,
// liquid_check_scan_script, liquid_decode_jpeg_scaled, liquid_decode_jpeg_scaled_in_context,
// liquid_decode_jpeg_crop, liquid_decode_jpeg_sampled_crop, liquid_decode_jpeg_crop_batch, liquid_crop_pixels,
// liquid_crop_window.
#ifndef TFLIQUID_OPS_JPEG_JPEG_OPS_H_
#define TFLIQUID_OPS_JPEG_JPEG_OPS_H_

#include <cstdint>

namespace tfliquid {

inline constexpr char kJpegToProgressiveOp[] = "Liquid>JpegToProgressive";
inline constexpr char kJpegScanEndsOp[] = "Liquid>JpegScanEnds";
inline constexpr char kCheckJpegOp[] = "Liquid>CheckJpeg";
inline constexpr char kCheckScanScriptOp[] = "Liquid>CheckScanScript";
inline constexpr char kDecodeJpegScaledOp[] = "Liquid>DecodeJpegScaled";
// The same decode with a `context` input that starts its error messages: where the JPEG came from.
inline constexpr char kDecodeJpegScaledInContextOp[] = "Liquid>DecodeJpegScaledInContext";

// A window of the image decoded at the scale its output size needs, resized, flipped, normalised (crop_kernel.cc).
inline constexpr char kDecodeJpegCropOp[] = "Liquid>DecodeJpegCrop";
// The same decode of a window it draws (a random resized crop) or places (the central square) itself.
inline constexpr char kDecodeJpegSampledCropOp[] = "Liquid>DecodeJpegSampledCrop";
// That decode of a batch of JPEGs, each image written into its place in the batch.
inline constexpr char kDecodeJpegCropBatchOp[] = "Liquid>DecodeJpegCropBatch";
// The same output of decoded pixels: the crop of images of other formats.
inline constexpr char kCropPixelsOp[] = "Liquid>CropPixels";
// The window and flip that op draws, of an image's size: for pipelines that crop with other ops.
inline constexpr char kCropWindowOp[] = "Liquid>CropWindow";

// The largest image side a decode takes as its output size: JPEG's own limit, and tfliquid.jpeg.sized's.
inline constexpr int64_t kMaxImageSide = 65535;

inline constexpr char kKeepMarkersAttr[] = "keep_markers";
inline constexpr char kScanScriptAttr[] = "scan_script";
inline constexpr char kRescriptProgressiveAttr[] = "rescript_progressive";
inline constexpr char kResizeAttr[] = "resize";
inline constexpr char kDtypeAttr[] = "dtype";
inline constexpr char kMeanAttr[] = "mean";
inline constexpr char kStdAttr[] = "std";
inline constexpr char kChannelsFirstAttr[] = "channels_first";
inline constexpr char kCropAttr[] = "crop";
inline constexpr char kScaleAttr[] = "scale";
inline constexpr char kRatioAttr[] = "ratio";
inline constexpr char kFractionAttr[] = "fraction";
inline constexpr char kRandomFlipAttr[] = "random_flip";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_JPEG_JPEG_OPS_H_
