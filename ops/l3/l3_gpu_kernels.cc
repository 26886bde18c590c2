// The GPU kernel of Liquid>DecodeL3Batch, and the CPU kernels of its two diagnostics (Liquid>L3GpuSupport,
// Liquid>CompileL3Kernels). Plain C++: CUDA is reached through cuda_api.h (dlopen), the program is compiled by
// NVRTC at first use (l3_gpu_program.h), and TensorFlow's own stream and allocator carry the work, so the kernel
// is ordered with the ops before and after it like any other GPU kernel. docs/architecture.md says why.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_api.h"
#include "common/input_checks.h"
#include "common/kernel.h"
#include "l3/l3_batch_input.h"
#include "l3/l3_gpu_program.h"
#include "l3/l3_launch_plan.h"
#include "l3/l3_ops.h"
#include "tensorflow/core/framework/device_base.h"
#include "xla/stream_executor/stream.h"

namespace tfliquid {
namespace {

constexpr unsigned kAddGreenThreads = 256;
constexpr unsigned kMaxAddGreenBlocks = 65535;  // l3_add_green strides over the rest
constexpr uint64_t kNoError = ~0ull;            // the kernel's "no error" in an image's error slot

struct L3Functions {
  CUfunction decode_patches = nullptr;
  CUfunction add_green = nullptr;
};

// The kernels of the current context, compiled and loaded on its first use (one module per GPU context).
absl::Status KernelsOfCurrentContext(const cuda::Driver& driver, const cuda::Nvrtc& nvrtc, CUcontext context,
                                     L3Functions* functions) {
  static std::mutex mutex;
  static auto* loaded = new std::map<CUcontext, L3Functions>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = loaded->find(context); found != loaded->end()) {
    *functions = found->second;
    return absl::OkStatus();
  }
  CUdevice device;
  int major = 0, minor = 0;
  TF_RETURN_IF_ERROR(cuda::Check(driver, driver.cuCtxGetDevice(&device), "cuCtxGetDevice"));
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                  "cuDeviceGetAttribute"));
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                  "cuDeviceGetAttribute"));
  std::string arch, ptx;
  TF_RETURN_IF_ERROR(l3::ArchitectureFor(nvrtc, major, minor, &arch));
  TF_RETURN_IF_ERROR(l3::CompileL3Kernels(nvrtc, arch, &ptx));
  CUmodule module;
  TF_RETURN_IF_ERROR(cuda::Check(driver, driver.cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData"));
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuModuleGetFunction(&functions->decode_patches, module, l3::kDecodePatchesKernel),
                  "cuModuleGetFunction"));
  TF_RETURN_IF_ERROR(cuda::Check(driver, driver.cuModuleGetFunction(&functions->add_green, module, l3::kAddGreenKernel),
                                 "cuModuleGetFunction"));
  loaded->emplace(context, *functions);  // kept for the process's life, like TensorFlow's own kernels
  return absl::OkStatus();
}

template <typename T>
CUdeviceptr DevicePointer(const Tensor& tensor) {
  return reinterpret_cast<CUdeviceptr>(tensor.flat<T>().data());
}

