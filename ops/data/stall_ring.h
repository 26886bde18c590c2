// The stamps of a StallMonitor (tfliquid/keras/stall_monitor.py): the time each batch left the instrumented
// pipeline, in a ring, and the batches and items counted. Liquid>StallStampDataset writes it and
// Liquid>StallRingRead copies it out for the callback; they meet by the ring's name, within one process.
#ifndef TFLIQUID_OPS_DATA_STALL_RING_H_
#define TFLIQUID_OPS_DATA_STALL_RING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace stall {

class Ring {
 public:
  // The ring named `name`, made with room for `capacity` stamps on first use; a later use must name the same
  // capacity. Rings live as long as the process (one per StallMonitor: `capacity` doubles each).
  static absl::Status Get(const std::string& name, int64_t capacity, std::shared_ptr<Ring>* ring);

  explicit Ring(int64_t capacity) : stamps_(static_cast<size_t>(capacity), 0.0) {}

  // Batch number `batches` left now (seconds since the epoch, as Python's time.time()), holding `items` items.
  void Stamp(int64_t items);

  // Copies the stamps (batch b at b % capacity) into `stamps` (capacity values) and the counts.
  void Read(double* stamps, int64_t* batches, int64_t* items) const;

  int64_t capacity() const { return static_cast<int64_t>(stamps_.size()); }

 private:
  mutable tensorflow::mutex mu_;
  std::vector<double> stamps_ TF_GUARDED_BY(mu_);
  int64_t batches_ TF_GUARDED_BY(mu_) = 0;
  int64_t items_ TF_GUARDED_BY(mu_) = 0;
};

}  // namespace stall
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_DATA_STALL_RING_H_
