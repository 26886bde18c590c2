#include "stall/stall_counters.h"

#include <map>

namespace tfliquid {
namespace stall {

absl::Status Counters::Get(const std::string& name, std::shared_ptr<Counters>* counters) {
  static tensorflow::mutex registry_mu(tensorflow::LINKER_INITIALIZED);
  static auto* registry = new std::map<std::string, std::shared_ptr<Counters>>();
  if (name.empty()) return absl::InvalidArgumentError("stall counters need a name");
  tensorflow::mutex_lock lock(registry_mu);
  std::shared_ptr<Counters>& entry = (*registry)[name];
  if (!entry) entry = std::make_shared<Counters>();
  *counters = entry;
  return absl::OkStatus();
}

void Counters::Add(double waited_seconds, int64_t batches, int64_t items) {
  tensorflow::mutex_lock lock(mu_);
  waited_seconds_ += waited_seconds;
  batches_ += batches;
  items_ += items;
}

void Counters::Read(double* waited_seconds, int64_t* batches, int64_t* items) const {
  tensorflow::mutex_lock lock(mu_);
  *waited_seconds = waited_seconds_;
  *batches = batches_;
  *items = items_;
}

}  // namespace stall
}  // namespace tfliquid
