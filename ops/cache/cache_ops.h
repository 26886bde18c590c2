// Names of the MinIO cache ops and their own attributes, shared by their registration (cache_ops.cc) and kernels
// (cache_kernels.cc, cache_dataset_kernels.cc). Python calls them liquid_cache_dataset, liquid_cache_pass_dataset,
// ... The attributes that name a cache are cache/cache_attrs.h's.
#ifndef TFLIQUID_OPS_CACHE_CACHE_OPS_H_
#define TFLIQUID_OPS_CACHE_CACHE_OPS_H_

namespace tfliquid {

inline constexpr char kCacheDatasetOp[] = "Liquid>CacheDataset";
inline constexpr char kCachePassDatasetOp[] = "Liquid>CachePassDataset";
inline constexpr char kCacheWithPassDatasetOp[] = "Liquid>CacheWithPassDataset";
inline constexpr char kCachePrefetchDatasetOp[] = "Liquid>CachePrefetchDataset";
inline constexpr char kCacheOpenOp[] = "Liquid>CacheOpen";
inline constexpr char kCacheStatsOp[] = "Liquid>CacheStats";
inline constexpr char kCacheReleaseOp[] = "Liquid>CacheRelease";
inline constexpr char kCacheAdmitOp[] = "Liquid>CacheAdmit";

// CacheDataset's: also emit whether the elements came from the cache, as a bool before each element's tensors.
inline constexpr char kWithHitAttr[] = "with_hit";
// CacheDataset's: the input is a prefetch that CachePrefetchDataset planned: no lookup, its elements are offered
// to the cache as prefetched and not emitted.
inline constexpr char kPrefetchAttr[] = "prefetch";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_CACHE_OPS_H_
