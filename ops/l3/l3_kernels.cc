// Kernels of Liquid>DecodeL3 and Liquid>EncodeL3 over the pure C++ codec (l3/l3_codec.h).
#include <string>

#include "common/input_checks.h"
#include "common/kernel.h"
#include "l3/l3_codec.h"
#include "l3/l3_ops.h"

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
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(0, TensorShape({header.height, header.width, header.params.channels}), &image));
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

REGISTER_KERNEL_BUILDER(Name(kDecodeL3Op).Device(tensorflow::DEVICE_CPU), DecodeL3Op);
REGISTER_KERNEL_BUILDER(Name(kEncodeL3Op).Device(tensorflow::DEVICE_CPU), EncodeL3Op);

}  // namespace
}  // namespace tfliquid
