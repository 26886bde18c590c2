// CPU kernels of Liquid>DecodeL3, Liquid>EncodeL3 and Liquid>DecodeL3Batch over the pure C++ codec
// (l3/l3_codec.h). The batch op's GPU kernel: l3_gpu_kernels.cc.
#include <string>
#include <string_view>
#include <vector>

#include "common/input_checks.h"
#include "common/kernel.h"
#include "l3/l3_batch_input.h"
#include "l3/l3_codec.h"
#include "l3/l3_launch_plan.h"
#include "l3/l3_ops.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tfliquid {
namespace {

class DecodeL3Op : public OpKernel {
 public:
  explicit DecodeL3Op(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents_input;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents_input));
    const tstring& contents = *contents_input;
    const auto* data = reinterpret_cast<const uint8_t*>(contents.data());
    l3::Header header;
    std::string error;
    // The header and offsets are validated before the image is allocated.
    OP_REQUIRES(ctx, l3::ParseHeader(data, contents.size(), &header, &error),
                tensorflow::errors::InvalidArgument("L3: ", error));
    Tensor* image;
    OP_REQUIRES_OK(ctx, AllocateOutput(ctx, 0, {header.height, header.width, header.params.channels}, &image));
    OP_REQUIRES(ctx, l3::Decode(data, contents.size(), header, image->flat<uint8_t>().data(), &error),
                tensorflow::errors::InvalidArgument("L3: ", error));
  }
};

class EncodeL3Op : public OpKernel {
 public:
  explicit EncodeL3Op(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kProfileAttr, &profile_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor* image_input;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "image", 3, &image_input));  // [H, W, C]
    const Tensor& image = *image_input;
    const int64_t height = image.dim_size(0), width = image.dim_size(1), channels = image.dim_size(2);
    OP_REQUIRES(ctx, height >= 1 && width >= 1 && height <= l3::kMaxSide && width <= l3::kMaxSide,
                tensorflow::errors::InvalidArgument("image size ", height, "x", width, " outside 1..2^24"));
    l3::Params params;
    std::string error, encoded;
    OP_REQUIRES(ctx, l3::ProfileParams(profile_, height, width, static_cast<int>(channels), &params, &error),
                tensorflow::errors::InvalidArgument(error));
    OP_REQUIRES(ctx, l3::Encode(image.flat<uint8_t>().data(), height, width, params, &encoded, &error),
                tensorflow::errors::InvalidArgument("L3: ", error));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    output->scalar<tstring>()() = encoded;
  }

 private:
  std::string profile_;
};

// The images of a batch decode in parallel on the op's CPU thread pool, each into its slice of the output.
class DecodeL3BatchOp : public OpKernel {
 public:
  explicit DecodeL3BatchOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string_view> images;
    l3::BatchHeaders batch;  // every header validated before the output is allocated
    OP_REQUIRES_OK(ctx, ReadL3Batch(ctx, &images, &batch));
    Tensor* output;
    OP_REQUIRES_OK(
        ctx, AllocateOutput(ctx, 0, {static_cast<int64_t>(images.size()), batch.height, batch.width, batch.channels},
                            &output));
    const int64_t image_bytes = static_cast<int64_t>(batch.height) * batch.width * batch.channels;
    uint8_t* pixels = output->flat<uint8_t>().data();
    std::vector<std::string> errors(images.size());
    const auto decode = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        l3::Decode(reinterpret_cast<const uint8_t*>(images[i].data()), images[i].size(), batch.headers[i],
                   pixels + i * image_bytes, &errors[i]);
      }
    };
    const auto& workers = *ctx->device()->tensorflow_cpu_worker_threads();
    constexpr int64_t kCyclesPerByte = 4;  // what the SIMD decoder spends, roughly: only sizes the shards
    tensorflow::Shard(workers.num_threads, workers.workers, images.size(), kCyclesPerByte * image_bytes, decode);
    for (size_t i = 0; i < errors.size(); ++i) {
      OP_REQUIRES(ctx, errors[i].empty(), tensorflow::errors::InvalidArgument("L3 image ", i, ": ", errors[i]));
    }
  }
};

REGISTER_KERNEL_BUILDER(Name(kDecodeL3Op).Device(tensorflow::DEVICE_CPU), DecodeL3Op);
REGISTER_KERNEL_BUILDER(Name(kEncodeL3Op).Device(tensorflow::DEVICE_CPU), EncodeL3Op);
REGISTER_KERNEL_BUILDER(Name(kDecodeL3BatchOp).Device(tensorflow::DEVICE_CPU), DecodeL3BatchOp);

}  // namespace
}  // namespace tfliquid
