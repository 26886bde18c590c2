// Registration and shape functions of the MinIO cache ops (kernels: cache_dataset_kernels.cc, cache_kernels.cc).
#include "cache/cache_ops.h"

#include "absl/strings/str_cat.h"
#include "cache/cache_attrs.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

REGISTER_OP(kCacheDatasetOp)
    .Input("input_dataset: variant")
    .Input("key: string")
    .Input("item: int64")
    .Input("pass: int64")
    .Output("handle: variant")
    .Attr(absl::StrCat(kWithHitAttr, ": bool = false"))
    .Attr(absl::StrCat(kPrefetchAttr, ": bool = false"))
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's elements, cached as one item under `key`, as tf.data's CacheDataset caches its input: a hit yields
the cached elements and never iterates the input (so the input's reads are not made); a miss yields the input's
elements and, once the input ends, offers them all to the cache, whose policy admits them or not (MinIO: while
they fit, never evicting). item: the item's number in the cache's seeded order (a clairvoyant policy ranks it by
its next use), or -1. pass: the id Liquid>CachePassDataset gave the pass (epoch) that reads it, in whose
statistics the lookup counts. with_hit: a bool before each element's tensors says whether it came from the
cache. prefetch: the input fetches an item that Liquid>CachePrefetchDataset planned; it is not looked up, its
elements go to the cache as a prefetch and none is emitted. The cache's contents never change what is emitted
(a key must always name the same elements), so checkpoints save only the position.
)doc");

REGISTER_OP(kCachePassDatasetOp)
    .Input("epoch: int64")
    .Output("handle: variant")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()  // source datasets are stateful so that constant folding leaves them alone
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
One element, the int64 id of a new pass over the cache's items (an epoch), begun when it is read: each iteration
of a dataset that starts with it counts its lookups apart. epoch: the epoch of the cache's seeded order that the
pass reads (the clairvoyant policy places every read in it), or -1.
)doc");

REGISTER_OP(kCacheWithPassDatasetOp)
    .Input("input_dataset: variant")
    .Input("epoch: int64")
    .Output("handle: variant")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
The input's elements, each preceded by the int64 id of a pass over the cache's items (an epoch), begun when the
iterator's first element is read: each iteration counts its lookups apart, as with Liquid>CachePassDataset. Being
unary, it lets tf.data service split its input (dynamic sharding): each worker's iterator begins a pass of its own
cache. epoch: as Liquid>CachePassDataset's. A checkpoint keeps the pass id.
)doc");

REGISTER_OP(kCachePrefetchDatasetOp)
    .Input("reads: double")
    .Output("handle: variant")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
Lobster's prefetch: the int64 items of the cache's seeded order to fetch now (each read through
Liquid>CacheDataset with prefetch=true), bought with `reads` more background reads, planned when first read;
room is made for them at once. Empty unless the policy knows the future (clairvoyant).
)doc");

REGISTER_OP(kCacheOpenOp)
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Opens the cache in this process (a released name as a new, empty cache); checks its attributes against "
        "those of a cache open under the same name.");

REGISTER_OP(kCacheStatsOp)
    .Output("json: string")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("The cache's totals and per-pass counts as JSON.");

REGISTER_OP(kCacheAdmitOp)
    .Input("admit: bool")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Opens (admit true) or closes this process's admission to the cache: while closed, misses are fetched and "
        "not admitted, and the items held still hit. A cache opens admitting.");

REGISTER_OP(kCacheReleaseOp)
    .Attr(absl::StrCat(cache::kNameAttr, ": string"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Forgets the named cache in this process (its memory is freed when no iterator uses it); the other ops "
        "refuse the name until Liquid>CacheOpen opens it again.");

}  // namespace tfliquid
