// Every tfliquid op: its registration and shape function, in one place. Kernels live beside their pure C++
// layers (common/, pcr/, jpeg/). Op names carry the "Liquid>" prefix; Python sees them as liquid_xxx.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ScalarShape;

// The attributes that name a MinIO cache (ops/cache/cache.h, Config); an empty cache_name means none.
#define LIQUID_CACHE_ATTRS                          \
  Attr("cache_name: string = ''")                   \
      .Attr("cache_capacity_bytes: int = 0")        \
      .Attr("cache_directory: string = ''")         \
      .Attr("cache_policy: string = 'minio'")

REGISTER_OP("Liquid>ReadFile")
    .Input("filename: string")
    .Output("contents: string")
    .SetShapeFn(ScalarShape)
    .Doc("Reads a whole file like tf.io.read_file, drawing from the process-wide read throttle.");

REGISTER_OP("Liquid>ReadFileRange")
    .Input("filename: string")
    .Input("offset: int64")
    .Input("length: int64")
    .Output("contents: string")
    .SetShapeFn(ScalarShape)
    .Doc("Reads `length` bytes at `offset` (length < 0: to the end), drawing from the read throttle.");

REGISTER_OP("Liquid>SetReadBandwidth")
    .Input("bytes_per_second: float64")
    .SetIsStateful()
    .SetShapeFn(tensorflow::shape_inference::NoOutputs)
    .Doc("Sets the process-wide read bandwidth of every tfliquid reader; <= 0 removes the limit.");

REGISTER_OP("Liquid>DrawReadBandwidth")
    .Input("num_bytes: int64")
    .SetIsStateful()
    .SetShapeFn(tensorflow::shape_inference::NoOutputs)
    .Doc("Blocks until the read throttle grants num_bytes: puts a reader outside tfliquid on the same budget.");

REGISTER_OP("Liquid>ReadStats")
    .Output("bytes_read: int64")
    .Output("bytes_per_second: float64")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Scalar());
      return absl::OkStatus();
    })
    .Doc("Bytes read by tfliquid readers in this process, and the current bandwidth limit (0 = none).");

REGISTER_OP("Liquid>Crc32c")
    .Input("data: string")
    .Output("crc: int64")
    .SetShapeFn(ScalarShape)
    .Doc("CRC32C (Castagnoli) of a string, as stored in PCR records.");

REGISTER_OP("Liquid>PCRRecordDataset")
    .Input("filename: string")
    .Input("prefix_ends: int64")
    .Input("scan_group: int64")
    .Input("seed: int64")
    .Input("read_bandwidth: float64")
    .Input("cache_pass: int64")
    .Output("handle: variant")
    .Attr("shuffle: bool = false")
    .Attr("with_keys: bool = false")
    .LIQUID_CACHE_ATTRS
    .SetIsStateful()  // source datasets are stateful so that constant folding leaves them alone
    .SetShapeFn(ScalarShape)
    .Doc(R"doc(
Images of one PCR record at a scan group: (image, key, label) with_keys, else (image, label). That is the order in
which tf.nest flattens {"image", "key", "label"}, so Python declares a dict element_spec with no map.
The image is the progressive JPEG cut at the scan group.
prefix_ends: the record's index entry; scan_group: 1-based, above the record's count means full fidelity.
read_bandwidth: >= 0 sets the process-wide read bandwidth (0 = unlimited) when the record is read; < 0 leaves it.
cache_*: a MinIO cache of record prefixes, keyed by file, scan group and length; cache_pass counts its lookups.
)doc");

REGISTER_OP("Liquid>JpegToProgressive")
    .Input("contents: string")
    .Input("source: string")
    .Output("progressive: string")
    .Output("scan_ends: int64")
    .Attr("keep_markers: bool = false")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Makes a JPEG progressive losslessly (baseline: coefficients copied, jpegtran -progressive -optimize semantics;
progressive: kept as is) and returns where each scan's entropy-coded data ends. `source` names the input in errors.
)doc");

REGISTER_OP("Liquid>JpegScanEnds")
    .Input("contents: string")
    .Output("scan_ends: int64")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc("Where each scan's entropy-coded data ends in a JPEG (the PCR scan split).");

REGISTER_OP("Liquid>DecodeL3")
    .Input("contents: string")
    .Output("image: uint8")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->MakeShape({InferenceContext::kUnknownDim, InferenceContext::kUnknownDim,
                                     InferenceContext::kUnknownDim}));
      return absl::OkStatus();
    })
    .Doc("Decodes an L3 image (docs/formats/l3.md) to uint8 [H, W, C].");

REGISTER_OP("Liquid>EncodeL3")
    .Input("image: uint8")
    .Output("contents: string")
    .Attr("profile: string = 'default'")
    .SetShapeFn(ScalarShape)
    .Doc("Encodes uint8 [H, W, C] (C = 1, 3, 4) as L3 with the 'default' or 'paper' profile.");

REGISTER_OP("Liquid>CacheBeginPass")
    .Output("pass: int64")
    .LIQUID_CACHE_ATTRS
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("Starts a pass (an epoch) over a MinIO cache's keys; its id tags the pass's lookups in the stats.");

REGISTER_OP("Liquid>CacheLookup")
    .Input("key: string")
    .Input("pass: int64")
    .Output("hit: bool")
    .Output("values: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .LIQUID_CACHE_ATTRS
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      for (int i = 1; i < c->num_outputs(); ++i) c->set_output(i, c->UnknownShape());
      return absl::OkStatus();
    })
    .Doc("The item cached under key (hit), or empty placeholders of the dtypes (miss).");

REGISTER_OP("Liquid>CacheInsert")
    .Input("key: string")
    .Input("pass: int64")
    .Input("values: T")
    .Output("admitted: bool")
    .Attr("T: list(type) >= 1")
    .LIQUID_CACHE_ATTRS
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("Offers an item to the cache; MinIO admits it while it fits in the budget and never evicts.");

REGISTER_OP("Liquid>CacheStats")
    .Output("json: string")
    .LIQUID_CACHE_ATTRS
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("Opens the cache (if this process has not yet) and returns its totals and per-pass counts as JSON.");

REGISTER_OP("Liquid>CacheRelease")
    .Attr("cache_name: string")
    .SetIsStateful()
    .SetShapeFn(tensorflow::shape_inference::NoOutputs)
    .Doc("Forgets the named cache in this process (its memory is freed when no iterator uses it).");

}  // namespace tfliquid
