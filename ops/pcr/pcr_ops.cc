// Registration and shape function of the PCR dataset op (kernel: pcr_dataset_kernel.cc).
#include "pcr/pcr_ops.h"

#include "absl/strings/str_cat.h"
#include "cache/cache_attrs.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kPCRRecordDatasetOp)
    .Input("filename: string")
    .Input("prefix_ends: int64")
    .Input("scan_group: int64")
    .Input(absl::StrCat("scan_group_variable: ", kNumScanGroupVariablesAttr, " * resource"))
    .Input("seed: int64")
    .Input("cache_pass: int64")
    .Input("item: int64")
    .Output("handle: variant")
    .Attr(absl::StrCat(kNumScanGroupVariablesAttr, ": int >= 0 = 0"))
    .Attr(absl::StrCat(kScanGroupVariableTokenAttr, ": int = 0"))
    .Attr(absl::StrCat(kShuffleAttr, ": bool = false"))
    .Attr(absl::StrCat(kWithKeysAttr, ": bool = false"))
    .Attr(absl::StrCat(kWithCacheHitsAttr, ": bool = false"))
    .Attr(absl::StrCat(kRawItemChannelsAttr, ": int >= 0 = 0"))
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()  // source datasets are stateful so that constant folding leaves them alone
    .SetShapeFn([](InferenceContext* c) {
      // prefix_ends (input 1) is a vector, every other input (variable handles included) a scalar.
      for (int i = 0; i < c->num_inputs(); ++i) TF_RETURN_IF_ERROR(InputHasRank(c, i, i == 1 ? 1 : 0));
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Images of one PCR record at a scan group: ([cached,] image, [key,] label), key with_keys, cached (bool: the
record came from the cache, not storage) with_cache_hits. That is the order in which tf.nest flattens
{"cached", "image", "key", "label"}, so Python declares a dict element_spec with no map.
The image is the progressive JPEG cut at the scan group; in a record of whole items (flag bit 0, Liquid's) it is
the item as stored, or, with raw_item_channels C > 0, the Liquid raw item's pixels as uint8 [H, W, C], checked and
copied once from the record (no string in between).
prefix_ends: the record's index entry, padded to the dataset's G scan groups. scan_group: 1-based; above the
record's own count means full fidelity. scan_group_variable: none, or one integer variable whose value (1..G) is
read instead of scan_group when the record is opened, so that assigning it changes the fidelity with no rebuild.
scan_group_variable_token: what Liquid>ScanGroupVariableToken returned for that variable, which is read only
in the process that built the dataset, and only the variable itself: tf.data service ships a copy of its value at
distribute() time, which assignments would not reach, so there (another process, or the copy) this fails.
cache_*: a MinIO cache of record prefixes, keyed by file, scan group and length; cache_pass counts its lookups.
An empty cache_name means no cache. item: the record's item in a seeded order (>= 0), added to its cache key for
the clairvoyant policy, or -1.
)doc");

REGISTER_OP(kScanGroupVariableTokenOp)
    .Input("variable: resource")
    .Output("token: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
Registers a scan group variable in this process and returns its token, the value of the attribute
scan_group_variable_token of Liquid>PCRRecordDataset, which then reads only this variable, in this process.
)doc");

}  // namespace tfliquid
