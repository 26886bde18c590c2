// The kernel of Liquid>DecodeJpegCrop (jpeg_ops.cc): a window of a JPEG decoded at the scale its output needs
// (scaled_decode.h), resized, flipped and normalised in one pass (docs/formats/pcr.md, "Decoding a crop").
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "common/kernel.h"
#include "jpeg/jpeg_ops.h"
#include "jpeg/scaled_decode.h"
#include "tensorflow/core/framework/bfloat16.h"

namespace tfliquid {
namespace {

constexpr int64_t kMaxSide = 65535;  // JPEG's own limit, as Liquid>DecodeJpegScaled's

// Writes RGB pixels [height, width, 3] to `out` as T, mirrored left to right if `flip`, (value - mean) / std per
// channel, in HWC or CHW order.
template <typename T>
void Write(const uint8_t* pixels, int64_t height, int64_t width, bool flip, const float* mean, const float* std,
           bool channels_first, T* out) {
  float scale[3], shift[3];  // value * scale + shift: a multiply and an add per value
  for (int c = 0; c < 3; ++c) scale[c] = 1.0f / std[c], shift[c] = -mean[c] / std[c];
  const int64_t plane = height * width;
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = pixels + y * width * 3;
    for (int64_t x = 0; x < width; ++x) {
      const uint8_t* pixel = row + (flip ? width - 1 - x : x) * 3;
      for (int c = 0; c < 3; ++c) {
        const int64_t at = channels_first ? c * plane + y * width + x : (y * width + x) * 3 + c;
        if constexpr (std::is_same_v<T, uint8_t>) {
          out[at] = pixel[c];
        } else {
          out[at] = static_cast<T>(pixel[c] * scale[c] + shift[c]);
        }
      }
    }
  }
}

class DecodeJpegCropOp : public OpKernel {
 public:
  explicit DecodeJpegCropOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kDtypeAttr, &dtype_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kChannelsFirstAttr, &channels_first_));
    std::vector<float> mean, std;
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kMeanAttr, &mean));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStdAttr, &std));
    OP_REQUIRES(ctx, (mean.empty() || mean.size() == 3) && (std.empty() || std.size() == 3),
                tensorflow::errors::InvalidArgument("mean and std must hold 3 values (R, G, B) or none, got ",
                                                    mean.size(), " and ", std.size()));
    OP_REQUIRES(ctx, dtype_ != tensorflow::DT_UINT8 || (mean.empty() && std.empty()),
                tensorflow::errors::InvalidArgument("mean and std normalise float32 or bfloat16 output, not uint8"));
    if (mean.empty()) mean.assign(3, 0.0f);
    if (std.empty()) std.assign(3, 1.0f);
    for (float value : std) {
      OP_REQUIRES(ctx, value > 0 && value < std::numeric_limits<float>::infinity(),
                  tensorflow::errors::InvalidArgument("std must be finite and above 0, got ", value));
    }
    for (int c = 0; c < 3; ++c) mean_[c] = mean[c], std_[c] = std[c];
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring *contents, *context;
    const Tensor *window_input, *size_input;
    bool flip;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "window", 1, &window_input));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "size", 1, &size_input));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "flip", &flip));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "context", &context));
    OP_REQUIRES(ctx, window_input->NumElements() == 4 && size_input->NumElements() == 2,
                tensorflow::errors::InvalidArgument("window must hold (y, x, height, width) and size (height, "
                                                    "width), got shapes ",
                                                    window_input->shape().DebugString(), " and ",
                                                    size_input->shape().DebugString()));
    const auto window = window_input->vec<int64_t>();
    const int64_t height = size_input->vec<int64_t>()(0), width = size_input->vec<int64_t>()(1);
    const bool as_decoded = height == 0 && width == 0;
    OP_REQUIRES(ctx, as_decoded || (height >= 1 && width >= 1 && height <= kMaxSide && width <= kMaxSide),
                tensorflow::errors::InvalidArgument("size must be in 1x1..", kMaxSide, "x", kMaxSide,
                                                    " (or 0x0: the window as decoded), got ", height, "x", width));
    const std::string corrupt = context->empty() ? "corrupt JPEG: " : absl::StrCat(*context, ": corrupt JPEG: ");
    const jpeg::CropWindow crop{window(0), window(1), window(2), window(3)};
    jpeg::ScaledDecoder decoder;
    std::string error;
    constexpr int64_t kLargest = std::numeric_limits<int64_t>::max();  // a size no scale reaches: 8/8
    const bool started = as_decoded ? decoder.Start(Bytes(*contents), contents->size(), kLargest, kLargest, &error,
                                                    /*no_finer_than_coded=*/false, &crop)
                                    : decoder.Start(Bytes(*contents), contents->size(), height, width, &error,
                                                    /*no_finer_than_coded=*/true, &crop);
    OP_REQUIRES(ctx, started || !decoder.window_outside(),
                tensorflow::errors::InvalidArgument(context->empty() ? "" : absl::StrCat(*context, ": "), error));
    OP_REQUIRES(ctx, started, tensorflow::errors::InvalidArgument(corrupt, error));
    const int64_t out_height = as_decoded ? decoder.height() : height;
    const int64_t out_width = as_decoded ? decoder.width() : width;
    Tensor* image;
    OP_REQUIRES_OK(ctx, channels_first_ ? AllocateOutput(ctx, 0, {3, out_height, out_width}, &image)
                                        : AllocateOutput(ctx, 0, {out_height, out_width, 3}, &image));
    // uint8 HWC unflipped goes straight to the output; anything else through the RGB of the resized window.
    const bool direct = dtype_ == tensorflow::DT_UINT8 && !channels_first_ && !flip;
    std::vector<uint8_t> resized(direct ? 0 : static_cast<size_t>(out_height * out_width * 3));
    uint8_t* pixels = direct ? image->flat<uint8_t>().data() : resized.data();
    OP_REQUIRES(ctx, decoder.DecodeResized(pixels, out_height, out_width, &error),
                tensorflow::errors::InvalidArgument(corrupt, error));
    if (direct) return;
    switch (dtype_) {
      case tensorflow::DT_UINT8:
        Write(pixels, out_height, out_width, flip, mean_, std_, channels_first_, image->flat<uint8_t>().data());
        break;
      case tensorflow::DT_FLOAT:
        Write(pixels, out_height, out_width, flip, mean_, std_, channels_first_, image->flat<float>().data());
        break;
      default:
        Write(pixels, out_height, out_width, flip, mean_, std_, channels_first_,
              image->flat<tensorflow::bfloat16>().data());
    }
  }

 private:
  static const uint8_t* Bytes(const tstring& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

  tensorflow::DataType dtype_;
  bool channels_first_ = false;
  float mean_[3], std_[3];
};

REGISTER_KERNEL_BUILDER(Name(kDecodeJpegCropOp).Device(tensorflow::DEVICE_CPU), DecodeJpegCropOp);

}  // namespace
}  // namespace tfliquid
