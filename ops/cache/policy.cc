#include "cache/policy.h"

#include <algorithm>
#include <iterator>
#include <list>
#include <map>
#include <set>
#include <utility>

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

  absl::Status Accessed(const ItemKey&, bool) override { return absl::OkStatus(); }

  bool Admit(const ItemKey&, uint64_t size_bytes, uint64_t used_bytes, std::vector<std::string>*) override {
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

  absl::Status Accessed(const ItemKey& key, bool hit) override {
    auto it = items_.find(key.name);
    if (it == items_.end()) return absl::OkStatus();
    if (hit) {
      recency_.splice(recency_.begin(), recency_, it->second.recency);
    } else {  // the store lost it (a failed write, a damaged file, a deleted directory): no longer ours to rank
      recency_.erase(it->second.recency);
      items_.erase(it);
    }
    return absl::OkStatus();
  }

  // Least recently used of all: nothing is known of when it was used.
  void Held(const std::string& name, uint64_t size_bytes) override {
    recency_.push_back(name);
    items_.emplace(name, Entry{size_bytes, std::prev(recency_.end())});
  }

  bool Admit(const ItemKey& key, uint64_t size_bytes, uint64_t used_bytes, std::vector<std::string>* victims) override {
    if (size_bytes > capacity_) return false;
    while (used_bytes + size_bytes > capacity_ && !recency_.empty()) {
      auto it = items_.find(recency_.back());
      used_bytes -= std::min(used_bytes, it->second.size);
      victims->push_back(std::move(recency_.back()));
      items_.erase(it);
      recency_.pop_back();
    }
    recency_.push_front(key.name);
    items_.emplace(key.name, Entry{size_bytes, recency_.begin()});
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

// Belady's rule with bypass on the worker's known future (Lobster, NoPFS): the keys are the items of a seeded
// epoch order (docs/formats/seeded-order.md), so every item's next use by this worker is known. On a miss, an
// item is admitted only if it is needed sooner than the items it would displace, the ones needed farthest ahead,
// which it evicts. With one worker reading every item once per epoch this keeps what MinIO keeps; with several,
// each reading a reshuffled slice, it approaches the offline optimum (tfliquid.cache.simulation's twin).
class ClairvoyantPolicy : public Policy {
 public:
  ClairvoyantPolicy(uint64_t capacity_bytes, const order::SeededOrder& order)
      : capacity_(capacity_bytes), order_(order) {}

  absl::Status Accessed(const ItemKey& key, bool hit) override {
    uint64_t item, next_use;
    absl::Status status = ItemOf(key, &item);
    if (status.ok()) status = NextUseAfterThisRead(item, key.epoch, &next_use);
    if (!status.ok()) return status;
    if (auto held = held_.find(key.name); held != held_.end()) {
      // Held before this policy began: ranked from its first hit on, as if admitted before.
      if (hit && !cached_.contains(item)) {
        cached_[item] = Entry{next_use, held->second, key.name};
        by_next_use_.insert({next_use, item});
      }
      held_.erase(held);
    }
    auto it = cached_.find(item);
    if (it != cached_.end()) {
      by_next_use_.erase({it->second.next_use, item});
      if (hit) {
        it->second.next_use = next_use;
        by_next_use_.insert({next_use, item});
      } else {
        // The store lost it (a failed write, a damaged file), or its prefetch is still being read: no longer
        // ours to rank; the demand read's fetch is offered instead.
        Unplan(item);
        cached_.erase(it);
      }
    }
    if (!hit) pending_[item] = next_use;
    return absl::OkStatus();
  }

  bool Admit(const ItemKey& key, uint64_t size_bytes, uint64_t used_bytes, std::vector<std::string>* victims) override {
    uint64_t item;
    if (!ItemOf(key, &item).ok()) return false;
    uint64_t next_use;
    if (planned_.contains(item)) {  // a prefetch arriving: its room was made when planned, for an estimated size
      next_use = cached_[item].next_use;
      by_next_use_.erase({next_use, item});
      cached_.erase(item);
      Unplan(item);
    } else {
      auto pending = pending_.find(item);
      if (pending == pending_.end()) return false;  // offered without a lookup first: nothing known of it
      next_use = pending->second;
      pending_.erase(pending);
    }
    sizes_seen_ += size_bytes;
    items_seen_ += 1;
    if (next_use == order::SeededOrder::kNever || size_bytes > capacity_) return false;
    // Displace only items needed later than this one, farthest first, and only if that makes room.
    if (!MakeRoom(next_use, used_bytes + reserved_bytes_, size_bytes, victims)) return false;
    cached_[item] = Entry{next_use, size_bytes, key.name};
    by_next_use_.insert({next_use, item});
    return true;
  }

  void Held(const std::string& name, uint64_t size_bytes) override { held_[name] = size_bytes; }

  // The simulator's prefetch step for step (tfliquid.cache.multiworker): the credit grows by `reads` per read and
  // buys the upcoming reads of items not cached in the epoch being read, soonest first, while each displaces only
  // items needed later (or fills free room); unspent credit beyond one read does not accumulate. Never beyond the
  // epoch: the reader may stop there, and a prefetch into an epoch never read is a storage read for nothing.
  void PlanPrefetch(double reads, uint64_t used_bytes, std::vector<uint64_t>* items,
                    std::vector<std::string>* victims) override {
    if (capacity_ == 0 || reads <= 0) return;
    credit_ += reads;
    scan_ = std::max(scan_, now_);
    const uint64_t slice = order_.slice_length();
    const uint64_t horizon = (now_ + slice - 1) / slice * slice;  // the end of the latest read's epoch
    const uint64_t estimate = std::max<uint64_t>(1, items_seen_ ? sizes_seen_ / items_seen_ : 1);
    while (credit_ >= 1 && scan_ < horizon) {
      const uint64_t epoch = scan_ / order_.slice_length();
      const uint64_t index = scan_ % order_.slice_length();
      const uint64_t item = order_.ItemAt(epoch, order_.SliceStart(order_.worker_index()) + index);
      if (cached_.contains(item) || pending_.contains(item)) {
        ++scan_;
        continue;
      }
      if (!MakeRoom(scan_, used_bytes + reserved_bytes_, estimate, victims)) break;  // all cached needed sooner
      cached_[item] = Entry{scan_, estimate, absl::StrCat("int64:", item)};
      by_next_use_.insert({scan_, item});
      planned_[item] = estimate;
      reserved_bytes_ += estimate;
      items->push_back(item);
      credit_ -= 1;
      ++scan_;
    }
    credit_ = std::min(credit_, 1.0);
  }

 private:
  struct Entry {
    uint64_t next_use;
    uint64_t size;
    std::string key;
  };

  // Displaces only items needed later than `next_use`, farthest first, and only if that makes room for
  // `size_bytes` beside `used_bytes`: whether it did. Displaced prefetches not yet arrived are dropped from the
  // plan; displaced stored items are named in *victims.
  bool MakeRoom(uint64_t next_use, uint64_t used_bytes, uint64_t size_bytes, std::vector<std::string>* victims) {
    std::vector<uint64_t> displaced;
    std::vector<std::string> displaced_held;
    uint64_t freed = 0;
    // Items held before this policy began and not read since, whose next use is not known (only their names
    // are), go first unless a ranked one is needed later than the start of the next epoch, which they are (a
    // held item of this epoch is hit, and so ranked, before this epoch ends).
    const uint64_t held_next_use = (now_ / order_.slice_length() + 1) * order_.slice_length();
    auto held = held_.begin();
    for (auto it = by_next_use_.rbegin(); used_bytes - freed + size_bytes > capacity_;) {
      const bool ranked_later = it != by_next_use_.rend() && it->first > held_next_use;
      if (held != held_.end() && !ranked_later && held_next_use > next_use) {
        displaced_held.push_back(held->first);
        freed += std::min(held->second, used_bytes - freed);
        ++held;
        continue;
      }
      if (it == by_next_use_.rend() || it->first <= next_use) return false;
      displaced.push_back(it->second);
      freed += std::min(cached_[it->second].size, used_bytes - freed);
      ++it;
    }
    for (std::string& victim : displaced_held) {
      held_.erase(victim);
      victims->push_back(std::move(victim));
    }
    for (uint64_t victim : displaced) {
      if (!Unplan(victim)) victims->push_back(cached_[victim].key);
      by_next_use_.erase({cached_[victim].next_use, victim});
      cached_.erase(victim);
    }
    return true;
  }

  // Forgets a planned prefetch (arrived, displaced or overtaken by its demand read), releasing its reserved room;
  // whether it was one.
  bool Unplan(uint64_t item) {
    auto it = planned_.find(item);
    if (it == planned_.end()) return false;
    reserved_bytes_ -= std::min(it->second, reserved_bytes_);
    planned_.erase(it);
    return true;
  }

  // The item of a key within the order: its number, which the reader gives (tfliquid.minio_cache: an integer key;
  // PCRDataset and LiquidDataset: the record's).
  absl::Status ItemOf(const ItemKey& key, uint64_t* item) const {
    if (key.item < 0 || static_cast<uint64_t>(key.item) >= order_.num_items()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the clairvoyant cache policy ranks the items 0..", order_.num_items() - 1,
          " of its seeded order (integer keys from SeededOrder.dataset(), or the records of a PCRDataset or "
          "LiquidDataset read with order=...); got '",
          key.name, "'", key.item < 0 ? ", which is not an item of an order" : absl::StrCat(", item ", key.item)));
    }
    *item = static_cast<uint64_t>(key.item);
    return absl::OkStatus();
  }

  // Where this read of `item` stands in the worker's sequence of reads, and so its next use. The epoch is the
  // reader's (a pass of a dataset read with an order: its epoch) or, when not known (keys of
  // SeededOrder.dataset() in one pass), the number of reads so far over the slice length: then reads that
  // parallel calls reorder across an epoch boundary are placed by finding the item in the slice of the epoch
  // before or after.
  absl::Status NextUseAfterThisRead(uint64_t item, int64_t known_epoch, uint64_t* next_use) {
    const uint64_t reads = reads_++;
    const uint64_t counted = reads / order_.slice_length();
    std::vector<uint64_t> epochs = {counted, counted + 1};
    if (counted > 0) epochs.push_back(counted - 1);
    if (known_epoch >= 0) epochs = {static_cast<uint64_t>(known_epoch)};
    for (uint64_t epoch : epochs) {
      const int64_t index = order_.IndexInSlice(epoch, item);
      if (index >= 0) {
        *next_use = order_.NextUse(item, epoch, static_cast<uint64_t>(index));
        now_ = std::max(now_, epoch * order_.slice_length() + static_cast<uint64_t>(index) + 1);
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the clairvoyant cache policy's worker ", order_.worker_index(), " of ", order_.num_workers(),
                     " read item ", item, ", which its seeded order does not give it in epoch ", epochs.front(),
                     known_epoch >= 0 ? "" : absl::StrCat(" (read ", reads, ")"), ": read the keys of SeededOrder(",
                     order_.ToString(), ") in order",
                     known_epoch >= 0 ? "" : ", from epoch 0 on, or tell minio_cache each epoch's number (epoch=)"));
  }

  const uint64_t capacity_;
  const order::SeededOrder order_;
  uint64_t reads_ = 0;                           // accesses so far, which place a read whose epoch is not known
  uint64_t now_ = 0;                             // the clock (epoch x slice length + index) one past the latest read
  absl::flat_hash_map<uint64_t, Entry> cached_;  // what this policy admitted and has not evicted
  std::set<std::pair<uint64_t, uint64_t>> by_next_use_;  // (next use, item) of the same items
  absl::flat_hash_map<uint64_t, uint64_t> pending_;      // missed items' next uses, until offered to Admit
  // Items the store held before this policy began, not read since: name -> size, in a fixed order to evict them.
  std::map<std::string, uint64_t> held_;
  // Prefetch: items planned and not yet offered (in cached_ already), with the room reserved for each.
  absl::flat_hash_map<uint64_t, uint64_t> planned_;
  uint64_t reserved_bytes_ = 0;
  uint64_t sizes_seen_ = 0, items_seen_ = 0;  // the items offered so far, whose mean size a plan reserves
  uint64_t scan_ = 0;                         // the clock of the next read a plan considers
  double credit_ = 0;                         // background reads not yet spent
};

template <typename P>
std::unique_ptr<Policy> Make(uint64_t capacity_bytes, const order::SeededOrder*) {
  return std::make_unique<P>(capacity_bytes);
}

std::unique_ptr<Policy> MakeClairvoyant(uint64_t capacity_bytes, const order::SeededOrder* order) {
  return std::make_unique<ClairvoyantPolicy>(capacity_bytes, *order);
}

// Constant-initialized, so op registrations may read it during static initialization.
constexpr PolicyInfo kPolicies[] = {
    {"minio", &Make<MinioPolicy>, /*needs_order=*/false, /*evicts=*/false},
    {"lru", &Make<LruPolicy>, /*needs_order=*/false, /*evicts=*/true},
    {"clairvoyant", &MakeClairvoyant, /*needs_order=*/true, /*evicts=*/true},
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
