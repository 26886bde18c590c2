// Kernels of the MinIO cache ops. Python composes them into the minio_cache transform
// (tfliquid/cache/transform.py): BeginPass once per pass over the keys, then per key Lookup and, on a miss,
// fetch and Insert.
#include <cmath>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/cache_attrs.h"
#include "cache/cache_ops.h"
#include "common/input_checks.h"
#include "common/kernel.h"

namespace tfliquid {
namespace {

using cache::Cache;
using cache::Config;

// A kernel bound to one cache, looked up by name on every call: after a Release, the name is refused until
// Liquid>CacheOpen opens it again, and then means a new cache. A name this process never opened is created
// (tf.data service workers run the pipeline's ops without the MinIOCache constructor).
class CacheOpKernel : public OpKernel {
 public:
  explicit CacheOpKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, cache::ConfigFromAttrs(ctx, &config_));
  }

 protected:
  absl::Status GetCache(std::shared_ptr<Cache>* cache) { return Cache::Get(config_, cache); }

  // The inputs `key` and `pass` of Lookup and Insert.
  static absl::Status KeyAndPass(OpKernelContext* ctx, std::string* key, int64_t* pass) {
    const tstring* key_input;
    TF_RETURN_IF_ERROR(ScalarInput(ctx, "key", &key_input));
    *key = std::string(*key_input);
    return ScalarInput(ctx, "pass", pass);
  }

  Config config_;
};

class CacheBeginPassOp : public CacheOpKernel {
 public:
  using CacheOpKernel::CacheOpKernel;

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    Tensor* pass;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &pass));
    pass->scalar<int64_t>()() = cache->BeginPass();
  }
};

class CacheLookupOp : public CacheOpKernel {
 public:
  explicit CacheLookupOp(OpKernelConstruction* ctx) : CacheOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kDtypesAttr, &dtypes_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::string key;
    int64_t pass;
    OP_REQUIRES_OK(ctx, KeyAndPass(ctx, &key, &pass));
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    std::vector<Tensor> values;
    bool hit;
    OP_REQUIRES_OK(ctx, cache->Lookup(key, pass, &values, &hit));
    Tensor* hit_out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &hit_out));
    hit_out->scalar<bool>()() = hit;
    if (hit) {
      OP_REQUIRES(ctx, values.size() == dtypes_.size(),
                  tensorflow::errors::InvalidArgument("MinIO cache '", config_.name, "': the item of key '", key,
                                                      "' holds ", values.size(), " tensors but fetch returns ",
                                                      dtypes_.size(), " (is the cache shared by different fetches?)"));
    }
    for (size_t i = 0; i < dtypes_.size(); ++i) {
      if (!hit) {  // a miss yields empty placeholders; the transform's cond uses fetch's outputs instead
        Tensor* empty;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(1 + i, TensorShape({0}), &empty));
        continue;
      }
      OP_REQUIRES(ctx, values[i].dtype() == dtypes_[i],
                  tensorflow::errors::InvalidArgument(
                      "MinIO cache '", config_.name, "': the item of key '", key, "' has a ",
                      tensorflow::DataTypeString(values[i].dtype()), " tensor where fetch returns ",
                      tensorflow::DataTypeString(dtypes_[i]), " (is the cache shared by different fetches?)"));
      ctx->set_output(1 + i, values[i]);
    }
  }

 private:
  tensorflow::DataTypeVector dtypes_;
};

class CacheInsertOp : public CacheOpKernel {
 public:
  explicit CacheInsertOp(OpKernelConstruction* ctx) : CacheOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kPrefetchedAttr, &prefetched_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::string key;
    int64_t pass;
    OP_REQUIRES_OK(ctx, KeyAndPass(ctx, &key, &pass));
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    tensorflow::OpInputList inputs;
    OP_REQUIRES_OK(ctx, ctx->input_list("values", &inputs));
    std::vector<Tensor> values(inputs.begin(), inputs.end());
    bool admitted;
    OP_REQUIRES_OK(ctx, cache->Insert(key, pass, values, prefetched_, &admitted));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<bool>()() = admitted;
  }

 private:
  bool prefetched_;
};

class CachePlanPrefetchOp : public CacheOpKernel {
 public:
  using CacheOpKernel::CacheOpKernel;

  void Compute(OpKernelContext* ctx) override {
    double reads;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "reads", &reads));
    OP_REQUIRES(
        ctx, std::isfinite(reads) && reads >= 0,
        tensorflow::errors::InvalidArgument(kCachePlanPrefetchOp, ": reads must be finite and >= 0, got ", reads));
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    std::vector<uint64_t> items;
    OP_REQUIRES_OK(ctx, cache->PlanPrefetch(reads, &items));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(items.size())}), &out));
    for (size_t i = 0; i < items.size(); ++i) out->vec<int64_t>()(i) = static_cast<int64_t>(items[i]);
  }
};

class CacheOpenOp : public CacheOpKernel {
 public:
  using CacheOpKernel::CacheOpKernel;

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, Cache::Open(config_, &cache));
  }
};

class CacheStatsOp : public CacheOpKernel {
 public:
  using CacheOpKernel::CacheOpKernel;

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    std::string json;
    OP_REQUIRES_OK(ctx, cache->StatsJson(&json));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<tstring>()() = json;
  }
};

class CacheReleaseOp : public OpKernel {
 public:
  explicit CacheReleaseOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(cache::kNameAttr, &name_));
  }

  void Compute(OpKernelContext*) override { Cache::Release(name_); }

 private:
  std::string name_;
};

REGISTER_KERNEL_BUILDER(Name(kCacheBeginPassOp).Device(tensorflow::DEVICE_CPU), CacheBeginPassOp);
REGISTER_KERNEL_BUILDER(Name(kCacheLookupOp).Device(tensorflow::DEVICE_CPU), CacheLookupOp);
REGISTER_KERNEL_BUILDER(Name(kCacheInsertOp).Device(tensorflow::DEVICE_CPU), CacheInsertOp);
REGISTER_KERNEL_BUILDER(Name(kCachePlanPrefetchOp).Device(tensorflow::DEVICE_CPU), CachePlanPrefetchOp);
REGISTER_KERNEL_BUILDER(Name(kCacheOpenOp).Device(tensorflow::DEVICE_CPU), CacheOpenOp);
REGISTER_KERNEL_BUILDER(Name(kCacheStatsOp).Device(tensorflow::DEVICE_CPU), CacheStatsOp);
REGISTER_KERNEL_BUILDER(Name(kCacheReleaseOp).Device(tensorflow::DEVICE_CPU), CacheReleaseOp);

}  // namespace
}  // namespace tfliquid
