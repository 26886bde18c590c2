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
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Makes a JPEG progressive losslessly (baseline: coefficients copied, jpegtran -progressive -optimize semantics;
progressive: kept as is) and returns where each scan's entropy-coded data ends. `source` names the input in errors.
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

}  // namespace tfliquid
