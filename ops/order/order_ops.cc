// Registrations and shape functions of the seeded-order ops (kernels: order_kernels.cc).
#include "order/order_ops.h"

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

REGISTER_OP(kUnsplittableDatasetOp)
    .Input("input_dataset: variant")
    .Output("handle: variant")
    .Attr(absl::StrCat(kReasonAttr, ": string"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's elements, as they are. A dataset whose elements only make sense as whole passes (a pattern of batches
over several streams) ends with it: tf.data service's dynamic sharding, which would hand each worker a part of
every source, fails with `reason` instead of silently yielding other elements.
)doc");

REGISTER_OP(kIterationDatasetOp)
    .Input("input_dataset: variant")
    .Output("handle: variant")
    .Attr(absl::StrCat(kIterationsAttr, ": string"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's elements, each iteration numbered: 0, 1, ... in the order iterators of any dataset with the same
`iterations` name are made in this process. The number is saved in checkpoints; a restored iterator goes on with
it, and the iteration after it gets the next. Liquid>SeededShuffleDatasets of the same name inside the input
shuffle by it, so that every iteration's order is a function of (seed, iteration) and a restore replays it, even
where the shuffle had ended before the checkpoint.
)doc");

REGISTER_OP(kSeededShuffleDatasetOp)
    .Input("input_dataset: variant")
    .Output("handle: variant")
    .Attr(absl::StrCat(kIterationsAttr, ": string"))
    .Attr(absl::StrCat(kSeedAttr, ": int"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's int64 scalars (all of them, read first) in a seeded permutation of the iteration being made (see
Liquid>IterationDataset with the same `iterations`), each paired with an int64 seed of (seed, iteration, element).
As a unary dataset it lets tf.data service's dynamic sharding split its input: each worker shuffles the
elements it is given.
)doc");

}  // namespace tfliquid
