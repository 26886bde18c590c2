// Kernel of Liquid>DecodeRawItem: the header checked, the pixels copied once into the output.
#include <cstring>
#include <string>

#include "common/input_checks.h"
#include "common/kernel.h"
#include "liquid/liquid_ops.h"
#include "liquid/raw_item.h"

namespace tfliquid {
namespace {

class DecodeRawItemOp : public OpKernel {
 public:
  explicit DecodeRawItemOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kChannelsAttr, &channels_));
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    liquid::RawItemShape shape;
    const absl::Status parsed =
        liquid::ParseRawItem(contents->data(), contents->size(), static_cast<uint32_t>(channels_), 0, &shape);
    OP_REQUIRES(ctx, parsed.ok(), tensorflow::errors::InvalidArgument("raw item: ", parsed.message()));
    Tensor* image;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({shape.height, shape.width, shape.channels}), &image));
    std::memcpy(image->flat<uint8_t>().data(), contents->data() + liquid::kRawItemHeaderSize, shape.pixel_bytes());
  }

 private:
  int64_t channels_;
};

REGISTER_KERNEL_BUILDER(Name(kDecodeRawItemOp).Device(tensorflow::DEVICE_CPU), DecodeRawItemOp);

}  // namespace
}  // namespace tfliquid
