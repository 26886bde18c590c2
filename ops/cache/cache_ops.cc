// Registration and shape functions of the MinIO cache ops (kernels: cache_kernels.cc).
#include "cache/cache_ops.h"

#include "absl/strings/str_cat.h"
#include "cache/cache_attrs.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kCacheBeginPassOp)
    .Output("pass: int64")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Starts a pass (an epoch) over a MinIO cache's keys; its id tags the pass's lookups in the stats.");

REGISTER_OP(kCacheLookupOp)
    .Input("key: string")
    .Input("pass: int64")
    .Output("hit: bool")
    .Output(absl::StrCat("values: ", kDtypesAttr))
    .Attr(absl::StrCat(kDtypesAttr, ": list(type) >= 1"))
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Scalar());
      for (int i = 1; i < c->num_outputs(); ++i) c->set_output(i, c->UnknownShape());
      return absl::OkStatus();
    })
    .Doc("The item cached under key (hit), or empty placeholders of the dtypes (miss).");

REGISTER_OP(kCacheInsertOp)
    .Input("key: string")
    .Input("pass: int64")
    .Input(absl::StrCat("values: ", kDtypesAttr))
    .Output("admitted: bool")
    .Attr(absl::StrCat(kDtypesAttr, ": list(type) >= 1"))
    .Attr(absl::StrCat(kPrefetchedAttr, ": bool = false"))
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(InputHasRank(c, 0, 0));  // key
      TF_RETURN_IF_ERROR(InputHasRank(c, 1, 0));  // pass; the values have any shape
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc("Offers an item to the cache, whose policy admits it or not (MinIO: while it fits, never evicting).");

REGISTER_OP(kCachePlanPrefetchOp)
    .Input("reads: double")
    .Output("items: int64")
    .TFLIQUID_CACHE_ATTRS()
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->Vector(c->UnknownDim()));
      return absl::OkStatus();
    })
    .Doc(
        "Lobster's prefetch: the upcoming items of the cache's seeded order to fetch now and Insert with "
        "prefetched=true, bought with `reads` more background reads; room is made for them at once. Empty unless "
        "the policy knows the future (clairvoyant).");

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

REGISTER_OP(kCacheReleaseOp)
    .Attr(absl::StrCat(cache::kNameAttr, ": string"))
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Forgets the named cache in this process (its memory is freed when no iterator uses it); the other ops "
        "refuse the name until Liquid>CacheOpen opens it again.");

}  // namespace tfliquid
