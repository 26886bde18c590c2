#include "l3/l3_gpu_staging.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cuda_api.h"
#include "l3/l3_task_fields.h"

namespace tfliquid::l3 {
namespace {

// Released buffers: (memory, capacity).
struct Pool {
  std::mutex mutex;
  std::vector<std::pair<uint8_t*, size_t>> free;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // kept for the process's life, as pinned memory is
  return *pool;
}

// Room to grow: batches of one shape vary in compressed size, and each new maximum would cost a reallocation.
size_t CapacityFor(size_t bytes) {
  constexpr size_t kGranule = 1 << 20;
  return (bytes + bytes / 8 + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

StagingLayout LayoutOf(const LaunchPlan& plan) {
  StagingLayout layout;
  layout.tasks = 0;
  layout.errors = layout.tasks + plan.tasks.size() * sizeof(int64_t);
  layout.payload = layout.errors + static_cast<size_t>(plan.images) * sizeof(uint64_t);
  layout.bytes = layout.payload + static_cast<size_t>(plan.payload_bytes);
  return layout;
}

void Stage(const LaunchPlan& plan, const StagingLayout& layout, uint8_t* buffer) {
  std::memcpy(buffer + layout.tasks, plan.tasks.data(), plan.tasks.size() * sizeof(int64_t));
  std::fill_n(reinterpret_cast<uint64_t*>(buffer + layout.errors), plan.images, kNoError);
  uint8_t* payload = buffer + layout.payload;
  for (const std::string_view image : plan.payloads) {
    std::memcpy(payload, image.data(), image.size());
    payload += image.size();
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ == nullptr) return;
  Pool& pool = ThePool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.emplace_back(data_, capacity_);
}

bool AcquirePinned(const cuda::Driver& driver, size_t bytes, PinnedBuffer* buffer, std::string* error) {
  Pool& pool = ThePool();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    // The smallest released buffer that is large enough; the others too small are freed.
    auto best = pool.free.end();
    for (auto it = pool.free.begin(); it != pool.free.end(); ++it) {
      if (it->second >= bytes && (best == pool.free.end() || it->second < best->second)) best = it;
    }
    if (best != pool.free.end()) {
      std::tie(buffer->data_, buffer->capacity_) = *best;
      pool.free.erase(best);
      return true;
    }
    for (const auto& [memory, capacity] : pool.free) driver.cuMemFreeHost(memory);
    pool.free.clear();
  }
  void* memory = nullptr;
  const size_t capacity = CapacityFor(bytes);
  if (!cuda::Check(driver, driver.cuMemHostAlloc(&memory, capacity, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc",
                   error)) {
    return false;
  }
  buffer->data_ = static_cast<uint8_t*>(memory);
  buffer->capacity_ = capacity;
  return true;
}

}  // namespace tfliquid::l3
