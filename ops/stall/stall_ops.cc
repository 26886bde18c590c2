// Registrations and shape functions of the StallMonitor's ops (kernels: stall_kernels.cc).
#include "stall/stall_ops.h"

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kStallStampDatasetOp)
    .Input("input_dataset: variant")
    .Output("handle: variant")
    .Attr(absl::StrCat(kStallRingAttr, ": string"))
    .SetIsStateful()  // it writes the counters: never constant-folded or deduplicated
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The input's elements unchanged. Each request for one is timed from the request to the input's answer, and the
time is added to the named counters, with the element counted and its items (the first component's first
dimension, 1 for a scalar) added.
)doc");

REGISTER_OP(kStallRingReadOp)
    .Output("waited_seconds: double")
    .Output("batches: int64")
    .Output("items: int64")
    .Attr(absl::StrCat(kStallRingAttr, ": string"))
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < 3; ++i) c->set_output(i, c->Scalar());
      return absl::OkStatus();
    })
    .Doc("The named counters: seconds waited on the input so far, the elements taken and their items.");

}  // namespace tfliquid
