#include "l3/l3_gpu_launch.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "common/cuda_api.h"

namespace tfliquid::l3 {
namespace {

// Dynamic shared memory a block may use without opting in (cuFuncSetAttribute), on every GPU CUDA 12 supports.
constexpr int kDefaultSharedBytes = 48 * 1024;

bool Attribute(const cuda::Driver& driver, CUdevice device, CUdevice_attribute attribute, int* value,
               std::string* error) {
  return cuda::Check(driver, driver.cuDeviceGetAttribute(value, attribute, device), "cuDeviceGetAttribute", error);
}

bool LoadKernels(const cuda::Driver& driver, const cuda::Nvrtc& nvrtc, const KernelSource& source, GpuKernels* kernels,
                 std::string* error) {
  CUdevice device;
  int major = 0, minor = 0;
  if (!cuda::Check(driver, driver.cuCtxGetDevice(&device), "cuCtxGetDevice", error) ||
      !Attribute(driver, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major, error) ||
      !Attribute(driver, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor, error) ||
      !Attribute(driver, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &kernels->max_shared_bytes,
                 error)) {
    return false;
  }
  std::string arch, ptx;
  if (!ArchitectureFor(nvrtc, major, minor, &arch, error) || !CompileL3Kernels(nvrtc, source, arch, &ptx, error)) {
    return false;
  }
  CUmodule module;
  if (!cuda::Check(driver, driver.cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData", error) ||
      !cuda::Check(driver, driver.cuModuleGetFunction(&kernels->decode_patches, module, kDecodePatchesKernel),
                   "cuModuleGetFunction", error)) {
    return false;
  }
  // Opted in once, to the device's limit, rather than per launch: launches may run at once from several threads.
  return kernels->max_shared_bytes <= kDefaultSharedBytes ||
         cuda::Check(driver,
                     driver.cuFuncSetAttribute(kernels->decode_patches, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               kernels->max_shared_bytes),
                     "cuFuncSetAttribute", error);
}

}  // namespace

bool KernelsOfContext(const cuda::Driver& driver, const cuda::Nvrtc& nvrtc, const KernelSource& source,
                      CUcontext context, GpuKernels* kernels, std::string* error) {
  static std::mutex mutex;
  static auto* loaded = new std::map<CUcontext, GpuKernels>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = loaded->find(context); found != loaded->end()) {
    *kernels = found->second;
    return true;
  }
  if (!LoadKernels(driver, nvrtc, source, kernels, error)) return false;
  loaded->emplace(context, *kernels);
  return true;
}

bool FitsSharedMemory(const LaunchPlan& plan, int threads, const GpuKernels& kernels, std::string* error) {
  const size_t needed = plan.shared_bytes(threads);
  const size_t allowed = std::max(kDefaultSharedBytes, kernels.max_shared_bytes);
  if (needed <= allowed) return true;
  *error = "the batch's patches (" + std::to_string(plan.max_width) + " pixels wide, " +
           std::to_string(plan.max_segments) + " segments a row, " + std::to_string(plan.channels) +
           " channels) need " + std::to_string(needed) + " bytes of GPU shared memory per block; this GPU gives " +
           std::to_string(allowed);
  return false;
}

bool LaunchDecodeKernel(const cuda::Driver& driver, const GpuKernels& kernels, CUstream stream, const LaunchPlan& plan,
                        const StagingLayout& layout, int threads, CUdeviceptr device, CUdeviceptr out,
                        std::string* error) {
  CUdeviceptr payload = device + layout.payload, tasks = device + layout.tasks, errors = device + layout.errors;
  int height = static_cast<int>(plan.height), width = static_cast<int>(plan.width);
  int channels = static_cast<int>(plan.channels), max_width = plan.max_width, max_segments = plan.max_segments;
  void* args[] = {&payload, &tasks, &out, &height, &width, &channels, &max_width, &max_segments, &errors};
  return cuda::Check(
      driver,
      driver.cuLaunchKernel(kernels.decode_patches, static_cast<unsigned>(plan.num_tasks()), 1, 1, threads, 1, 1,
                            static_cast<unsigned>(plan.shared_bytes(threads)), stream, args, nullptr),
      "cuLaunchKernel(l3_decode_patches)", error);
}

bool DecodeOnDevice(const cuda::Driver& driver, const GpuKernels& kernels, CUstream stream, const LaunchPlan& plan,
                    const StagingLayout& layout, int threads, uint8_t* staging, CUdeviceptr device, CUdeviceptr out,
                    std::vector<uint64_t>* corrupt_offsets, std::string* error) {
  Stage(plan, layout, staging);
  const size_t error_bytes = static_cast<size_t>(plan.images) * sizeof(uint64_t);
  const bool queued =
      cuda::Check(driver, driver.cuMemcpyHtoDAsync(device, staging, layout.bytes, stream), "cuMemcpyHtoDAsync",
                  error) &&
      LaunchDecodeKernel(driver, kernels, stream, plan, layout, threads, device, out, error) &&
      cuda::Check(driver,
                  driver.cuMemcpyDtoHAsync(staging + layout.errors, device + layout.errors, error_bytes, stream),
                  "cuMemcpyDtoHAsync", error);
  // Waited for even after a failure: a copy already queued may still be reading the staging buffer.
  const CUresult synchronized = driver.cuStreamSynchronize(stream);
  if (!queued || !cuda::Check(driver, synchronized, "cuStreamSynchronize", error)) return false;
  corrupt_offsets->resize(plan.images);
  std::memcpy(corrupt_offsets->data(), staging + layout.errors, error_bytes);
  return true;
}

std::string CorruptDataMessage(uint64_t offset) {
  return "offset " + std::to_string(offset) + ": corrupt patch data (found by the GPU decoder)";
}

}  // namespace tfliquid::l3
