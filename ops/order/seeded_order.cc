#include "order/seeded_order.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tfliquid {
namespace order {
namespace {

constexpr int kRounds = 6;

int BitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

}  // namespace

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

absl::Status SeededOrder::Make(uint64_t num_items, uint64_t seed, uint64_t num_workers, uint64_t worker_index,
                               SeededOrder* order) {
  if (num_items < 1 || num_items > (uint64_t{1} << 62)) {
    return absl::InvalidArgumentError(absl::StrCat("seeded order: num_items must be in [1, 2^62], got ", num_items));
  }
  if (num_workers < 1 || num_workers > num_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("seeded order: num_workers must be in [1, num_items=", num_items, "], got ", num_workers));
  }
  if (worker_index >= num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("seeded order: worker_index must be in [0, ", num_workers, "), got ", worker_index));
  }
  order->num_items_ = num_items;
  order->seed_ = seed;
  order->num_workers_ = num_workers;
  order->worker_index_ = worker_index;
  order->half_bits_ = std::max(1, (BitLength(num_items - 1) + 1) / 2);
  order->slice_start_ = order->SliceStart(worker_index);
  order->slice_end_ = order->SliceStart(worker_index + 1);
  return absl::OkStatus();
}

absl::Status SeededOrder::Parse(absl::string_view text, SeededOrder* order) {
  const std::vector<absl::string_view> fields = absl::StrSplit(text, ',');
  uint64_t values[4];
  bool ok = fields.size() == 4;
  for (size_t i = 0; ok && i < 4; ++i) ok = absl::SimpleAtoi(fields[i], &values[i]);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("seeded order: expected 'num_items,seed,num_workers,worker_index', got '", text, "'"));
  }
  return Make(values[0], values[1], values[2], values[3], order);
}

std::string SeededOrder::ToString() const {
  return absl::StrCat(num_items_, ",", seed_, ",", num_workers_, ",", worker_index_);
}

uint64_t SeededOrder::SliceStart(uint64_t worker) const {
  // worker * num_items / num_workers without overflow: num_items <= 2^62 and worker <= num_workers <= num_items.
  return static_cast<uint64_t>(static_cast<unsigned __int128>(worker) * num_items_ / num_workers_);
}

uint64_t SeededOrder::Feistel(uint64_t value, uint64_t epoch, bool inverse) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  const uint64_t base = SplitMix(seed_ ^ SplitMix(epoch));
  uint64_t keys[kRounds];
  for (int r = 0; r < kRounds; ++r) keys[r] = SplitMix(base + static_cast<uint64_t>(r));
  uint64_t left = value >> half_bits_, right = value & mask;
  if (inverse) {
    for (int r = kRounds - 1; r >= 0; --r) {
      const uint64_t previous_right = left;
      left = right ^ (SplitMix(left ^ keys[r]) & mask);
      right = previous_right;
    }
  } else {
    for (int r = 0; r < kRounds; ++r) {
      const uint64_t next_right = left ^ (SplitMix(right ^ keys[r]) & mask);
      left = right;
      right = next_right;
    }
  }
  return (left << half_bits_) | right;
}

uint64_t SeededOrder::Walk(uint64_t value, uint64_t epoch, bool inverse) const {
  uint64_t result = Feistel(value, epoch, inverse);
  while (result >= num_items_) result = Feistel(result, epoch, inverse);
  return result;
}

uint64_t SeededOrder::Position(uint64_t epoch, uint64_t item) const { return Walk(item, epoch, false); }

uint64_t SeededOrder::ItemAt(uint64_t epoch, uint64_t position) const { return Walk(position, epoch, true); }

int64_t SeededOrder::IndexInSlice(uint64_t epoch, uint64_t item) const {
  const uint64_t position = Position(epoch, item);
  if (position < slice_start_ || position >= slice_end_) return -1;
  return static_cast<int64_t>(position - slice_start_);
}

uint64_t SeededOrder::NextUse(uint64_t item, uint64_t epoch, uint64_t index) const {
  const uint64_t horizon = kHorizonEpochsPerWorker * num_workers_;
  for (uint64_t e = epoch; e <= epoch + horizon; ++e) {
    const int64_t i = IndexInSlice(e, item);
    if (i >= 0 && (e > epoch || static_cast<uint64_t>(i) > index)) return Clock(e, static_cast<uint64_t>(i));
  }
  return kNever;
}

}  // namespace order
}  // namespace tfliquid
