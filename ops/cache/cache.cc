#include "cache/cache.h"

#include <map>
#include <set>
#include <utility>

#include "cache/item_codec.h"
#include "cache/policy.h"
#include "tensorflow/core/platform/errors.h"

namespace tfliquid {
namespace cache {
namespace {

struct Registry {
  tensorflow::mutex mu;
  std::map<std::string, std::shared_ptr<Cache>> caches TF_GUARDED_BY(mu);
  // Released and not opened again: a pipeline still running on one of these names fails, instead of filling a
  // new cache that nobody will release. (Never opened is different: a tf.data service worker's ops create the
  // cache, since no MinIOCache constructor runs in that process.) Names only, a few bytes per release.
  std::set<std::string> released TF_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: ops may run during static destruction
  return *registry;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Describe(const Config& c) {
  return "capacity_bytes=" + std::to_string(c.capacity_bytes) + ", directory='" + c.directory +
         "', policy=" + c.policy + (c.order.empty() ? "" : ", order=" + c.order);
}

}  // namespace

absl::Status Config::Validate() const {
  if (capacity_bytes < 0) {
    return tensorflow::errors::InvalidArgument("cache capacity_bytes must be >= 0, got ", capacity_bytes);
  }
  const PolicyInfo* info = FindPolicy(policy);
  if (info == nullptr) {
    return tensorflow::errors::InvalidArgument("cache policy must be one of ",
                                               QuotedPolicyNames(/*with_evicting=*/true), ", got '", policy, "'");
  }
  if (info->needs_order && order.empty()) {
    return tensorflow::errors::InvalidArgument("the '", policy,
                                               "' cache policy needs the keys' seeded order (MinIOCache(order=...))");
  }
  order::SeededOrder parsed;
  return order.empty() ? absl::OkStatus() : order::SeededOrder::Parse(order, &parsed);
}

absl::Status Cache::Get(const Config& config, std::shared_ptr<Cache>* cache) {
  return GetOrOpen(config, /*reopen_released=*/false, cache);
}

absl::Status Cache::Open(const Config& config, std::shared_ptr<Cache>* cache) {
  return GetOrOpen(config, /*reopen_released=*/true, cache);
}

absl::Status Cache::GetOrOpen(const Config& config, bool reopen_released, std::shared_ptr<Cache>* cache) {
  Registry& registry = TheRegistry();
  tensorflow::mutex_lock lock(registry.mu);
  if (!reopen_released && registry.released.count(config.name)) {
    return tensorflow::errors::FailedPrecondition("MinIO cache '", config.name,
                                                  "' was released (MinIOCache.release()); a new "
                                                  "tfliquid.MinIOCache with that name opens it again, empty");
  }
  auto it = registry.caches.find(config.name);
  if (it != registry.caches.end()) {
    if (!(it->second->config_ == config)) {
      return tensorflow::errors::InvalidArgument("MinIO cache '", config.name, "' exists with ",
                                                 Describe(it->second->config_), "; asked for ", Describe(config));
    }
    if (reopen_released) TF_RETURN_IF_ERROR(it->second->store_->Restore());
    *cache = it->second;
    return absl::OkStatus();
  }
  TF_RETURN_IF_ERROR(config.Validate());
  const PolicyInfo& info = *FindPolicy(config.policy);
  const auto capacity = static_cast<uint64_t>(config.capacity_bytes);
  order::SeededOrder order;
  if (!config.order.empty()) TF_RETURN_IF_ERROR(order::SeededOrder::Parse(config.order, &order));
  std::unique_ptr<Policy> policy = info.make(capacity, config.order.empty() ? nullptr : &order);
  std::unique_ptr<Store> store;
  if (config.directory.empty()) {
    store = NewMemoryStore(std::move(policy));
  } else {
    TF_RETURN_IF_ERROR(NewDirectoryStore(config.directory, capacity, info, std::move(policy), &store));
  }
  cache->reset(new Cache(config, std::move(store)));
  registry.caches.emplace(config.name, *cache);
  registry.released.erase(config.name);
  return absl::OkStatus();
}

void Cache::Release(const std::string& name) {
  Registry& registry = TheRegistry();
  tensorflow::mutex_lock lock(registry.mu);
  registry.caches.erase(name);
  registry.released.insert(name);
}

int64_t Cache::BeginPass(int64_t epoch) {
  tensorflow::mutex_lock lock(mu_);
  passes_.push_back(Pass{PassStats(), epoch});
  return static_cast<int64_t>(passes_.size()) - 1;
}

void Cache::RestorePass(int64_t pass, int64_t epoch) {
  tensorflow::mutex_lock lock(mu_);
  PassLocked(pass).epoch = epoch;
}

Cache::Pass& Cache::PassLocked(int64_t pass) {
  // A pass id from before a Release and re-creation of the cache still counts, in a pass of its own.
  if (pass < 0) pass = 0;
  if (static_cast<size_t>(pass) >= passes_.size()) passes_.resize(pass + 1);
  return passes_[pass];
}

absl::Status Cache::Lookup(const std::string& name, int64_t item, int64_t pass, std::vector<tensorflow::Tensor>* values,
                           bool* hit) {
  // An uncacheable key is never stored: a miss, without asking the store, whose policy need not rank it.
  const bool storable = IsStorableKey(name);
  *hit = false;
  int64_t epoch;
  {
    tensorflow::mutex_lock lock(mu_);
    epoch = PassLocked(pass).epoch;
  }
  if (storable) TF_RETURN_IF_ERROR(store_->Lookup(ItemKey{name, item, epoch}, values, hit));
  tensorflow::mutex_lock lock(mu_);
  PassStats& stats = PassLocked(pass).stats;
  (*hit ? stats.hits : stats.misses) += 1;
  if (!storable) stats.uncacheable += 1;
  return absl::OkStatus();
}

absl::Status Cache::Insert(const std::string& name, int64_t item, int64_t pass,
                           const std::vector<tensorflow::Tensor>& values, bool prefetched, bool* admitted) {
  TF_RETURN_IF_ERROR(CheckStorable(values));
  *admitted = false;
  uint64_t bytes = 0;
  const bool admitting = admitting_.load(std::memory_order_relaxed);
  // An uncacheable key is not stored: its Lookup counted it.
  if (admitting && IsStorableKey(name)) TF_RETURN_IF_ERROR(store_->Admit(ItemKey{name, item}, values, &bytes));
  *admitted = bytes > 0;
  tensorflow::mutex_lock lock(mu_);
  PassStats& stats = PassLocked(pass).stats;
  stats.prefetch_reads += prefetched;
  stats.prefetched_items += prefetched && *admitted;
  stats.admitted_items += *admitted;
  stats.admitted_bytes += bytes;
  stats.closed += !admitting;
  return absl::OkStatus();
}

absl::Status Cache::StatsJson(std::string* json) {
  Totals totals;
  TF_RETURN_IF_ERROR(store_->GetTotals(&totals));
  *json = "{\"name\": " + JsonString(config_.name) + ", \"policy\": " + JsonString(config_.policy) +
          ", \"directory\": " + JsonString(config_.directory) +
          ", \"capacity_bytes\": " + std::to_string(config_.capacity_bytes) +
          ", \"bytes\": " + std::to_string(totals.bytes) + ", \"items\": " + std::to_string(totals.items) +
          ", \"passes\": [";
  tensorflow::mutex_lock lock(mu_);
  for (size_t i = 0; i < passes_.size(); ++i) {
    const PassStats& p = passes_[i].stats;
    *json += (i ? ", " : "") + std::string("{\"hits\": ") + std::to_string(p.hits) +
             ", \"misses\": " + std::to_string(p.misses) + ", \"admitted_items\": " + std::to_string(p.admitted_items) +
             ", \"admitted_bytes\": " + std::to_string(p.admitted_bytes) +
             ", \"uncacheable\": " + std::to_string(p.uncacheable) +
             ", \"prefetch_reads\": " + std::to_string(p.prefetch_reads) +
             ", \"prefetched_items\": " + std::to_string(p.prefetched_items) +
             ", \"closed\": " + std::to_string(p.closed) + "}";
  }
  *json += "]}";
  return absl::OkStatus();
}

}  // namespace cache
}  // namespace tfliquid
