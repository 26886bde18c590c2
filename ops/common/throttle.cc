#include "common/throttle.h"

#include <algorithm>
#include <chrono>

namespace tfliquid {
namespace {

using Clock = std::chrono::steady_clock;

double NowSeconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

}  // namespace

void CancellationFlag::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cancelled_cv_.notify_all();
}

bool CancellationFlag::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool CancellationFlag::WaitUntil(double deadline) {
  const auto until =
      Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline)));
  std::unique_lock<std::mutex> lock(mu_);
  return cancelled_cv_.wait_until(lock, until, [this] { return cancelled_; });
}

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
  ++schedule_;
}

double ReadThrottle::rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rate_;
}

uint64_t ReadThrottle::bytes_granted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_granted_;
}

bool ReadThrottle::Acquire(uint64_t bytes, CancellationFlag* cancellation) {
  if (cancellation->cancelled()) return false;
  double start, done_at;
  uint64_t schedule;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rate_ <= 0) {
      bytes_granted_ += bytes;
      return true;
    }
    start = std::max(link_free_at_, NowSeconds() - kBurstSeconds);
    done_at = start + static_cast<double>(bytes) / rate_;
    link_free_at_ = done_at;
    schedule = schedule_;
  }
  const bool cancelled = cancellation->WaitUntil(done_at);
  std::lock_guard<std::mutex> lock(mu_);
  if (!cancelled) {
    bytes_granted_ += bytes;
    return true;
  }
  // The link time this transfer has not used yet is given back, so that the next reader does not wait for a
  // transfer that will not happen (an abandoned pipeline leaves one per read in flight). Readers already waiting
  // behind it keep their deadlines, later than the schedule without it would give them, so the rate still holds.
  // A rate change since the reservation started a new schedule, which owes this transfer nothing.
  if (schedule == schedule_) link_free_at_ -= done_at - std::clamp(NowSeconds(), start, done_at);
  return false;
}

}  // namespace tfliquid