// Copies the plan to the device, launches both kernels on `stream` and waits for the error flags: the op must
// know whether the data was corrupt before it returns.
absl::Status Launch(OpKernelContext* ctx, const cuda::Driver& driver, const L3Functions& kernels, CUstream stream,
                    const l3::LaunchPlan& plan, Tensor* output, std::vector<uint64_t>* errors) {
  Tensor payload, tasks, image_errors, subtract_green;
  TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_UINT8, TensorShape({(int64_t)plan.payload.size()}), &payload));
  TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_INT64, TensorShape({(int64_t)plan.tasks.size()}), &tasks));
  TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_UINT64, TensorShape({plan.images}), &image_errors));
  TF_RETURN_IF_ERROR(ctx->allocate_temp(tensorflow::DT_UINT8, TensorShape({plan.images}), &subtract_green));
  CUdeviceptr payload_ptr = DevicePointer<uint8_t>(payload), tasks_ptr = DevicePointer<int64_t>(tasks);
  CUdeviceptr errors_ptr = DevicePointer<uint64_t>(image_errors);
  CUdeviceptr subtract_green_ptr = DevicePointer<uint8_t>(subtract_green), out_ptr = DevicePointer<uint8_t>(*output);
  // From pageable memory these copies return once the data is staged, so the host vectors may go after them.
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuMemcpyHtoDAsync(payload_ptr, plan.payload.data(), plan.payload.size(), stream),
                  "cuMemcpyHtoDAsync"));
  TF_RETURN_IF_ERROR(cuda::Check(
      driver, driver.cuMemcpyHtoDAsync(tasks_ptr, plan.tasks.data(), plan.tasks.size() * sizeof(int64_t), stream),
      "cuMemcpyHtoDAsync"));
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuMemcpyHtoDAsync(subtract_green_ptr, plan.subtract_green.data(), plan.images, stream),
                  "cuMemcpyHtoDAsync"));
  TF_RETURN_IF_ERROR(cuda::Check(
      driver, driver.cuMemsetD8Async(errors_ptr, 0xFF, plan.images * sizeof(uint64_t), stream), "cuMemsetD8Async"));

  int height = plan.height, width = plan.width, channels = plan.channels;
  int max_width = plan.max_width, max_segments = plan.max_segments;
  const int threads = plan.threads();
  void* decode_args[] = {&payload_ptr, &tasks_ptr, &out_ptr,      &height,    &width,
                         &channels,    &max_width, &max_segments, &errors_ptr};
  TF_RETURN_IF_ERROR(cuda::Check(driver,
                                 driver.cuLaunchKernel(kernels.decode_patches, plan.num_tasks(), 1, 1, threads, 1, 1,
                                                       plan.shared_bytes(threads), stream, decode_args, nullptr),
                                 "cuLaunchKernel(l3_decode_patches)"));
  if (plan.any_subtract_green()) {
    long long pixels_per_image = plan.height * plan.width;
    int images = plan.images;
    const int64_t pixels = pixels_per_image * plan.images;
    const unsigned blocks = std::min<int64_t>((pixels + kAddGreenThreads - 1) / kAddGreenThreads, kMaxAddGreenBlocks);
    void* green_args[] = {&out_ptr, &pixels_per_image, &images, &channels, &subtract_green_ptr};
    TF_RETURN_IF_ERROR(cuda::Check(
        driver,
        driver.cuLaunchKernel(kernels.add_green, blocks, 1, 1, kAddGreenThreads, 1, 1, 0, stream, green_args, nullptr),
        "cuLaunchKernel(l3_add_green)"));
  }
  errors->resize(plan.images);
  TF_RETURN_IF_ERROR(
      cuda::Check(driver, driver.cuMemcpyDtoHAsync(errors->data(), errors_ptr, plan.images * sizeof(uint64_t), stream),
                  "cuMemcpyDtoHAsync"));
  return cuda::Check(driver, driver.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

class DecodeL3BatchGpuOp : public OpKernel {
 public:
  explicit DecodeL3BatchGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string_view> images;
    l3::BatchHeaders batch;  // validated on the host, before anything is allocated (or touches the device)
    OP_REQUIRES_OK(ctx, ReadL3Batch(ctx, &images, &batch));
    l3::LaunchPlan plan;
    l3::BuildLaunchPlan(images, batch, &plan);
    Tensor* output;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(0, TensorShape({plan.images, plan.height, plan.width, plan.channels}), &output));

    const cuda::Driver* driver;
    const cuda::Nvrtc* nvrtc;
    OP_REQUIRES_OK(ctx, cuda::LoadDriver(&driver));
    OP_REQUIRES_OK(ctx, cuda::LoadNvrtc(&nvrtc));
    const tensorflow::DeviceContext* device_context = ctx->op_device_context();
    OP_REQUIRES(ctx, device_context != nullptr && device_context->stream() != nullptr,
                tensorflow::errors::Internal("DecodeL3Batch's GPU kernel got no GPU stream from TensorFlow"));
    auto stream = static_cast<CUstream>(device_context->stream()->platform_specific_handle().stream);
    CUcontext context;
    OP_REQUIRES_OK(ctx, cuda::Check(*driver, driver->cuStreamGetCtx(stream, &context), "cuStreamGetCtx"));
    OP_REQUIRES_OK(ctx, cuda::Check(*driver, driver->cuCtxPushCurrent(context), "cuCtxPushCurrent"));
    L3Functions kernels;
    std::vector<uint64_t> errors;
    absl::Status status = KernelsOfCurrentContext(*driver, *nvrtc, context, &kernels);
    if (status.ok()) status = Launch(ctx, *driver, kernels, stream, plan, output, &errors);
    CUcontext popped;
    driver->cuCtxPopCurrent(&popped);
    OP_REQUIRES_OK(ctx, status);
    for (size_t i = 0; i < errors.size(); ++i) {
      OP_REQUIRES(ctx, errors[i] == kNoError,
                  tensorflow::errors::InvalidArgument("L3 image ", i, ": offset ", errors[i],
                                                      ": corrupt patch data (found by the GPU decoder)"));
    }
  }
};

class L3GpuSupportOp : public OpKernel {
 public:
  explicit L3GpuSupportOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string> reasons;
    const cuda::Nvrtc* nvrtc;
    if (absl::Status status = cuda::LoadNvrtc(&nvrtc); !status.ok()) reasons.emplace_back(status.message());
    const cuda::Driver* driver;
    if (absl::Status status = cuda::LoadDriver(&driver); !status.ok()) {
      reasons.emplace_back(status.message());
    } else {
      int devices = 0;
      driver->cuDeviceGetCount(&devices);
      if (devices == 0) reasons.emplace_back("the CUDA driver sees no GPU");
    }
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    output->scalar<tstring>()() = absl::StrJoin(reasons, "; ");
  }
};

class CompileL3KernelsOp : public OpKernel {
 public:
  explicit CompileL3KernelsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kArchAttr, &arch_));
  }

  void Compute(OpKernelContext* ctx) override {
    const cuda::Nvrtc* nvrtc;
    OP_REQUIRES_OK(ctx, cuda::LoadNvrtc(&nvrtc));
    std::string ptx;
    OP_REQUIRES_OK(ctx, l3::CompileL3Kernels(*nvrtc, arch_, &ptx));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    output->scalar<tstring>()() = ptx;
  }

 private:
  std::string arch_;
};

// The encoded strings stay in host memory: the headers are parsed there.
REGISTER_KERNEL_BUILDER(Name(kDecodeL3BatchOp).Device(tensorflow::DEVICE_GPU).HostMemory("encoded"),
                        DecodeL3BatchGpuOp);
REGISTER_KERNEL_BUILDER(Name(kL3GpuSupportOp).Device(tensorflow::DEVICE_CPU), L3GpuSupportOp);
REGISTER_KERNEL_BUILDER(Name(kCompileL3KernelsOp).Device(tensorflow::DEVICE_CPU), CompileL3KernelsOp);

}  // namespace
}  // namespace tfliquid
