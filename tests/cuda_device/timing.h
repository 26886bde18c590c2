// The GPU check's speed half, on one batch: the kernel alone (CUDA events around each launch), the op's whole
// sequence per batch (host parsing and planning, staging, the one copy, the launch, the error slots, the wait:
// wall clock), the same from pageable staging memory (what the pinned buffers save), and the CPU decoder on every
// core. One JSON line per decoder, with medians over `repeat` runs.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_TIMING_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_TIMING_H_

#include <string>

#include "batch.h"
#include "device.h"

namespace l3_check {

struct TimingOptions {
  int threads = 0;  // block size; 0: the op's
  int repeat = 20;
  unsigned cpu_threads = 1;
};

// False, saying why, when CUDA fails or the batch does not decode.
bool Time(Device& device, const Batch& batch, const TimingOptions& options, std::string* error);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_TIMING_H_
