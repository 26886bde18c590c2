// A process-wide token bucket that every tfliquid reader draws from, to emulate slow disks and networks
// (the PCR paper's experiments throttle storage the same way). Pure C++, thread-safe.
#ifndef TFLIQUID_OPS_COMMON_THROTTLE_H_
#define TFLIQUID_OPS_COMMON_THROTTLE_H_

#include <cstdint>
#include <mutex>

namespace tfliquid {

class ReadThrottle {
 public:
  // The one bucket of this process.
  static ReadThrottle& Global();

  // bytes_per_second <= 0 removes the limit.
  void SetRate(double bytes_per_second);
  double rate() const;

  // Blocks until `bytes` may be transferred. Concurrent callers share the bandwidth: each reservation occupies
  // the link for bytes / rate seconds after the previous one ends, and the caller returns when its transfer
  // would have completed. Up to `kBurstSeconds` of idle link time is banked: a reader whose thread woke late
  // from its previous sleep (a loaded machine oversleeps by milliseconds) catches up instead of losing that
  // time on every small read, while over any interval T at most rate x (T + kBurstSeconds) bytes pass.
  void Acquire(uint64_t bytes);

  // Bytes granted since the process started (throttled or not): what the readers transferred.
  uint64_t bytes_granted() const;

 private:
  static constexpr double kBurstSeconds = 0.05;
  mutable std::mutex mu_;
  double rate_ = 0;          // bytes per second; 0 = unlimited
  double link_free_at_ = 0;  // seconds on the steady clock when the emulated link becomes idle
  uint64_t bytes_granted_ = 0;
};

// Chunk size in which readers draw tokens, so that concurrent readers interleave instead of one large read
// holding the link.
constexpr uint64_t kThrottleChunkBytes = 1 << 20;

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_THROTTLE_H_
