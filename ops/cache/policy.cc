#include "cache/policy.h"

#include <algorithm>
#include <list>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace tfliquid {
namespace cache {
namespace {

// CoorDL's MinIO: admits items while they fit and never evicts, so that with the keys reshuffled every epoch,
// every epoch after the first hits exactly what was cached.
class MinioPolicy : public Policy {
 public:
  explicit MinioPolicy(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  void Accessed(const std::string&, bool) override {}

  bool Admit(const std::string&, uint64_t size_bytes, uint64_t used_bytes, std::vector<std::string>*) override {
    return used_bytes + size_bytes <= capacity_;
  }

 private:
  const uint64_t capacity_;
};

// The page-cache-like baseline MinIO is compared with: admits every item that fits in the whole budget,
// evicting the least recently used ones.
class LruPolicy : public Policy {
 public:
  explicit LruPolicy(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  void Accessed(const std::string& key, bool hit) override {
    if (!hit) return;
    auto it = items_.find(key);
    if (it != items_.end()) recency_.splice(recency_.begin(), recency_, it->second.recency);
  }

  bool Admit(const std::string& key, uint64_t size_bytes, uint64_t used_bytes,
             std::vector<std::string>* victims) override {
    if (size_bytes > capacity_) return false;
    while (used_bytes + size_bytes > capacity_ && !recency_.empty()) {
      auto it = items_.find(recency_.back());
      used_bytes -= std::min(used_bytes, it->second.size);
      victims->push_back(std::move(recency_.back()));
      items_.erase(it);
      recency_.pop_back();
    }
    recency_.push_front(key);
    items_.emplace(key, Entry{size_bytes, recency_.begin()});
    return true;
  }

 private:
  struct Entry {
    uint64_t size;
    std::list<std::string>::iterator recency;
  };

  const uint64_t capacity_;
  absl::flat_hash_map<std::string, Entry> items_;  // what this policy admitted and has not evicted
  std::list<std::string> recency_;                 // the same keys, most recently used first
};

template <typename P>
std::unique_ptr<Policy> Make(uint64_t capacity_bytes) {
  return std::make_unique<P>(capacity_bytes);
}

// Constant-initialized, so op registrations may read it during static initialization.
constexpr PolicyInfo kPolicies[] = {
    {"minio", &Make<MinioPolicy>, /*evicts=*/false},
    {"lru", &Make<LruPolicy>, /*evicts=*/true},
};

}  // namespace

absl::Span<const PolicyInfo> Policies() { return kPolicies; }

const PolicyInfo* FindPolicy(absl::string_view name) {
  for (const PolicyInfo& policy : kPolicies) {
    if (name == policy.name) return &policy;
  }
  return nullptr;
}

std::string QuotedPolicyNames(bool with_evicting) {
  std::string names;
  for (const PolicyInfo& policy : kPolicies) {
    if (with_evicting || !policy.evicts) absl::StrAppend(&names, names.empty() ? "'" : ", '", policy.name, "'");
  }
  return names;
}

}  // namespace cache
}  // namespace tfliquid
