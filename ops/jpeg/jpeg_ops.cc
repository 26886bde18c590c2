// Registration and shape functions of the JPEG ops (kernels: jpeg_kernels.cc).
#include "jpeg/jpeg_ops.h"

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kJpegToProgressiveOp)
    .Input("contents: string")
    .Input("source: string")
    .Output("progressive: string")
    .Output("scan_ends: int64")
    .Attr(absl::StrCat(kKeepMarkersAttr, ": bool = false"))
    .Attr(absl::StrCat(kScanScriptAttr, ": string = 'standard'"))
    .Attr(absl::StrCat(kRescriptProgressiveAttr, ": bool = false"))
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Makes a JPEG progressive losslessly (its coefficients copied into the scans of scan_script, with jpegtran -scans
-optimize semantics) and returns where each scan's entropy-coded data ends. A progressive input is kept as it is,
once read whole, unless rescript_progressive. `source` names the input in errors.
scan_script: 'standard' (jpegtran -progressive), 'fast' (spectral selection only), or a script in jpegtran's
-scans syntax, for images of the number of components it names.
)doc");

REGISTER_OP(kJpegScanEndsOp)
    .Input("contents: string")
    .Output("scan_ends: int64")
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc("Where each scan's entropy-coded data ends in a JPEG (the PCR scan split).");

REGISTER_OP(kCheckJpegOp)
    .Input("contents: string")
    .Input("source: string")
    .Output("checked: string")
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Returns `contents` once every coefficient of the JPEG has been read strictly: libjpeg's warnings that mean lost
data (a premature end, a bad Huffman code, bytes the entropy decoder did not use) are errors naming `source`
(when not empty) and the byte offset.
)doc");

namespace {

absl::Status DecodeJpegScaledShape(InferenceContext* c) {
  TF_RETURN_IF_ERROR(ScalarInputs(c));
  c->set_output(0, c->MakeShape({InferenceContext::kUnknownDim, InferenceContext::kUnknownDim, 3}));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP(kDecodeJpegScaledOp)
    .Input("contents: string")
    .Input("target_height: int64")
    .Input("target_width: int64")
    .Output("image: uint8")
    .Attr(absl::StrCat(kResizeAttr, ": bool = false"))
    .SetShapeFn(DecodeJpegScaledShape)
    .Doc(R"doc(
Decodes a JPEG to RGB at libjpeg's DCT scale M/8, M the smallest of 1, 2, 4 and 8 whose image is at least
target_height x target_width (8 when none is), and no finer than the scans present code (a progressive prefix of
DC scans: 1/8); with `resize`, then resized bilinearly to exactly the target. A target of 0x0 is the full size:
the pixels of tf.io.decode_jpeg (smoothed where a progressive prefix lacks coefficients). Read strictly: data lost
to damage is an error with its byte offset.
)doc");

REGISTER_OP(kDecodeJpegScaledInContextOp)
    .Input("contents: string")
    .Input("target_height: int64")
    .Input("target_width: int64")
    .Input("context: string")
    .Output("image: uint8")
    .Attr(absl::StrCat(kResizeAttr, ": bool = false"))
    .SetShapeFn(DecodeJpegScaledShape)
    .Doc(R"doc(
Liquid>DecodeJpegScaled whose error messages start with `context` (when not empty): where the JPEG came from,
e.g. its record file and key.
)doc");

namespace {

// Input k has rank ranks[k]; the image's shape from its `size` input when that is a constant other than 0x0 (the
// window as decoded), [3, H, W] with channels_first.
absl::Status CroppedImageShape(InferenceContext* c, std::initializer_list<int> ranks, int size_index) {
  int index = 0;
  for (int rank : ranks) TF_RETURN_IF_ERROR(InputHasRank(c, index++, rank));
  tensorflow::shape_inference::DimensionHandle height = c->UnknownDim(), width = c->UnknownDim();
  if (const tensorflow::Tensor* size = c->input_tensor(size_index); size != nullptr && size->NumElements() == 2) {
    const auto values = size->vec<int64_t>();
    if (values(0) > 0 && values(1) > 0) height = c->MakeDim(values(0)), width = c->MakeDim(values(1));
  }
  bool channels_first;
  TF_RETURN_IF_ERROR(c->GetAttr(kChannelsFirstAttr, &channels_first));
  c->set_output(
      0, channels_first ? c->MakeShape({c->MakeDim(3), height, width}) : c->MakeShape({height, width, c->MakeDim(3)}));
  return absl::OkStatus();
}

// The specs of the attributes that say how a crop window is drawn or placed (jpeg/crop_window.h), and of the
// output's (crop_kernel.cc).
const std::string kCropSpec = absl::StrCat(kCropAttr, ": {'random', 'center'} = 'random'");
const std::string kScaleSpec = absl::StrCat(kScaleAttr, ": list(float) = [0.08, 1.0]");
const std::string kRatioSpec = absl::StrCat(kRatioAttr, ": list(float) = [0.75, 1.3333333333333333]");
const std::string kFractionSpec = absl::StrCat(kFractionAttr, ": float = 0.875");
const std::string kRandomFlipSpec = absl::StrCat(kRandomFlipAttr, ": bool = true");
const std::string kDtypeSpec = absl::StrCat(kDtypeAttr, ": {uint8, float, bfloat16} = DT_UINT8");
const std::string kMeanSpec = absl::StrCat(kMeanAttr, ": list(float) = []");
const std::string kStdSpec = absl::StrCat(kStdAttr, ": list(float) = []");
const std::string kChannelsFirstSpec = absl::StrCat(kChannelsFirstAttr, ": bool = false");

}  // namespace

REGISTER_OP(kDecodeJpegCropOp)
    .Input("contents: string")
    .Input("window: int64")
    .Input("size: int64")
    .Input("flip: bool")
    .Input("context: string")
    .Output("image: dtype")
    .Attr(kDtypeSpec)
    .Attr(kMeanSpec)
    .Attr(kStdSpec)
    .Attr(kChannelsFirstSpec)
    .SetShapeFn([](InferenceContext* c) { return CroppedImageShape(c, {0, 1, 1, 0, 0}, 2); })
    .Doc(R"doc(
Decodes the window (y, x, height, width: full-size pixels inside the image) of a JPEG at libjpeg's DCT scale M/8,
M the smallest of 1, 2, 4 and 8 whose window is at least size (height, width) and no finer than the scans present
code, only the MCU rows and columns around the window; resizes it bilinearly to size (0x0: not resized, the window
as decoded), mirrors it left to right if flip, and writes it as dtype: uint8, or float32/bfloat16 (value - mean[c])
/ std[c] (mean and std: three values, or none for 0 and 1), [height, width, 3] or, with channels_first, [3, height,
width]. At 8/8 the window's pixels are tf.io.decode_jpeg's. Errors start with `context` when it is not empty.
)doc");

REGISTER_OP(kDecodeJpegSampledCropOp)
    .Input("contents: string")
    .Input("seed: int64")
    .Input("size: int64")
    .Input("context: string")
    .Output("image: dtype")
    .Attr(kCropSpec)
    .Attr(kScaleSpec)
    .Attr(kRatioSpec)
    .Attr(kFractionSpec)
    .Attr(kRandomFlipSpec)
    .Attr(kDtypeSpec)
    .Attr(kMeanSpec)
    .Attr(kStdSpec)
    .Attr(kChannelsFirstSpec)
    .SetShapeFn([](InferenceContext* c) { return CroppedImageShape(c, {0, 1, 1, 0}, 2); })
    .Doc(R"doc(
Liquid>DecodeJpegCrop of the window the op takes from the JPEG's frame header and `seed` ([2]): crop 'random',
torchvision's random resized crop (areas in `scale` of the image's, aspects width / height in `ratio`), mirrored
with probability 1/2 if random_flip; 'center', the central square of `fraction` of the shorter side. The draws are
SplitMix64's of the seed (docs/formats/pcr.md, "Decoding a crop"): a seed gives the same window and flip.
)doc");

REGISTER_OP(kDecodeJpegCropBatchOp)
    .Input("contents: string")
    .Input("seeds: int64")
    .Input("size: int64")
    .Input("contexts: string")
    .Output("images: dtype")
    .Attr(absl::StrCat(kCropAttr, ": {'random', 'center', 'whole'} = 'random'"))
    .Attr(kScaleSpec)
    .Attr(kRatioSpec)
    .Attr(kFractionSpec)
    .Attr(kRandomFlipSpec)
    .Attr(kDtypeSpec)
    .Attr(kMeanSpec)
    .Attr(kStdSpec)
    .Attr(kChannelsFirstSpec)
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(CroppedImageShape(c, {1, 2, 1, 1}, 2));
      tensorflow::shape_inference::ShapeHandle images;
      TF_RETURN_IF_ERROR(c->Concatenate(c->Vector(c->Dim(c->input(0), 0)), c->output(0), &images));
      c->set_output(0, images);
      return absl::OkStatus();
    })
    .Doc(R"doc(
Liquid>DecodeJpegSampledCrop of every JPEG of `contents` ([B]) with its seed (seeds [B, 2]) to size (height,
width; not 0x0), each written into its place of the output, [B, height, width, 3] (or [B, 3, height, width]): one
op per batch, no copy of the images into the batch. crop 'whole' decodes the whole image at the scale the size
needs and resizes it. Errors start with the image's contexts[i] when it is not empty.
)doc");

