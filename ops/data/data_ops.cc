// Registrations and shape functions of the StallMonitor's ops (kernels: stall_kernels.cc).
#include "data/data_ops.h"
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
    .Attr(absl::StrCat(kStallCapacityAttr, ": int >= 1"))
    .SetIsStateful()  // it writes the ring: never constant-folded or deduplicated
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
The input's elements unchanged; as each leaves, the time (seconds since the epoch) goes into the named ring of
stamps, with the batch counted and its items (the first component's first dimension, 1 for a scalar) added.
)doc");

REGISTER_OP(kStallRingReadOp)
    .Output("stamps: double")
    .Output("batches: int64")
    .Output("items: int64")
    .Attr(absl::StrCat(kStallRingAttr, ": string"))
    .Attr(absl::StrCat(kStallCapacityAttr, ": int >= 1"))
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      int64_t capacity;
      TF_RETURN_IF_ERROR(c->GetAttr(kStallCapacityAttr, &capacity));
      c->set_output(0, c->Vector(capacity));
      c->set_output(1, c->Scalar());
      c->set_output(2, c->Scalar());
      return absl::OkStatus();
    })
    .Doc("A copy of the named ring of stamps (batch b at b % capacity), the batches stamped and their items.");

}  // namespace tfliquid
