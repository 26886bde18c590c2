// Names of the MinIO cache ops and their own attributes, shared by their registration (cache_ops.cc) and kernels
// (cache_kernels.cc). Python calls them liquid_cache_begin_pass, liquid_cache_lookup, ... The attributes that
// name a cache are cache/cache_attrs.h's.
#ifndef TFLIQUID_OPS_CACHE_CACHE_OPS_H_
#define TFLIQUID_OPS_CACHE_CACHE_OPS_H_

namespace tfliquid {

inline constexpr char kCacheBeginPassOp[] = "Liquid>CacheBeginPass";
inline constexpr char kCacheLookupOp[] = "Liquid>CacheLookup";
inline constexpr char kCacheInsertOp[] = "Liquid>CacheInsert";
inline constexpr char kCacheOpenOp[] = "Liquid>CacheOpen";
inline constexpr char kCacheStatsOp[] = "Liquid>CacheStats";
inline constexpr char kCacheReleaseOp[] = "Liquid>CacheRelease";
inline constexpr char kCachePlanPrefetchOp[] = "Liquid>CachePlanPrefetch";

// The dtypes of an item's tensors: Lookup's outputs, Insert's inputs.
inline constexpr char kDtypesAttr[] = "dtypes";
// Insert's: the item was fetched ahead of its read, as Liquid>CachePlanPrefetch named it.
inline constexpr char kPrefetchedAttr[] = "prefetched";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_CACHE_OPS_H_
