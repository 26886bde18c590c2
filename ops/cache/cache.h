// A named MinIO cache: a Store plus per-pass hit and miss counts. Caches live in a process-wide registry, so
// every dataset, iterator and op that names the same cache shares it, across the iterator re-creation Keras
// does each epoch and across the tasks a tf.data service worker runs (each of which builds its graph anew).
#ifndef TFLIQUID_OPS_CACHE_CACHE_H_
#define TFLIQUID_OPS_CACHE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/store.h"
#include "tensorflow/core/platform/mutex.h"
#include "tensorflow/core/platform/status.h"

namespace tfliquid {
namespace cache {

// What a cache is: every op that uses one carries these as attributes (cache/cache_attrs.h).
struct Config {
  std::string name;
  int64_t capacity_bytes = 0;
  std::string directory;  // empty: this process's memory
  std::string policy;     // a name in the policy registry (cache/policy.h)
  std::string order;      // the keys' seeded order, "num_items,seed,num_workers,worker_index"; empty: none

  // InvalidArgument unless the capacity is >= 0, the policy is registered, and the order is valid and given when
  // the policy needs one.
  absl::Status Validate() const;
  bool operator==(const Config& other) const {
    return name == other.name && capacity_bytes == other.capacity_bytes && directory == other.directory &&
           policy == other.policy && order == other.order;
  }
};

struct PassStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t admitted_items = 0;
  uint64_t admitted_bytes = 0;
  uint64_t uncacheable = 0;       // misses whose key no item can hold (IsStorableKey): fetched every time
  uint64_t prefetch_reads = 0;    // items fetched ahead of their reads (PlanPrefetch), each a storage read
  uint64_t prefetched_items = 0;  // of those, the ones admitted (also counted in admitted_items)
  uint64_t closed = 0;            // items offered while this process's admission was closed (SetAdmitting)
};

class Cache {
 public:
  // The registered cache named config.name, created on first use. Another config under the same name is an
  // InvalidArgument error; a released name a FailedPrecondition error, until Open opens it again.
  static absl::Status Get(const Config& config, std::shared_ptr<Cache>* cache);
  // As Get, and a released name is opened again, as a new cache (what the MinIOCache constructor does).
  static absl::Status Open(const Config& config, std::shared_ptr<Cache>* cache);
  // Forgets the cache: memory is freed once the iterators still using it are gone, and their next Get fails.
  // Directories stay on disk.
  static void Release(const std::string& name);

  // A new pass over the keys (an epoch, when the keys are a dataset's): its id for Lookup and Insert. `epoch`:
  // the epoch of the cache's seeded order that the pass reads, or -1 (not known, or no order).
  int64_t BeginPass(int64_t epoch);
  // Pass `pass` (an id from a checkpoint, of this process or another) reads `epoch`, as when it began.
  void RestorePass(int64_t pass, int64_t epoch);
  // The item named `name` (`item`: its number in the cache's order, or -1), looked up in pass `pass`.
  absl::Status Lookup(const std::string& name, int64_t item, int64_t pass, std::vector<tensorflow::Tensor>* values,
                      bool* hit);
  // `prefetched`: fetched ahead of its read, as PlanPrefetch named it (counted as a prefetch read).
  absl::Status Insert(const std::string& name, int64_t item, int64_t pass,
                      const std::vector<tensorflow::Tensor>& values, bool prefetched, bool* admitted);
  // Opens or closes admission in this process: while closed, Insert admits nothing (the items held still hit). A
  // cache opens admitting. What an input tuner uses to start a cache on trial in the middle of a pass.
  void SetAdmitting(bool admitting) { admitting_.store(admitting, std::memory_order_relaxed); }
  // The upcoming items of the cache's seeded order to fetch now with `reads` background reads (Lobster's
  // prefetch; Policy::PlanPrefetch): none unless the policy knows the future.
  absl::Status PlanPrefetch(double reads, std::vector<uint64_t>* items) { return store_->PlanPrefetch(reads, items); }
  // {"name", "policy", "directory", "capacity_bytes", "bytes", "items", "passes": [{hits, misses, ...}]}
  absl::Status StatsJson(std::string* json);

 private:
  Cache(Config config, std::unique_ptr<Store> store) : config_(std::move(config)), store_(std::move(store)) {}
  static absl::Status GetOrOpen(const Config& config, bool reopen_released, std::shared_ptr<Cache>* cache);
  struct Pass {
    PassStats stats;
    int64_t epoch = -1;
  };
  Pass& PassLocked(int64_t pass) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Config config_;
  const std::unique_ptr<Store> store_;
  tensorflow::mutex mu_;
  std::vector<Pass> passes_ TF_GUARDED_BY(mu_);
  std::atomic<bool> admitting_{true};
};

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_CACHE_H_
