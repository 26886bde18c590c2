// A process-wide token bucket that every tfliquid reader draws from, to emulate slow disks and networks
// (the PCR paper's experiments throttle storage the same way). Pure C++, thread-safe.
#ifndef TFLIQUID_OPS_COMMON_THROTTLE_H_
#define TFLIQUID_OPS_COMMON_THROTTLE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace tfliquid {

// Ends the throttle waits of one operation. Whoever learns that the operation is cancelled calls Cancel() (for a
// TensorFlow op, a callback of its CancellationManager: common/throttled_read.h), which wakes its wait at once.
// Kept free of TensorFlow so that the throttle needs no TensorFlow headers.
class CancellationFlag {
 public:
  void Cancel();
  bool cancelled() const;
  // Sleeps until `deadline` (seconds on the steady clock) or until Cancel(); true if cancelled.
  bool WaitUntil(double deadline);

 private:
  mutable std::mutex mu_;
  std::condition_variable cancelled_cv_;
  bool cancelled_ = false;
};

class ReadThrottle {
 public:
  // The one bucket of this process.
  static ReadThrottle& Global();

  // bytes_per_second <= 0 removes the limit.
  void SetRate(double bytes_per_second);
  double rate() const;

  // Blocks until `bytes` may be transferred and returns true, or returns false as soon as `cancellation` is
  // cancelled: then nothing is granted, and the link time reserved for the transfer is given back.
  // Concurrent callers share the bandwidth: each reservation occupies the link for bytes / rate seconds after
  // the previous one ends, and the caller returns when its transfer would have completed. Up to `kBurstSeconds`
  // of idle link time is banked: a reader whose thread woke late from its previous sleep (a loaded machine
  // oversleeps by milliseconds) catches up instead of losing that time on every small read, while over any
  // interval T at most rate x (T + kBurstSeconds) bytes pass.
  [[nodiscard]] bool Acquire(uint64_t bytes, CancellationFlag* cancellation);

  // Bytes granted since the process started (throttled or not): what the readers transferred.
  uint64_t bytes_granted() const;

 private:
  static constexpr double kBurstSeconds = 0.05;
  mutable std::mutex mu_;
  double rate_ = 0;          // bytes per second; 0 = unlimited
  double link_free_at_ = 0;  // seconds on the steady clock when the emulated link becomes idle
  uint64_t schedule_ = 0;    // counts the rate changes, each of which starts a new link schedule
  uint64_t bytes_granted_ = 0;
};

// Chunk size in which readers draw tokens, so that concurrent readers interleave instead of one large read
// holding the link.
constexpr uint64_t kThrottleChunkBytes = 1 << 20;

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_THROTTLE_H_
