// Registration and shape function of the seeded-order op (kernel: data_kernels.cc).
#include "data/data_ops.h"
#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kSeededOrderKeysOp)
    .Input("epoch: int64")
    .Output("keys: int64")
    .Attr(absl::StrCat(kOrderAttr, ": string"))
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc("This worker's items of `epoch` in reading order, from its seeded order (docs/formats/seeded-order.md).");

}  // namespace tfliquid
