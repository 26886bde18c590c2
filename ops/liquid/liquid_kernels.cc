// Kernel of Liquid>DecodeRawItem (the header checked, the pixels copied once into the output), and the item
// format "raw" (records/item_format.h) by which the record reader emits a raw item's pixels straight from the
// record, one copy, with no string in between.
#include <cstring>
#include <string>

#include "common/input_checks.h"
#include "common/kernel.h"
#include "liquid/liquid_ops.h"
#include "liquid/raw_item.h"
#include "records/item_format.h"

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
    OP_REQUIRES_OK(ctx, AllocateOutput(ctx, 0, {shape.height, shape.width, shape.channels}, &image));
    std::memcpy(image->flat<uint8_t>().data(), contents->data() + liquid::kRawItemHeaderSize, shape.pixel_bytes());
  }

 private:
  int64_t channels_;
};

absl::Status EmitRawPixels(const records::RecordPrefix& record, const char* buffer, uint32_t i, int64_t channels,
                           tensorflow::Allocator* allocator, Tensor* out) {
  if (!record.whole_items) {
    return absl::InvalidArgumentError(
        "offset 0: the item format 'raw' reads records of whole items (Liquid's); this is a record of groups (PCR's)");
  }
  const uint64_t offset = record.ItemOffset(i);
  const char* item = buffer + offset;
  liquid::RawItemShape shape;
  const absl::Status parsed =
      liquid::ParseRawItem(item, record.ItemSize(i), static_cast<uint32_t>(channels), offset, &shape);
  if (!parsed.ok()) return absl::DataLossError(parsed.message());
  TensorShape image_shape;
  TF_RETURN_IF_ERROR(ShapeOf({shape.height, shape.width, shape.channels}, &image_shape));
  *out = Tensor(allocator, tensorflow::DT_UINT8, image_shape);
  std::memcpy(out->flat<uint8_t>().data(), item + liquid::kRawItemHeaderSize, shape.pixel_bytes());
  return absl::OkStatus();
}

const bool kRawRegistered = records::RegisterItemFormat("raw", {tensorflow::DT_UINT8, /*pixels=*/true, &EmitRawPixels});

REGISTER_KERNEL_BUILDER(Name(kDecodeRawItemOp).Device(tensorflow::DEVICE_CPU), DecodeRawItemOp);

}  // namespace
}  // namespace tfliquid
