// The seeded epoch order of data-parallel workers (docs/formats/seeded-order.md): a per-epoch permutation of the
// items by a seeded Feistel network, cut into one contiguous slice per worker. Position and item lookups are O(1)
// without materialising an epoch, so "when does this worker next read item x" is a short search.
// Pure C++; tfliquid.order.SeededOrder (Python) is the oracle it is tested against.
#ifndef TFLIQUID_OPS_ORDER_SEEDED_ORDER_H_
#define TFLIQUID_OPS_ORDER_SEEDED_ORDER_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tfliquid {
namespace order {

// SplitMix64's finaliser, the mixing function of the order's rounds.
uint64_t SplitMix(uint64_t x);

class SeededOrder {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  static constexpr uint64_t kHorizonEpochsPerWorker = 64;

  // InvalidArgument unless 1 <= num_items <= 2^62, 1 <= num_workers <= num_items, worker_index < num_workers.
  static absl::Status Make(uint64_t num_items, uint64_t seed, uint64_t num_workers, uint64_t worker_index,
                           SeededOrder* order);
  // From its text form "num_items,seed,num_workers,worker_index" (what Python's SeededOrder.spec writes).
  static absl::Status Parse(absl::string_view text, SeededOrder* order);
  std::string ToString() const;

  uint64_t num_items() const { return num_items_; }
  uint64_t num_workers() const { return num_workers_; }
  uint64_t worker_index() const { return worker_index_; }
  uint64_t SliceStart(uint64_t worker) const;  // worker == num_workers: num_items
  uint64_t slice_length() const { return slice_end_ - slice_start_; }

  // Where `item` is read in `epoch` among all workers' reads, and the item read at `position`.
  uint64_t Position(uint64_t epoch, uint64_t item) const;
  uint64_t ItemAt(uint64_t epoch, uint64_t position) const;
  // This worker's read `index` of `epoch` as its access clock: epoch * slice_length + index.
  uint64_t Clock(uint64_t epoch, uint64_t index) const { return epoch * slice_length() + index; }
  // The index of `item` in this worker's slice of `epoch`, or -1 if another worker reads it then.
  int64_t IndexInSlice(uint64_t epoch, uint64_t item) const;
  // The clock of this worker's next read of `item` after its read `index` of `epoch`; kNever beyond the horizon.
  uint64_t NextUse(uint64_t item, uint64_t epoch, uint64_t index) const;

 private:
  uint64_t Feistel(uint64_t value, uint64_t epoch, bool inverse) const;
  uint64_t Walk(uint64_t value, uint64_t epoch, bool inverse) const;

  uint64_t num_items_ = 1, seed_ = 0, num_workers_ = 1, worker_index_ = 0;
  uint64_t half_bits_ = 1, slice_start_ = 0, slice_end_ = 1;
};

}  // namespace order
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_ORDER_SEEDED_ORDER_H_
