// The host side of one GPU decode: everything the kernel reads, laid out in one buffer (so that one copy takes it
// to the device), and the page-locked host memory it is staged in. No TensorFlow: the op's GPU kernel and the
// standalone GPU check (tests/cuda_device) stage alike.
#ifndef TFLIQUID_OPS_L3_L3_GPU_STAGING_H_
#define TFLIQUID_OPS_L3_L3_GPU_STAGING_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/cuda_api.h"
#include "l3/l3_launch_plan.h"

namespace tfliquid::l3 {

// Byte offsets of the launch's parts, the same in the host's staging buffer and the device's copy of it.
struct StagingLayout {
  size_t tasks = 0;    // int64 [num_tasks x L3_TASK_FIELDS]
  size_t errors = 0;   // uint64 [images], staged as ~0 (no error); the kernel lowers a slot to a corrupt offset
  size_t payload = 0;  // the images' payloads back to back
  size_t bytes = 0;
};

inline constexpr uint64_t kNoError = ~0ull;

StagingLayout LayoutOf(const LaunchPlan& plan);

// Writes the task table, the error slots and the payloads into `buffer` (layout.bytes, 8-byte aligned).
void Stage(const LaunchPlan& plan, const StagingLayout& layout, uint8_t* buffer);

// Page-locked host memory, kept for the next call when released: the driver copies it to the device by DMA, at the
// bus's speed and asynchronously, where a copy from pageable memory first goes through a driver buffer on the CPU;
// and locking pages (slow) is paid once, not per batch. Portable: any CUDA context may copy from it.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();  // back to the pool

  uint8_t* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  friend bool AcquirePinned(const cuda::Driver& driver, size_t bytes, PinnedBuffer* buffer, std::string* error);
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// A pinned buffer of at least `bytes` for `buffer` (which must hold none): one that an earlier call released, or a
// new one, allocated in the current CUDA context. Buffers too small for the call are freed, so the pool holds
// about as many buffers as calls run at once, each as large as the largest batch.
bool AcquirePinned(const cuda::Driver& driver, size_t bytes, PinnedBuffer* buffer, std::string* error);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_GPU_STAGING_H_
