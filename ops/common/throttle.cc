#include "common/throttle.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tfliquid {
namespace {

double NowSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace

ReadThrottle& ReadThrottle::Global() {
  static ReadThrottle* throttle = new ReadThrottle();  // never destroyed: readers may outlive static teardown
  return *throttle;
}

void ReadThrottle::SetRate(double bytes_per_second) {
  const double rate = bytes_per_second > 0 ? bytes_per_second : 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (rate == rate_) return;  // setting the rate in force again keeps the link's schedule
  rate_ = rate;
  link_free_at_ = NowSeconds();
}

double ReadThrottle::rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rate_;
}

uint64_t ReadThrottle::bytes_granted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_granted_;
}

void ReadThrottle::Acquire(uint64_t bytes) {
  double done_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_granted_ += bytes;
    if (rate_ <= 0) return;
    const double now = NowSeconds();
    const double start = std::max(link_free_at_, now - kBurstSeconds);
    link_free_at_ = start + static_cast<double>(bytes) / rate_;
    done_at = link_free_at_;
  }
  const double wait = done_at - NowSeconds();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

}  // namespace tfliquid
