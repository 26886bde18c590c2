// The host half of the GPU decoder: validates a batch of L3 images with the CPU decoder's header parser and lays
// out one kernel launch of l3_decode.cu. Pure C++ (no TensorFlow, no CUDA), so the op's GPU kernel, the standalone
// GPU check (tests/cuda_device) and the tests' CPU run of the kernel (tests/cuda_host) build the very same table.
#ifndef TFLIQUID_OPS_L3_L3_LAUNCH_PLAN_H_
#define TFLIQUID_OPS_L3_L3_LAUNCH_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "l3/l3_codec.h"

namespace tfliquid::l3 {

// A block handles patch rows of more bytes than this by looping over them: 4 channels of 128 pixels.
inline constexpr int kMaxThreadsPerBlock = 512;

// The headers of a batch of images of one shape.
struct BatchHeaders {
  std::vector<Header> headers;
  uint32_t height = 0, width = 0;
  int channels = 0;
};

// Parses every header and offsets table. False with an error naming the image ("image 2: offset 0: bad magic:
// ..." or "image 2 is 10x11x3 (HxWxC), image 0 is 10x10x3: a batch needs one shape") on the first image that
// is corrupt or differs in shape from image 0, or on an empty batch.
bool ParseBatchHeaders(const std::vector<std::string_view>& images, BatchHeaders* batch, std::string* error);

// The checksum of every version 2 image, which the GPU decoder verifies on the host before the launch (its kernel
// checks the patch data's structure only). False with an error naming the image ("image 2: offset 5120: checksum
// mismatch: ...") on the first that fails.
bool VerifyChecksums(const std::vector<std::string_view>& images, const BatchHeaders& batch, std::string* error);

struct LaunchPlan {
  int64_t images = 0, height = 0, width = 0, channels = 0;
  std::vector<std::string_view> payloads;  // each image's patch data (views into the images, without the
                                           // checksum), in batch order
  int64_t payload_bytes = 0;               // theirs together: the kernel sees them back to back
  std::vector<int64_t> tasks;              // [num_tasks() x L3_TASK_FIELDS], images in order, patches row-major
  int max_width = 0;                       // widest patch row and most segments in a row: size the shared memory
  int max_segments = 0;

  int64_t num_tasks() const;
  // Threads per block: one per byte of the widest patch row (all channels), in whole warps, at most
  // kMaxThreadsPerBlock.
  int threads() const;
  // Dynamic shared memory of l3_decode_patches (the layout at the top of the kernel) for `threads` threads.
  size_t shared_bytes(int threads) const;
};

// The launch plan of images whose headers ParseBatchHeaders accepted. The patch streams themselves are checked
// by the kernel.
void BuildLaunchPlan(const std::vector<std::string_view>& images, const BatchHeaders& batch, LaunchPlan* plan);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_LAUNCH_PLAN_H_
