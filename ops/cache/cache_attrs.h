// The kernel side of a MinIO cache's configuration: the op attributes that name a cache, read into a Config.
// Kept apart from cache/cache.h so that the cache core needs no TensorFlow kernel headers.
#ifndef TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_
#define TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_

#include "cache/cache.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace tfliquid {
namespace cache {

// From the attributes cache_name, cache_capacity_bytes, cache_directory and cache_policy; validated.
absl::Status ConfigFromAttrs(tensorflow::OpKernelConstruction* ctx, Config* config);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_
