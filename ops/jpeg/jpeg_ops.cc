// Registration and shape functions of the JPEG ops (kernels: jpeg_kernels.cc).
#include "jpeg/jpeg_ops.h"

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

REGISTER_OP(kCheckScanScriptOp)
    .Attr(absl::StrCat(kScanScriptAttr, ": string"))
    .SetIsStateful()                     // it has no outputs: a stateless op without outputs is never run
    .SetShapeFn(ScalarInputsAndOutputs)  // none of either
    .Doc("Fails with the parser's message unless scan_script is one Liquid>JpegToProgressive accepts.");

}  // namespace tfliquid
