// The GPU check's correctness half: a batch decoded by the op's GPU sequence as one launch and image by image, and
// by the CPU decoder on every core, each bit for bit against the source pixels; then damaged copies of its first
// images, in format versions 1 and 2, each launched beside the intact others, where the GPU (or the host's checks
// before the launch) must report the damaged image exactly when the CPU decoder rejects it, decode it to the CPU
// decoder's pixels otherwise, and leave the others intact.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_VERIFY_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_VERIFY_H_

#include <cstdint>
#include <string>

#include "batch.h"
#include "device.h"

namespace l3_check {

struct VerifyOptions {
  int threads = 0;      // block size; 0: the op's
  int singles = 4;      // how many images are also decoded alone
  int corruptions = 0;  // damaged copies per format version, among the batch's first kCorruptedBatch images
  uint64_t seed = 0;
  unsigned cpu_threads = 1;
};

// Prints the batch's JSON line and sets `passed`; false, saying why, only when CUDA fails.
bool Verify(Device& device, const Batch& batch, const VerifyOptions& options, bool* passed, std::string* error);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_VERIFY_H_
