#include "device.h"

#include <fstream>
#include <iterator>

#include "l3/l3_gpu_program.h"
#include "l3/l3_gpu_staging.h"

namespace l3_check {
namespace {

bool ReadText(const std::string& path, std::string* text, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot be read";
    return false;
  }
  text->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

bool Device::Open(const std::string& kernel_dir, std::string* error) {
  const cuda::Nvrtc* nvrtc;
  if (!cuda::LoadDriver(&driver_, error) || !cuda::LoadNvrtc(&nvrtc, error)) return false;
  std::string decode_cu, task_fields_h;
  if (!ReadText(kernel_dir + "/l3_decode.cu", &decode_cu, error) ||
      !ReadText(kernel_dir + "/l3_task_fields.h", &task_fields_h, error)) {
    return false;
  }
  const cuda::Driver& d = *driver_;
  CUdevice device;
  CUcontext context;
  int major = 0, minor = 0;
  char name[256] = "";
  if (!cuda::Check(d, d.cuDeviceGet(&device, 0), "cuDeviceGet", error) ||
      !cuda::Check(d, d.cuDeviceGetName(name, sizeof(name), device), "cuDeviceGetName", error) ||
      !cuda::Check(d, d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                   "cuDeviceGetAttribute", error) ||
      !cuda::Check(d, d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                   "cuDeviceGetAttribute", error) ||
      !cuda::Check(d, d.cuDeviceGetAttribute(&multiprocessors_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                   "cuDeviceGetAttribute", error) ||
      !cuda::Check(d, d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain", error) ||
      !cuda::Check(d, d.cuCtxPushCurrent(context), "cuCtxPushCurrent", error) ||
      !cuda::Check(d, d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate", error)) {
    return false;
  }
  name_ = name;
  compute_capability_ = major * 10 + minor;
  const l3::KernelSource source{decode_cu.c_str(), task_fields_h.c_str()};
  return l3::KernelsOfContext(d, *nvrtc, source, context, &kernels_, error);
}

bool Device::Reserve(size_t bytes, Buffer* buffer, std::string* error) {
  if (buffer->bytes >= bytes) return true;
  if (buffer->pointer != 0 && !cuda::Check(*driver_, driver_->cuMemFree(buffer->pointer), "cuMemFree", error)) {
    return false;
  }
  buffer->pointer = 0, buffer->bytes = 0;
  if (!cuda::Check(*driver_, driver_->cuMemAlloc(&buffer->pointer, bytes), "cuMemAlloc", error)) return false;
  buffer->bytes = bytes;
  return true;
}

bool Device::Run(const std::vector<std::string_view>& images, int threads, Staging staging, bool clear,
                 Outcome* outcome, std::string* error) {
  outcome->batch_error.clear();
  outcome->corrupt_offsets.clear();
  l3::BatchHeaders batch;
  if (!l3::ParseBatchHeaders(images, &batch, &outcome->batch_error) ||
      !l3::VerifyChecksums(images, batch, &outcome->batch_error)) {
    return true;
  }
  l3::LaunchPlan& plan = outcome->plan;
  l3::BuildLaunchPlan(images, batch, &plan);
  if (threads == 0) threads = plan.threads();
  if (!l3::FitsSharedMemory(plan, threads, kernels_, &outcome->batch_error)) return true;
  const l3::StagingLayout layout = l3::LayoutOf(plan);
  const size_t pixel_bytes = static_cast<size_t>(plan.images * plan.height * plan.width * plan.channels);
  if (!Reserve(layout.bytes, &staged_, error) || !Reserve(pixel_bytes, &pixels_, error)) return false;
  if (clear && !cuda::Check(*driver_, driver_->cuMemsetD8Async(pixels_.pointer, 0xCD, pixel_bytes, stream_),
                            "cuMemsetD8Async", error)) {
    return false;
  }
  l3::PinnedBuffer pinned;
  uint8_t* host;
  if (staging == Staging::kPinned) {
    if (!l3::AcquirePinned(*driver_, layout.bytes, &pinned, error)) return false;
    host = pinned.data();
  } else {
    pageable_.resize(layout.bytes);
    host = pageable_.data();
  }
  return l3::DecodeOnDevice(*driver_, kernels_, stream_, plan, layout, threads, host, staged_.pointer, pixels_.pointer,
                            &outcome->corrupt_offsets, error);
}

bool Device::DecodeToHost(const std::vector<std::string_view>& images, int threads, Outcome* outcome,
                          std::vector<uint8_t>* pixels, std::string* error) {
  pixels->clear();
  if (!Run(images, threads, Staging::kPinned, /*clear=*/true, outcome, error)) return false;
  if (!outcome->batch_error.empty()) return true;
  const l3::LaunchPlan& plan = outcome->plan;
  pixels->resize(static_cast<size_t>(plan.images * plan.height * plan.width * plan.channels));
  return cuda::Check(*driver_, driver_->cuMemcpyDtoHAsync(pixels->data(), pixels_.pointer, pixels->size(), stream_),
                     "cuMemcpyDtoHAsync", error) &&
         cuda::Check(*driver_, driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize", error);
}

}  // namespace l3_check
