// Per-worker read queues of one process (Lobster, Liu, Nicolae and Li, ICPP 2022): a read enters a named queue,
// which admits at most its `threads` reads at a time while the rest wait in it. Workers whose reads share the
// process's storage (the ReadThrottle) then read at rates in proportion to their queues' threads, and a planner
// (tfliquid.cache.load_balance.ReadBalancer) gives the worker with the most misses ahead the most. Pure C++,
// thread-safe.
#ifndef TFLIQUID_OPS_COMMON_READ_QUEUES_H_
#define TFLIQUID_OPS_COMMON_READ_QUEUES_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/throttle.h"

namespace tfliquid {

class ReadQueues {
 public:
  // The queues of this process.
  static ReadQueues& Global();

  // threads >= 1. A queue whose threads were never set admits every read.
  void SetThreads(const std::string& queue, int64_t threads);
  // Waits until `queue` admits one more read and returns true, or returns false, having entered nothing, as soon
  // as `cancellation` is cancelled.
  [[nodiscard]] bool Enter(const std::string& queue, CancellationFlag* cancellation);
  // Ends a read that Enter admitted.
  void Leave(const std::string& queue);
  // The reads `queue` admitted that have not left, and those waiting in it: together, the worker's measured load.
  void Counts(const std::string& queue, int64_t* admitted, int64_t* waiting) const;

 private:
  struct Queue {
    int64_t threads = INT64_MAX;
    int64_t admitted = 0, waiting = 0;
    std::condition_variable admission;
  };
  Queue& Find(const std::string& queue);  // with mu_ held

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Queue>> queues_;
};

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_READ_QUEUES_H_
