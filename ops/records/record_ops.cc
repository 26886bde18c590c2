// Registrations and shape functions of the record ops (kernels: record_kernels.cc).
#include "records/record_ops.h"

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kRecordBytesDatasetOp)
    .Input("filename: string")
    .Input("length: int64")
    .Output("handle: variant")
    .Attr(absl::StrCat(kReadQueueAttr, ": string = ''"))
    .SetIsStateful()  // source datasets are stateful so that constant folding leaves them alone
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
One element: bytes [0, length) of the file, read at once through tfliquid's read throttle, once the read queue
`read_queue` admits the read (none: ''). A file shorter than `length` is a DataLoss error naming it, raised
before anything is allocated.
)doc");

REGISTER_OP(kRecordDatasetOp)
    .Input("input_dataset: variant")
    .Input("filename: string")
    .Input("group: int64")
    .Input("seed: int64")
    .Input("header_crc32c: int64")
    .Output("handle: variant")
    .Attr(absl::StrCat(kShuffleAttr, ": bool = false"))
    .Attr(absl::StrCat(kWithKeysAttr, ": bool = false"))
    .Attr(absl::StrCat(kWithContextAttr, ": bool = false"))
    .Attr(absl::StrCat(kWithCacheHitsAttr, ": bool = false"))
    .Attr(absl::StrCat(kItemFormatAttr, ": string = 'bytes'"))
    .Attr(absl::StrCat(kItemChannelsAttr, ": int >= 0 = 0"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The items of one record, whose bytes (the whole file, or a prefix of it that holds groups 1..group) the input
dataset yields as its one element: ([cached,] [context,] item, [key,] label), the order in which tf.nest
flattens {"cached", "context", "item", "key", "label"}. The prefix is validated (preamble, header, CRC32C of every group read);
errors are DataLoss errors that start with `filename` (the record's file, which this op does not read) and the
offset. group: 1-based; above the
record's count means all its groups. seed, shuffle: emit the items in a seeded random order instead of stored
order. header_crc32c: the record's identity, its preamble's header CRC32C, as its index lists it (-1: unchecked); a
file whose preamble holds another is a DataLoss error. with_keys: also emit each item's key. with_context: also emit where each item is,
"FILENAME: image KEY at scan group G" (G: the groups read), for the errors of what decodes it. with_cache_hits: the input's element is (hit, bytes) and every item
carries hit as "cached". item_format: what an item is emitted as ('bytes': its parts up to the group, as a
string; other names are registered by the capabilities, see records/item_format.h); item_channels: C of formats
that emit uint8 [H, W, C] pixels. On restore, the record is read again from a new input iterator.
)doc");

REGISTER_OP(kDeclaredCardinalityDatasetOp)
    .Input("input_dataset: variant")
    .Input("cardinality: int64")
    .Output("handle: variant")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's elements, as they are, with `cardinality` as the dataset's cardinality (>= 0, or -1: infinite): what a
dataset of record files knows from its index or manifest (the images of its epochs), where tf.data computes
none. Declared, not asserted as tf.data's AssertCardinalityDataset does: under tf.data service's dynamic sharding
each worker's copy yields only the splits it is given.
)doc");

}  // namespace tfliquid
