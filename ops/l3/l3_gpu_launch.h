// The GPU decoder's device side, as the op's GPU kernel runs it (l3_gpu_kernels.cc) and the standalone GPU check
// (tests/cuda_device) runs it without TensorFlow: the kernel compiled and loaded once per CUDA context, and one
// batch decoded: staged, copied to the device in one copy, decoded, its error slots copied back, waited for.
#ifndef TFLIQUID_OPS_L3_L3_GPU_LAUNCH_H_
#define TFLIQUID_OPS_L3_L3_GPU_LAUNCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/cuda_api.h"
#include "l3/l3_gpu_program.h"
#include "l3/l3_gpu_staging.h"
#include "l3/l3_launch_plan.h"

namespace tfliquid::l3 {

struct GpuKernels {
  CUfunction decode_patches = nullptr;
  int max_shared_bytes = 0;  // dynamic shared memory a block of it may use on this device (opted in above 48 KiB)
};

// The kernel of `context`, which must be current: compiled by NVRTC for its device (the newest virtual architecture
// not above it) and loaded at its first use in the context, then kept for the process's life, like TensorFlow's
// own kernels. Thread-safe.
bool KernelsOfContext(const cuda::Driver& driver, const cuda::Nvrtc& nvrtc, const KernelSource& source,
                      CUcontext context, GpuKernels* kernels, std::string* error);

// False, saying why, when the plan's blocks of `threads` threads need more shared memory than the device gives one
// (patches of thousands of pixels with short segments; the format allows them).
bool FitsSharedMemory(const LaunchPlan& plan, int threads, const GpuKernels& kernels, std::string* error);

// Queues the kernel alone on `stream`, over a launch already staged at `device` (laid out as `layout`), writing
// the [B, H, W, C] pixels at `out` and lowering the error slots of corrupt images.
bool LaunchDecodeKernel(const cuda::Driver& driver, const GpuKernels& kernels, CUstream stream, const LaunchPlan& plan,
                        const StagingLayout& layout, int threads, CUdeviceptr device, CUdeviceptr out,
                        std::string* error);

// The whole decode of a batch, as the op runs it: stages the plan in `staging` (layout.bytes of host memory,
// pinned for speed), copies it to `device` (layout.bytes of device memory) in one copy, launches the kernel, copies
// the error slots back into `staging` and waits for the stream: the op must know whether the data was corrupt
// before it returns. Then corrupt_offsets[i] is kNoError, or the offset in image i's file where its data is
// corrupt. False, saying why, when CUDA fails.
bool DecodeOnDevice(const cuda::Driver& driver, const GpuKernels& kernels, CUstream stream, const LaunchPlan& plan,
                    const StagingLayout& layout, int threads, uint8_t* staging, CUdeviceptr device, CUdeviceptr out,
                    std::vector<uint64_t>* corrupt_offsets, std::string* error);

// What the op and the GPU check say of a corrupt image: "offset 1234: corrupt patch data (found by the GPU
// decoder)".
std::string CorruptDataMessage(uint64_t offset);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_GPU_LAUNCH_H_
