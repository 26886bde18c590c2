#include <utility>

#include "absl/container/flat_hash_map.h"
#include "cache/item_codec.h"
#include "cache/policy.h"
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
  explicit MemoryStore(std::unique_ptr<Policy> policy) : policy_(std::move(policy)) {}

  absl::Status Lookup(const ItemKey& key, std::vector<Tensor>* values, bool* found) override {
    tensorflow::mutex_lock lock(mu_);
    auto it = items_.find(key.name);
    *found = it != items_.end();
    if (*found) *values = it->second.values;
    return policy_->Accessed(key, *found);
  }

  absl::Status Admit(const ItemKey& key, const std::vector<Tensor>& values, uint64_t* admitted_bytes) override {
    const uint64_t size = EncodedSize(key.name, values);
    *admitted_bytes = 0;
    std::vector<std::string> victims;
    tensorflow::mutex_lock lock(mu_);
    if (items_.contains(key.name) || !policy_->Admit(key, size, totals_.bytes, &victims)) return absl::OkStatus();
    for (const std::string& victim : victims) Remove(victim);
    items_.emplace(key.name, Entry{values, size});
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

  absl::Status PlanPrefetch(double reads, std::vector<uint64_t>* items) override {
    std::vector<std::string> victims;
    tensorflow::mutex_lock lock(mu_);
    policy_->PlanPrefetch(reads, totals_.bytes, items, &victims);
    for (const std::string& victim : victims) Remove(victim);
    return absl::OkStatus();
  }

 private:
  struct Entry {
    std::vector<Tensor> values;
    uint64_t size;
  };

  void Remove(const std::string& key) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = items_.find(key);
    if (it == items_.end()) return;
    totals_.bytes -= it->second.size;
    totals_.items -= 1;
    items_.erase(it);
  }

  tensorflow::mutex mu_;
  const std::unique_ptr<Policy> policy_ TF_PT_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Entry> items_ TF_GUARDED_BY(mu_);
  Totals totals_ TF_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore(std::unique_ptr<Policy> policy) {
  return std::make_unique<MemoryStore>(std::move(policy));
}

}  // namespace cache
}  // namespace tfliquid
