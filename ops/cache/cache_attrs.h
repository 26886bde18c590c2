// The op attributes that name a MinIO cache, defined once: their names, their registration, reading a Config from
// them in a kernel, and writing a Config back into a serialized dataset graph. Kept apart from cache/cache.h so
// that the cache core needs no TensorFlow kernel headers.
#ifndef TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_
#define TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "cache/cache.h"
#include "common/dataset_kernel.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace tfliquid {
namespace cache {

inline constexpr char kNameAttr[] = "cache_name";  // empty: no cache, for ops where one is optional
inline constexpr char kCapacityBytesAttr[] = "cache_capacity_bytes";
inline constexpr char kDirectoryAttr[] = "cache_directory";
inline constexpr char kPolicyAttr[] = "cache_policy";
inline constexpr char kOrderAttr[] = "cache_order";  // the keys' seeded order (order/seeded_order.h); '' for none

// The five attributes' OpDef specs, in the order above: "cache_name: string = ''", ..., and
// "cache_policy: {'minio', 'lru'} = 'minio'": the policy registry's names (cache/policy.h), its first the default.
std::array<std::string, 5> AttrSpecs();

// Adds the five attributes to an op's registration, in its builder chain:
//   REGISTER_OP(kOp).Input(...).TFLIQUID_CACHE_ATTRS().SetShapeFn(...)
// A macro because that chain of member calls cannot pass through a function.
#define TFLIQUID_CACHE_ATTRS()                 \
  Attr(::tfliquid::cache::AttrSpecs()[0])      \
      .Attr(::tfliquid::cache::AttrSpecs()[1]) \
      .Attr(::tfliquid::cache::AttrSpecs()[2]) \
      .Attr(::tfliquid::cache::AttrSpecs()[3]) \
      .Attr(::tfliquid::cache::AttrSpecs()[4])

// Reads the five attributes of the kernel's op; validated.
absl::Status ConfigFromAttrs(tensorflow::OpKernelConstruction* ctx, Config* config);

// Appends the five attributes of `config` to those of a node being serialized (DatasetBase::AsGraphDefInternal).
void AppendAttrs(const Config& config, Attrs* attrs);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_CACHE_ATTRS_H_
