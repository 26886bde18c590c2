#include <list>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "cache/item_codec.h"
#include "cache/store.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace cache {
namespace {

using tensorflow::Tensor;

// Hits hand out the stored Tensors themselves: TensorFlow buffers are reference counted and immutable once
// produced, so a hit costs no copy.
class MemoryStore : public Store {
 public:
  MemoryStore(uint64_t capacity_bytes, bool evict_lru) : capacity_(capacity_bytes), evict_lru_(evict_lru) {}

  absl::Status Lookup(const std::string& key, std::vector<Tensor>* values, bool* found) override {
    tensorflow::mutex_lock lock(mu_);
    auto it = items_.find(key);
    *found = it != items_.end();
    if (!*found) return absl::OkStatus();
    *values = it->second.values;
    if (evict_lru_) recency_.splice(recency_.begin(), recency_, it->second.recency);
    return absl::OkStatus();
  }

  absl::Status Admit(const std::string& key, const std::vector<Tensor>& values, uint64_t* admitted_bytes) override {
    const uint64_t size = EncodedSize(key, values);
    *admitted_bytes = 0;
    tensorflow::mutex_lock lock(mu_);
    if (size > capacity_ || items_.contains(key)) return absl::OkStatus();
    if (evict_lru_) {
      while (totals_.bytes + size > capacity_) EvictLeastRecent();
      recency_.push_front(key);
    } else if (totals_.bytes + size > capacity_) {
      return absl::OkStatus();  // full: MinIO never evicts
    }
    items_.emplace(key, Entry{values, size, recency_.begin()});
    totals_.bytes += size;
    totals_.items += 1;
    *admitted_bytes = size;
    return absl::OkStatus();
  }

  absl::Status GetTotals(Totals* totals) override {
    tensorflow::mutex_lock lock(mu_);
    *totals = totals_;
    return absl::OkStatus();
  }

 private:
  struct Entry {
    std::vector<Tensor> values;
    uint64_t size;
    std::list<std::string>::iterator recency;  // valid only with evict_lru
  };

  void EvictLeastRecent() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = items_.find(recency_.back());
    totals_.bytes -= it->second.size;
    totals_.items -= 1;
    items_.erase(it);
    recency_.pop_back();
  }

  const uint64_t capacity_;
  const bool evict_lru_;
  tensorflow::mutex mu_;
  absl::flat_hash_map<std::string, Entry> items_ TF_GUARDED_BY(mu_);
  std::list<std::string> recency_ TF_GUARDED_BY(mu_);  // most recent first
  Totals totals_ TF_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore(uint64_t capacity_bytes, bool evict_lru) {
  return std::make_unique<MemoryStore>(capacity_bytes, evict_lru);
}

}  // namespace cache
}  // namespace tfliquid
