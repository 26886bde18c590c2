// The GPU as Liquid>DecodeL3Batch's GPU kernel drives it, without TensorFlow: device 0's primary context, a stream,
// the kernel compiled by NVRTC from ops/l3/l3_decode.cu (ops/l3/l3_gpu_launch.h), and device memory from cuMemAlloc
// where the op has TensorFlow's allocator. Decoding a batch runs the op's sequence (l3_gpu_kernels.cc, Compute):
// headers parsed, checksums verified and the launch planned on the host, the shared memory checked, the plan
// staged in a pinned buffer from the pool and decoded by l3::DecodeOnDevice.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_DEVICE_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_DEVICE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/cuda_api.h"
#include "l3/l3_gpu_launch.h"
#include "l3/l3_launch_plan.h"

namespace l3_check {

namespace l3 = tfliquid::l3;
namespace cuda = tfliquid::cuda;

// Where the op stages a batch: page-locked memory from the pool, as it does; or pageable memory, to measure what
// the pinned buffers save.
enum class Staging { kPinned, kPageable };

// One batch through the op's sequence. The op would raise InvalidArgument on `batch_error` (a header, a shape or
// the shared memory) or on the first corrupt image.
struct Outcome {
  std::string batch_error;
  l3::LaunchPlan plan;
  std::vector<uint64_t> corrupt_offsets;  // per image: l3::kNoError, or where its file is corrupt
};

class Device {
 public:
  // Loads the driver and NVRTC (cuda_api.h: libcuda.so.1 and libnvrtc, or the files TFLIQUID_CUDA_DRIVER_LIBRARY
  // and TFLIQUID_NVRTC_LIBRARY name) and compiles the kernel source found in `kernel_dir`.
  bool Open(const std::string& kernel_dir, std::string* error);

  const cuda::Driver& driver() const { return *driver_; }
  CUstream stream() const { return stream_; }
  const l3::GpuKernels& kernels() const { return kernels_; }
  const std::string& name() const { return name_; }
  int multiprocessors() const { return multiprocessors_; }
  int compute_capability() const { return compute_capability_; }  // 90 for 9.0

  // The op's sequence on `images`, with blocks of `threads` threads (0: the op's own, LaunchPlan::threads).
  bool Decode(const std::vector<std::string_view>& images, int threads, Staging staging, Outcome* outcome,
              std::string* error) {
    return Run(images, threads, staging, /*clear=*/false, outcome, error);
  }
  // The same from pinned staging, for the checks: the pixel buffer is filled with 0xCD first (in stream order), so
  // that a byte the kernel fails to write shows; `pixels` receives the decoded batch (empty after a batch error).
  bool DecodeToHost(const std::vector<std::string_view>& images, int threads, Outcome* outcome,
                    std::vector<uint8_t>* pixels, std::string* error);
  // The staged launch of the last decode, on the device.
  CUdeviceptr staged() const { return staged_.pointer; }
  CUdeviceptr pixels() const { return pixels_.pointer; }

 private:
  struct Buffer {
    CUdeviceptr pointer = 0;
    size_t bytes = 0;
  };
  bool Run(const std::vector<std::string_view>& images, int threads, Staging staging, bool clear, Outcome* outcome,
           std::string* error);
  bool Reserve(size_t bytes, Buffer* buffer, std::string* error);

  const cuda::Driver* driver_ = nullptr;
  CUstream stream_ = nullptr;
  l3::GpuKernels kernels_;
  std::string name_;
  int multiprocessors_ = 0, compute_capability_ = 0;
  Buffer staged_, pixels_;
  std::vector<uint8_t> pageable_;
};

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_DEVICE_H_