REGISTER_OP(kCropPixelsOp)
    .Input("image: uint8")
    .Input("window: int64")
    .Input("size: int64")
    .Input("flip: bool")
    .Input("context: string")
    .Output("cropped: dtype")
    .Attr(kDtypeSpec)
    .Attr(kMeanSpec)
    .Attr(kStdSpec)
    .Attr(kChannelsFirstSpec)
    .SetShapeFn([](InferenceContext* c) { return CroppedImageShape(c, {3, 1, 1, 0, 0}, 2); })
    .Doc(R"doc(
Liquid>DecodeJpegCrop's output of decoded RGB pixels (uint8 [H, W, 3]): the window (y, x, height, width) resized
bilinearly to size (0x0: not resized), mirrored if flip, as dtype (mean and std as there), HWC or CHW. For images
of other formats than JPEG: at 8/8 it is the JPEG op's output of the same window, bit for bit. Errors start with
`context` when it is not empty.
)doc");

REGISTER_OP(kCropWindowOp)
    .Input("image_size: int64")
    .Input("seed: int64")
    .Output("window: int64")
    .Output("flip: bool")
    .Attr(kCropSpec)
    .Attr(kScaleSpec)
    .Attr(kRatioSpec)
    .Attr(kFractionSpec)
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(InputHasRank(c, 0, 1));
      TF_RETURN_IF_ERROR(InputHasRank(c, 1, 1));
      c->set_output(0, c->Vector(4));
      c->set_output(1, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The window (y, x, height, width) and flip Liquid>DecodeJpegSampledCrop (random_flip) takes of an image of
image_size (height, width) with `seed`.
)doc");

REGISTER_OP(kCheckScanScriptOp)
    .Attr(absl::StrCat(kScanScriptAttr, ": string"))
    .SetIsStateful()                     // it has no outputs: a stateless op without outputs is never run
    .SetShapeFn(ScalarInputsAndOutputs)  // none of either
    .Doc("Fails with the parser's message unless scan_script is one Liquid>JpegToProgressive accepts.");

}  // namespace tfliquid
