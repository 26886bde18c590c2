#include "data/stall_ring.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"

namespace tfliquid {
namespace stall {

absl::Status Ring::Get(const std::string& name, int64_t capacity, std::shared_ptr<Ring>* ring) {
  static tensorflow::mutex registry_mu(tensorflow::LINKER_INITIALIZED);
  static auto* registry = new std::map<std::string, std::shared_ptr<Ring>>();
  if (capacity < 1) return absl::InvalidArgumentError(absl::StrCat("stall ring capacity ", capacity, " < 1"));
  tensorflow::mutex_lock lock(registry_mu);
  std::shared_ptr<Ring>& entry = (*registry)[name];
  if (!entry) entry = std::make_shared<Ring>(capacity);
  if (entry->capacity() != capacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("stall ring '", name, "' holds ", entry->capacity(), " stamps, not ", capacity));
  }
  *ring = entry;
  return absl::OkStatus();
}

void Ring::Stamp(int64_t items) {
  // The clock of Python's time.time(), which the callback's step times come from.
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  tensorflow::mutex_lock lock(mu_);
  stamps_[static_cast<size_t>(batches_ % capacity())] = now;
  ++batches_;
  items_ += items;
}

void Ring::Read(double* stamps, int64_t* batches, int64_t* items) const {
  tensorflow::mutex_lock lock(mu_);
  std::copy(stamps_.begin(), stamps_.end(), stamps);
  *batches = batches_;
  *items = items_;
}

}  // namespace stall
}  // namespace tfliquid
