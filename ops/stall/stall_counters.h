// What a StallMonitor (tfliquid/keras/stall_monitor.py) reads: how long the consumer of the instrumented pipeline
// waited for its batches, and how many batches and items it took. Liquid>StallStampDataset adds to the counters
// and Liquid>StallRingRead copies them out for the callback; the two ops meet by the counters' name, within one
// process.
#ifndef TFLIQUID_OPS_STALL_STALL_COUNTERS_H_
#define TFLIQUID_OPS_STALL_STALL_COUNTERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace stall {

class Counters {
 public:
  // The counters named `name`, made on first use. They live as long as the process (one per StallMonitor: a few
  // dozen bytes each).
  static absl::Status Get(const std::string& name, std::shared_ptr<Counters>* counters);

  // The consumer waited `waited_seconds` for one request to the pipeline, which gave it `batches` batches (0 at
  // the end of the input, else 1) of `items` items in all.
  void Add(double waited_seconds, int64_t batches, int64_t items);

  void Read(double* waited_seconds, int64_t* batches, int64_t* items) const;

 private:
  mutable tensorflow::mutex mu_;
  double waited_seconds_ TF_GUARDED_BY(mu_) = 0.0;
  int64_t batches_ TF_GUARDED_BY(mu_) = 0;
  int64_t items_ TF_GUARDED_BY(mu_) = 0;
};

}  // namespace stall
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_STALL_STALL_COUNTERS_H_
