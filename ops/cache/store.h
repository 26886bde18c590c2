// Where a cache keeps its items: in this process's memory, or in a directory that several processes share.
// What it admits and evicts, its Policy decides (cache/policy.h); the Cache above it counts hits and misses.
#ifndef TFLIQUID_OPS_CACHE_STORE_H_
#define TFLIQUID_OPS_CACHE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/policy.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/platform/status.h"

namespace tfliquid {
namespace cache {

struct Totals {
  uint64_t bytes = 0;  // encoded item sizes (docs/formats/cache.md), reservations included
  uint64_t items = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  // *found and the item's values when `key` is stored and intact; a damaged item is a miss, not an error.
  // The policy sees every lookup.
  virtual absl::Status Lookup(const ItemKey& key, std::vector<tensorflow::Tensor>* values, bool* found) = 0;
  // Stores the item if the policy admits it: *admitted_bytes is its size, or 0 when it was not admitted.
  virtual absl::Status Admit(const ItemKey& key, const std::vector<tensorflow::Tensor>& values,
                             uint64_t* admitted_bytes) = 0;
  virtual absl::Status GetTotals(Totals* totals) = 0;
  // The upcoming items the policy would prefetch with `reads` background reads (Policy::PlanPrefetch), after
  // removing the stored items it displaces for them.
  virtual absl::Status PlanPrefetch(double reads, std::vector<uint64_t>* items) = 0;
  // Makes the store usable again where it can (a directory deleted while in use is recreated, empty): run when a
  // cache already open is opened again. Every other call checks the same before it changes the store.
  virtual absl::Status Restore() { return absl::OkStatus(); }
};

// Items in this process's memory, admitted and evicted as `policy` decides.
std::unique_ptr<Store> NewMemoryStore(std::unique_ptr<Policy> policy);

// Items in a directory shared by processes on one machine, with one budget (docs/formats/cache.md), admitted as
// `policy` (registered as `info`) decides. Processes share a directory only under policies that never evict; an
// evicting policy's process must hold the directory alone (one worker's cache on its own disk), and either way a
// conflict is a FailedPrecondition error naming the directory.
absl::Status NewDirectoryStore(const std::string& directory, uint64_t capacity_bytes, const PolicyInfo& info,
                               std::unique_ptr<Policy> policy, std::unique_ptr<Store>* store);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_STORE_H_
