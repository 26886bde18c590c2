// What a cache admits and what it evicts, apart from where its bytes live (the Store, cache/store.h). A store
// holds one Policy and calls it under a lock of its own, so a policy needs no locking of its own.
// Pure C++: keys and sizes only.
#ifndef TFLIQUID_OPS_CACHE_POLICY_H_
#define TFLIQUID_OPS_CACHE_POLICY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "order/seeded_order.h"

namespace tfliquid {
namespace cache {

// An item as a store and its policy see it: `name` identifies its bytes (what a hit returns, what the store
// keeps it under); `item` is its number in the cache's seeded order (-1: none) and `epoch` the epoch of that order
// the access belongs to (-1: not known), by which a policy that knows the future ranks it.
struct ItemKey {
  std::string name;
  int64_t item = -1;
  int64_t epoch = -1;
};

class Policy {
 public:
  virtual ~Policy() = default;

  // Every lookup, in order, hit or miss: policies that rank the items (by recency, by next use) follow the
  // accesses here. An error is a key the policy cannot rank (the clairvoyant policy's keys are its order's items).
  virtual absl::Status Accessed(const ItemKey& key, bool hit) = 0;

  // Whether to store `key`, an item of `size_bytes` that the store does not hold, while the store holds
  // `used_bytes`. To make room, the policy may name stored keys in *victims, which the store removes before
  // it stores `key`; it admits only what then fits in its capacity.
  virtual bool Admit(const ItemKey& key, uint64_t size_bytes, uint64_t used_bytes,
                     std::vector<std::string>* victims) = 0;

  // An item the store held before this policy began (a directory that a restarted process opens again), under
  // `name`, of `size_bytes`: the policy may rank it from its first access, and evict it. Policies that never evict
  // need not know it.
  virtual void Held(const std::string& name, uint64_t size_bytes) {}

  // Prefetch (Lobster): after a read, `reads` more background reads may be spent on the upcoming items of the
  // policy's order that it would keep, soonest first. The policy names them in *items (their names are
  // "int64:ITEM", as tfliquid.minio_cache names integer keys), treats them as stored from now on (their room made, by
  // naming stored keys in *victims, which the store removes), and admits each when it is offered. Policies that do not
  // know the future name none.
  virtual void PlanPrefetch(double reads, uint64_t used_bytes, std::vector<uint64_t>* items,
                            std::vector<std::string>* victims) {}
};

// The registry of policies: the names the cache_policy attribute accepts, in this order, the first the default.
struct PolicyInfo {
  const char* name;
  // `order`: the worker's seeded epoch order (the cache_order attribute), nullptr when none was given.
  std::unique_ptr<Policy> (*make)(uint64_t capacity_bytes, const order::SeededOrder* order);
  // Whether it needs the seeded order of the keys (a cache_order attribute).
  bool needs_order;
  // Whether it ever names victims. A directory store runs such a policy only for a process that holds the
  // directory alone: processes sharing it would each rank the shared items by their own accesses.
  bool evicts;
};

absl::Span<const PolicyInfo> Policies();

// The registered policy called `name`, or nullptr.
const PolicyInfo* FindPolicy(absl::string_view name);

// The registered names, quoted and separated by commas ("'minio', 'lru'"); only those that never evict unless
// `with_evicting`.
std::string QuotedPolicyNames(bool with_evicting);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_POLICY_H_
