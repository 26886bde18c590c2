// Kernels of the MinIO cache's plain ops: open, statistics, admission, release. The cache's datasets are in
// cache_dataset_kernels.cc.
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

  Config config_;
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

class CacheAdmitOp : public CacheOpKernel {
 public:
  using CacheOpKernel::CacheOpKernel;

  void Compute(OpKernelContext* ctx) override {
    bool admit;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "admit", &admit));
    std::shared_ptr<Cache> cache;
    OP_REQUIRES_OK(ctx, GetCache(&cache));
    cache->SetAdmitting(admit);
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

REGISTER_KERNEL_BUILDER(Name(kCacheOpenOp).Device(tensorflow::DEVICE_CPU), CacheOpenOp);
REGISTER_KERNEL_BUILDER(Name(kCacheStatsOp).Device(tensorflow::DEVICE_CPU), CacheStatsOp);
REGISTER_KERNEL_BUILDER(Name(kCacheAdmitOp).Device(tensorflow::DEVICE_CPU), CacheAdmitOp);
REGISTER_KERNEL_BUILDER(Name(kCacheReleaseOp).Device(tensorflow::DEVICE_CPU), CacheReleaseOp);

}  // namespace
}  // namespace tfliquid
