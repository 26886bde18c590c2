// Where a cache keeps its items: in this process's memory, or in a directory that several processes share.
// A store decides admission against its byte budget; the Cache above it counts hits and misses.
#ifndef TFLIQUID_OPS_CACHE_STORE_H_
#define TFLIQUID_OPS_CACHE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  virtual absl::Status Lookup(const std::string& key, std::vector<tensorflow::Tensor>* values, bool* found) = 0;
  // Stores the item if the policy admits it: *admitted_bytes is its size, or 0 when it was not admitted.
  virtual absl::Status Admit(const std::string& key, const std::vector<tensorflow::Tensor>& values,
                             uint64_t* admitted_bytes) = 0;
  virtual absl::Status GetTotals(Totals* totals) = 0;
};

// MinIO: admits items while they fit and never evicts. With `evict_lru`, the page-cache-like baseline: every
// item that fits in the whole budget is admitted, evicting the least recently used ones.
std::unique_ptr<Store> NewMemoryStore(uint64_t capacity_bytes, bool evict_lru);

// MinIO over a directory shared by processes on one machine, with one budget (docs/formats/cache.md).
absl::Status NewDirectoryStore(const std::string& directory, uint64_t capacity_bytes, std::unique_ptr<Store>* store);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_STORE_H_
