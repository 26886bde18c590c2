// Kernel of Liquid>DecodeRawItem: the header checked, the pixels copied once into the output.
#include <cstring>
#include <string>

#include "common/input_checks.h"
#include "common/kernel.h"
#include "liquid/liquid_ops.h"

namespace tfliquid {
namespace {

constexpr char kRawMagic[4] = {'\x89', 'R', 'A', 'W'};
constexpr size_t kRawHeaderSize = 16;
constexpr uint32_t kMaxSide = 1u << 16;

uint32_t LoadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian host
  return v;
}

class DecodeRawItemOp : public OpKernel {
 public:
  explicit DecodeRawItemOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kChannelsAttr, &channels_));
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    const char* data = contents->data();
    const size_t size = contents->size();
    OP_REQUIRES(ctx, size >= kRawHeaderSize,
                tensorflow::errors::InvalidArgument("raw item: offset ", size, ": ends inside its 16-byte header"));
    OP_REQUIRES(ctx, std::memcmp(data, kRawMagic, sizeof(kRawMagic)) == 0,
                tensorflow::errors::InvalidArgument("raw item: offset 0: bad magic: not a raw item"));
    const uint32_t height = LoadLe32(data + 4), width = LoadLe32(data + 8), channels = LoadLe32(data + 12);
    OP_REQUIRES(ctx, height >= 1 && width >= 1 && height <= kMaxSide && width <= kMaxSide,
                tensorflow::errors::InvalidArgument("raw item: offset 4: ", height, "x", width,
                                                    " is outside 1..65536 pixels a side"));
    OP_REQUIRES(ctx, channels == channels_,
                tensorflow::errors::InvalidArgument("raw item: offset 12: ", channels, " channels, the dataset has ",
                                                    channels_));
    const uint64_t pixels = static_cast<uint64_t>(height) * width * channels;
    OP_REQUIRES(ctx, size - kRawHeaderSize == pixels,
                tensorflow::errors::InvalidArgument("raw item: offset ", kRawHeaderSize, ": ", size - kRawHeaderSize,
                                                    " pixel bytes for ", height, "x", width, "x", channels));
    Tensor* image;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({height, width, channels}), &image));
    std::memcpy(image->flat<uint8_t>().data(), data + kRawHeaderSize, pixels);
  }

 private:
  int64_t channels_;
};

REGISTER_KERNEL_BUILDER(Name(kDecodeRawItemOp).Device(tensorflow::DEVICE_CPU), DecodeRawItemOp);

}  // namespace
}  // namespace tfliquid
