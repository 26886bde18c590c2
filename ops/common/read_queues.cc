#include "common/read_queues.h"

#include <chrono>

namespace tfliquid {

namespace {
// How often a waiting read looks at its cancellation flag, which has a condition variable of its own.
constexpr std::chrono::milliseconds kCancellationPoll(5);
}  // namespace

ReadQueues& ReadQueues::Global() {
  static ReadQueues* queues = new ReadQueues;  // never destroyed: readers may run during process exit
  return *queues;
}

ReadQueues::Queue& ReadQueues::Find(const std::string& queue) {
  std::unique_ptr<Queue>& found = queues_[queue];
  if (found == nullptr) found = std::make_unique<Queue>();
  return *found;
}

void ReadQueues::SetThreads(const std::string& queue, int64_t threads) {
  std::lock_guard<std::mutex> lock(mu_);
  Queue& q = Find(queue);
  q.threads = threads < 1 ? 1 : threads;
  q.admission.notify_all();  // more threads may admit waiting reads
}

bool ReadQueues::Enter(const std::string& queue, CancellationFlag* cancellation) {
  std::unique_lock<std::mutex> lock(mu_);
  Queue& q = Find(queue);
  ++q.waiting;
  while (q.admitted >= q.threads) {
    if (cancellation != nullptr && cancellation->cancelled()) {
      --q.waiting;
      return false;
    }
    q.admission.wait_for(lock, kCancellationPoll);
  }
  --q.waiting;
  ++q.admitted;
  return true;
}

void ReadQueues::Leave(const std::string& queue) {
  std::lock_guard<std::mutex> lock(mu_);
  Queue& q = Find(queue);
  --q.admitted;
  q.admission.notify_one();
}

void ReadQueues::Counts(const std::string& queue, int64_t* admitted, int64_t* waiting) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto found = queues_.find(queue);
  *admitted = found == queues_.end() ? 0 : found->second->admitted;
  *waiting = found == queues_.end() ? 0 : found->second->waiting;
}

}  // namespace tfliquid
