// The kernels of Liquid>DecodeJpegCrop, Liquid>DecodeJpegSampledCrop, Liquid>CropPixels and Liquid>CropWindow
// (jpeg_ops.cc): a window of a JPEG decoded at the scale its output needs (scaled_decode.h), or of decoded pixels,
// resized, flipped and normalised in one pass (docs/formats/pcr.md, "Decoding a crop").
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "common/kernel.h"
#include "jpeg/crop_window.h"
#include "jpeg/jpeg_ops.h"
#include "jpeg/scaled_decode.h"
#include "tensorflow/core/framework/bfloat16.h"

namespace tfliquid {
namespace {

// What starts an error message: the context naming the image's source, when given.
std::string Where(const tstring& context) { return context.empty() ? "" : absl::StrCat(context, ": "); }

// A pixel value as T: itself for uint8, else value * scale + shift ((value - mean) / std).
template <typename T>
T Converted(uint8_t value, float scale, float shift) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return value;
  } else {
    return static_cast<T>(value * scale + shift);
  }
}

// The image's height and width from the frame header of `contents`, or an error after `context`.
absl::Status FrameSizeOf(const tstring& contents, const tstring& context, int64_t* height, int64_t* width) {
  if (jpeg::FrameSize(reinterpret_cast<const uint8_t*>(contents.data()), contents.size(), height, width)) {
    return absl::OkStatus();
  }
  return tensorflow::errors::InvalidArgument(Where(context), "corrupt JPEG: no frame header giving the image's size");
}

// Writes RGB pixels [height, width, 3] to `out` as T, (value - mean) / std per channel, in HWC or CHW order. HWC
// runs over the values in blocks of 48 (16 pixels: whole channel triples and whole vector registers), each
// value's scale and shift taken from the block's pattern of them, so that the loop vectorises.
template <typename T>
void WriteAs(const uint8_t* pixels, int64_t height, int64_t width, const float* mean, const float* std,
             bool channels_first, T* out) {
  float scale[3], shift[3];  // value * scale + shift: a multiply and an add per value
  for (int c = 0; c < 3; ++c) scale[c] = 1.0f / std[c], shift[c] = -mean[c] / std[c];
  const int64_t plane = height * width;
  if (channels_first) {
    for (int c = 0; c < 3; ++c) {
      T* target = out + c * plane;
      for (int64_t p = 0; p < plane; ++p) target[p] = Converted<T>(pixels[3 * p + c], scale[c], shift[c]);
    }
    return;
  }
  constexpr int kBlock = 48;
  float block_scale[kBlock], block_shift[kBlock];
  for (int j = 0; j < kBlock; ++j) block_scale[j] = scale[j % 3], block_shift[j] = shift[j % 3];
  const int64_t count = plane * 3;
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (int j = 0; j < kBlock; ++j) out[i + j] = Converted<T>(pixels[i + j], block_scale[j], block_shift[j]);
  }
  for (; i < count; ++i) out[i] = Converted<T>(pixels[i], scale[i % 3], shift[i % 3]);
}

// The output attributes (dtype, mean, std, channels_first) and the decode of a window into that output.
class CroppedOutput {
 public:
  absl::Status Init(OpKernelConstruction* ctx) {
    TF_RETURN_IF_ERROR(ctx->GetAttr(kDtypeAttr, &dtype_));
    TF_RETURN_IF_ERROR(ctx->GetAttr(kChannelsFirstAttr, &channels_first_));
    std::vector<float> mean, std;
    TF_RETURN_IF_ERROR(ctx->GetAttr(kMeanAttr, &mean));
    TF_RETURN_IF_ERROR(ctx->GetAttr(kStdAttr, &std));
    if ((!mean.empty() && mean.size() != 3) || (!std.empty() && std.size() != 3)) {
      return tensorflow::errors::InvalidArgument("mean and std must hold 3 values (R, G, B) or none, got ", mean.size(),
                                                 " and ", std.size());
    }
    if (dtype_ == tensorflow::DT_UINT8 && !(mean.empty() && std.empty())) {
      return tensorflow::errors::InvalidArgument("mean and std normalise float32 or bfloat16 output, not uint8");
    }
    if (mean.empty()) mean.assign(3, 0.0f);
    if (std.empty()) std.assign(3, 1.0f);
    for (float value : std) {
      if (!(value > 0 && value < std::numeric_limits<float>::infinity())) {
        return tensorflow::errors::InvalidArgument("std must be finite and above 0, got ", value);
      }
    }
    for (int c = 0; c < 3; ++c) mean_[c] = mean[c], std_[c] = std[c];
    return absl::OkStatus();
  }

  // Output 0: the window of `contents` at the scale `size` needs, resized to it (0x0: not resized), flipped,
  // written as the attributes say. Errors start with `context` when it is not empty.
  void Decode(OpKernelContext* ctx, const tstring& contents, const jpeg::CropWindow& crop, bool flip, int64_t height,
              int64_t width, const tstring& context) const {
    OP_REQUIRES_OK(ctx, CheckSize(height, width, /*zero_is_as_decoded=*/true));
    jpeg::ScaledDecoder decoder;
    OP_REQUIRES_OK(ctx, Start(&decoder, contents, crop, height, width, context));
    const bool as_decoded = height == 0 && width == 0;
    const int64_t out_height = as_decoded ? decoder.height() : height, out_width = as_decoded ? decoder.width() : width;
    Tensor* image;
    OP_REQUIRES_OK(ctx, channels_first_ ? AllocateOutput(ctx, 0, {3, out_height, out_width}, &image)
                                        : AllocateOutput(ctx, 0, {out_height, out_width, 3}, &image));
    OP_REQUIRES_OK(ctx, DecodeInto(&decoder, flip, out_height, out_width, context, image->data()));
  }

  // Output 0 of [contents.size(), height, width, 3] (or [., 3, height, width]): image i the window and flip
  // `choose(i, image_height, image_width, &window, &flip)` gives of contents[i], as Decode writes it. Errors start
  // with contexts[i] when it is not empty.
  template <typename Choose>
  void DecodeBatch(OpKernelContext* ctx, const Tensor& contents, const Tensor& contexts, int64_t height, int64_t width,
                   Choose&& choose) const {
    OP_REQUIRES_OK(ctx, CheckSize(height, width, /*zero_is_as_decoded=*/false));
    const int64_t batch = contents.NumElements();
    Tensor* images;
    OP_REQUIRES_OK(ctx, channels_first_ ? AllocateOutput(ctx, 0, {batch, 3, height, width}, &images)
                                        : AllocateOutput(ctx, 0, {batch, height, width, 3}, &images));
    const int64_t image_bytes = height * width * 3 * tensorflow::DataTypeSize(dtype_);
    const auto each_contents = contents.flat<tstring>();
    const auto each_context = contexts.flat<tstring>();
    for (int64_t i = 0; i < batch; ++i) {
      const tstring& image_contents = each_contents(i);
      int64_t image_height, image_width;
      OP_REQUIRES_OK(ctx, FrameSizeOf(image_contents, each_context(i), &image_height, &image_width));
      jpeg::CropWindow window;
      bool flip;
      choose(i, image_height, image_width, &window, &flip);
      jpeg::ScaledDecoder decoder;
      OP_REQUIRES_OK(ctx, Start(&decoder, image_contents, window, height, width, each_context(i)));
      OP_REQUIRES_OK(ctx, DecodeInto(&decoder, flip, height, width, each_context(i),
                                     static_cast<char*>(images->data()) + i * image_bytes));
    }
  }

  // Output 0 of RGB pixels [image_height, image_width, 3]: their window resized to `size` (0x0: not resized),
  // flipped, written as the attributes say; the JPEG decode's output at 8/8 of the same window.
  void Crop(OpKernelContext* ctx, const uint8_t* image, int64_t image_width, const jpeg::CropWindow& crop, bool flip,
            int64_t height, int64_t width) const {
    OP_REQUIRES_OK(ctx, CheckSize(height, width, /*zero_is_as_decoded=*/true));
    const bool as_window = height == 0 && width == 0;
    const int64_t out_height = as_window ? crop.height : height, out_width = as_window ? crop.width : width;
    Tensor* output;
    OP_REQUIRES_OK(ctx, channels_first_ ? AllocateOutput(ctx, 0, {3, out_height, out_width}, &output)
                                        : AllocateOutput(ctx, 0, {out_height, out_width, 3}, &output));
    OP_REQUIRES_OK(ctx, WriteImage(out_height, out_width, output->data(), [&](uint8_t* pixels) {
                     const uint8_t* first = image + (crop.y * image_width + crop.x) * 3;
                     const size_t row_bytes = static_cast<size_t>(crop.width) * 3;
                     if (as_window || crop.width != image_width) {  // the window's rows, next to each other
                       std::vector<uint8_t> window(as_window ? 0 : row_bytes * static_cast<size_t>(crop.height));
                       uint8_t* rows = as_window ? pixels : window.data();
                       for (int64_t y = 0; y < crop.height; ++y) {
                         std::memcpy(rows + y * row_bytes, first + y * image_width * 3, row_bytes);
                       }
                       if (as_window && flip) jpeg::MirrorRows(pixels, out_height, out_width);
                       if (!as_window) {
                         jpeg::ResizeBilinear(rows, crop.height, crop.width, pixels, out_height, out_width, flip);
                       }
                     } else {
                       jpeg::ResizeBilinear(first, crop.height, crop.width, pixels, out_height, out_width, flip);
                     }
                     return absl::OkStatus();
                   }));
  }

 private:
  static absl::Status CheckSize(int64_t height, int64_t width, bool zero_is_as_decoded) {
    if ((zero_is_as_decoded && height == 0 && width == 0) ||
        (height >= 1 && width >= 1 && height <= kMaxImageSide && width <= kMaxImageSide)) {
      return absl::OkStatus();
    }
    return tensorflow::errors::InvalidArgument("size must be in 1x1..", kMaxImageSide, "x", kMaxImageSide,
                                               zero_is_as_decoded ? " (or 0x0: the window as it is)" : "", ", got ",
                                               height, "x", width);
  }

  // Starts `decoder` on the window of `contents` at the scale height x width needs (0x0: 8/8, the window as
  // decoded).
  static absl::Status Start(jpeg::ScaledDecoder* decoder, const tstring& contents, const jpeg::CropWindow& crop,
                            int64_t height, int64_t width, const tstring& context) {
    std::string error;
    constexpr int64_t kLargest = std::numeric_limits<int64_t>::max();  // a size no scale reaches: 8/8
    const bool as_decoded = height == 0 && width == 0;
    const bool started = as_decoded ? decoder->Start(Bytes(contents), contents.size(), kLargest, kLargest, &error,
                                                     /*no_finer_than_coded=*/false, &crop)
                                    : decoder->Start(Bytes(contents), contents.size(), height, width, &error,
                                                     /*no_finer_than_coded=*/true, &crop);
    if (started) return absl::OkStatus();
    return tensorflow::errors::InvalidArgument(Where(context),
                                               decoder->window_outside() ? "" : "corrupt JPEG: ", error);
  }

  // The started decode, resized to out_height x out_width and flipped, written to `out` as the attributes say.
  absl::Status DecodeInto(jpeg::ScaledDecoder* decoder, bool flip, int64_t out_height, int64_t out_width,
                          const tstring& context, void* out) const {
    return WriteImage(out_height, out_width, out, [&](uint8_t* pixels) {
      std::string error;
      return decoder->DecodeResized(pixels, out_height, out_width, &error, flip)
                 ? absl::OkStatus()
                 : tensorflow::errors::InvalidArgument(Where(context), "corrupt JPEG: ", error);
    });
  }

  // Writes one image of out_height x out_width to `out` as the attributes say, from the RGB pixels of that size
  // (flipped already) `fill(pixels)` writes (returning its error).
  template <typename Fill>
  absl::Status WriteImage(int64_t out_height, int64_t out_width, void* out, Fill&& fill) const {
    // uint8 HWC goes straight to the output; anything else through the RGB of the resized window.
    const bool direct = dtype_ == tensorflow::DT_UINT8 && !channels_first_;
    std::vector<uint8_t> resized(direct ? 0 : static_cast<size_t>(out_height * out_width * 3));
    uint8_t* pixels = direct ? static_cast<uint8_t*>(out) : resized.data();
    TF_RETURN_IF_ERROR(fill(pixels));
    if (direct) return absl::OkStatus();
    switch (dtype_) {
      case tensorflow::DT_UINT8:
        WriteAs(pixels, out_height, out_width, mean_, std_, channels_first_, static_cast<uint8_t*>(out));
        break;
      case tensorflow::DT_FLOAT:
        WriteAs(pixels, out_height, out_width, mean_, std_, channels_first_, static_cast<float*>(out));
        break;
      default:
        WriteAs(pixels, out_height, out_width, mean_, std_, channels_first_, static_cast<tensorflow::bfloat16*>(out));
    }
    return absl::OkStatus();
  }

  static const uint8_t* Bytes(const tstring& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

  tensorflow::DataType dtype_ = tensorflow::DT_UINT8;
  bool channels_first_ = false;
  float mean_[3] = {0, 0, 0}, std_[3] = {1, 1, 1};
};

// The crop, scale, ratio and fraction attributes: how a window is drawn or placed; and random_flip, where the op
// has it (Liquid>CropWindow gives the flip drawn, as if it were true).
class WindowChoice {
 public:
  absl::Status Init(OpKernelConstruction* ctx) {
    if (ctx->HasAttr(kRandomFlipAttr)) TF_RETURN_IF_ERROR(ctx->GetAttr(kRandomFlipAttr, &random_flip_));
    std::string crop;
    std::vector<float> scale, ratio;
    float fraction;
    TF_RETURN_IF_ERROR(ctx->GetAttr(kCropAttr, &crop));
    TF_RETURN_IF_ERROR(ctx->GetAttr(kScaleAttr, &scale));
    TF_RETURN_IF_ERROR(ctx->GetAttr(kRatioAttr, &ratio));
    TF_RETURN_IF_ERROR(ctx->GetAttr(kFractionAttr, &fraction));
    kind_ = crop == "random" ? Kind::kRandom : crop == "center" ? Kind::kCenter : Kind::kWhole;
    constexpr float kInfinity = std::numeric_limits<float>::infinity();
    if (scale.size() != 2 || !(0 < scale[0] && scale[0] <= scale[1] && scale[1] <= 1)) {
      return tensorflow::errors::InvalidArgument("scale must be (low, high) with 0 < low <= high <= 1");
    }
    if (ratio.size() != 2 || !(0 < ratio[0] && ratio[0] <= ratio[1] && ratio[1] < kInfinity)) {
      return tensorflow::errors::InvalidArgument("ratio must be (low, high) with 0 < low <= high, finite");
    }
    if (!(0 < fraction && fraction <= 1)) {
      return tensorflow::errors::InvalidArgument("fraction must be in (0, 1], got ", fraction);
    }
    // As doubles of the attributes' float values, as the reference (crop_reference.py) takes them.
    parameters_ = {scale[0], scale[1], ratio[0], ratio[1]};
    fraction_ = fraction;
    return absl::OkStatus();
  }

  // The window of an image of height x width and whether it is flipped: for a random crop, the first draw of the
  // seed (seed0, seed1) decides the flip (below one half: flipped, where random_flip), the next ones the window;
  // 'whole' is the whole image.
  void Choose(int64_t height, int64_t width, int64_t seed0, int64_t seed1, jpeg::CropWindow* window, bool* flip) const {
    *flip = false;
    if (kind_ == Kind::kWhole) {
      *window = {0, 0, height, width};
      return;
    }
    if (kind_ == Kind::kCenter) {
      *window = jpeg::CenterCropWindow(height, width, fraction_);
      return;
    }
    jpeg::CropDraws draws(seed0, seed1);
    *flip = draws.Uniform() < 0.5 && random_flip_;
    *window = jpeg::RandomResizedCropWindow(height, width, parameters_, &draws);
  }

 private:
  enum class Kind { kRandom, kCenter, kWhole };
  Kind kind_ = Kind::kRandom;
  bool random_flip_ = true;
  jpeg::RandomCropParameters parameters_;
  double fraction_ = 0.875;
};

// After every input's rank is checked (so that a wrong rank is reported for the input that has it): a vector
// input's length.
absl::Status CheckLength(absl::string_view name, const Tensor& input, int64_t length) {
  if (input.NumElements() != length) {
    return tensorflow::errors::InvalidArgument(name, " must hold ", length, " values, got ", input.NumElements());
  }
  return absl::OkStatus();
}

// The inputs after the first of Liquid>DecodeJpegCrop and Liquid>CropPixels: window [4], size [2], flip and
// context. Read after the first input's rank is checked, their ranks before their lengths.
struct WindowInputs {
  absl::Status Read(OpKernelContext* ctx) {
    const Tensor *window_input, *size_input;
    TF_RETURN_IF_ERROR(InputWithRank(ctx, "window", 1, &window_input));
    TF_RETURN_IF_ERROR(InputWithRank(ctx, "size", 1, &size_input));
    TF_RETURN_IF_ERROR(ScalarInput(ctx, "flip", &flip));
    TF_RETURN_IF_ERROR(ScalarInput(ctx, "context", &context));
    TF_RETURN_IF_ERROR(CheckLength("window", *window_input, 4));
    TF_RETURN_IF_ERROR(CheckLength("size", *size_input, 2));
    const auto w = window_input->vec<int64_t>();
    window = {w(0), w(1), w(2), w(3)};
    height = size_input->vec<int64_t>()(0), width = size_input->vec<int64_t>()(1);
    return absl::OkStatus();
  }

  jpeg::CropWindow window;
  int64_t height = 0, width = 0;  // the output's size; 0x0: the window's
  bool flip = false;
  const tstring* context = nullptr;
};

class DecodeJpegCropOp : public OpKernel {
 public:
  explicit DecodeJpegCropOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, output_.Init(ctx)); }

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents;
    WindowInputs in;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OP_REQUIRES_OK(ctx, in.Read(ctx));
    output_.Decode(ctx, *contents, in.window, in.flip, in.height, in.width, *in.context);
  }

 private:
  CroppedOutput output_;
};

class DecodeJpegSampledCropOp : public OpKernel {
 public:
  explicit DecodeJpegSampledCropOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, output_.Init(ctx));
    OP_REQUIRES_OK(ctx, choice_.Init(ctx));
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring *contents, *context;
    const Tensor *seed, *size;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "seed", 1, &seed));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "size", 1, &size));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "context", &context));
    OP_REQUIRES_OK(ctx, CheckLength("seed", *seed, 2));
    OP_REQUIRES_OK(ctx, CheckLength("size", *size, 2));
    int64_t height, width;
    OP_REQUIRES_OK(ctx, FrameSizeOf(*contents, *context, &height, &width));
    jpeg::CropWindow window;
    bool flip;
    choice_.Choose(height, width, seed->vec<int64_t>()(0), seed->vec<int64_t>()(1), &window, &flip);
    output_.Decode(ctx, *contents, window, flip, size->vec<int64_t>()(0), size->vec<int64_t>()(1), *context);
  }

 private:
  CroppedOutput output_;
  WindowChoice choice_;
};

class DecodeJpegCropBatchOp : public OpKernel {
 public:
  explicit DecodeJpegCropBatchOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, output_.Init(ctx));
    OP_REQUIRES_OK(ctx, choice_.Init(ctx));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor *contents, *seeds, *size, *contexts;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "contents", 1, &contents));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "seeds", 2, &seeds));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "size", 1, &size));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "contexts", 1, &contexts));
    const int64_t batch = contents->NumElements();
    OP_REQUIRES(ctx, seeds->dim_size(0) == batch && seeds->dim_size(1) == 2 && contexts->NumElements() == batch,
                tensorflow::errors::InvalidArgument("seeds must be [", batch, ", 2] and contexts [", batch, "] for ",
                                                    batch, " contents, got ", seeds->shape().DebugString(), " and ",
                                                    contexts->shape().DebugString()));
    OP_REQUIRES_OK(ctx, CheckLength("size", *size, 2));
    const auto each_seed = seeds->matrix<int64_t>();
    output_.DecodeBatch(ctx, *contents, *contexts, size->vec<int64_t>()(0), size->vec<int64_t>()(1),
                        [&](int64_t i, int64_t height, int64_t width, jpeg::CropWindow* window, bool* flip) {
                          choice_.Choose(height, width, each_seed(i, 0), each_seed(i, 1), window, flip);
                        });
  }

 private:
  CroppedOutput output_;
  WindowChoice choice_;
};

class CropPixelsOp : public OpKernel {
 public:
  explicit CropPixelsOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, output_.Init(ctx)); }

  void Compute(OpKernelContext* ctx) override {
    const Tensor* image;
    WindowInputs in;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "image", 3, &image));
    OP_REQUIRES_OK(ctx, in.Read(ctx));
    const int64_t height = image->dim_size(0), width = image->dim_size(1);
    OP_REQUIRES(
        ctx, image->dim_size(2) == 3,
        tensorflow::errors::InvalidArgument(Where(*in.context), "image must be RGB [height, width, 3], got shape ",
                                            image->shape().DebugString()));
    const jpeg::CropWindow& crop = in.window;
    OP_REQUIRES(ctx,
                crop.y >= 0 && crop.x >= 0 && crop.height >= 1 && crop.width >= 1 && crop.y <= height - crop.height &&
                    crop.x <= width - crop.width,
                tensorflow::errors::InvalidArgument(Where(*in.context), "window (y ", crop.y, ", x ", crop.x,
                                                    ", height ", crop.height, ", width ", crop.width,
                                                    ") is not inside the ", height, "x", width, " image"));
    output_.Crop(ctx, image->flat<uint8_t>().data(), width, crop, in.flip, in.height, in.width);
  }

 private:
  CroppedOutput output_;
};

class CropWindowOp : public OpKernel {
 public:
  explicit CropWindowOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, choice_.Init(ctx)); }

  void Compute(OpKernelContext* ctx) override {
    const Tensor *image_size, *seed;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "image_size", 1, &image_size));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "seed", 1, &seed));
    OP_REQUIRES_OK(ctx, CheckLength("image_size", *image_size, 2));
    OP_REQUIRES_OK(ctx, CheckLength("seed", *seed, 2));
    const int64_t height = image_size->vec<int64_t>()(0), width = image_size->vec<int64_t>()(1);
    OP_REQUIRES(ctx, height >= 1 && width >= 1 && height <= kMaxImageSide && width <= kMaxImageSide,
                tensorflow::errors::InvalidArgument("image_size must be in 1x1..", kMaxImageSide, "x", kMaxImageSide,
                                                    ", got ", height, "x", width));
    jpeg::CropWindow window;
    bool flip;
    choice_.Choose(height, width, seed->vec<int64_t>()(0), seed->vec<int64_t>()(1), &window, &flip);
    Tensor *window_output, *flip_output;
    OP_REQUIRES_OK(ctx, AllocateOutput(ctx, 0, {4}, &window_output));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &flip_output));
    auto values = window_output->vec<int64_t>();
    values(0) = window.y, values(1) = window.x, values(2) = window.height, values(3) = window.width;
    flip_output->scalar<bool>()() = flip;
  }

 private:
  WindowChoice choice_;
};

REGISTER_KERNEL_BUILDER(Name(kDecodeJpegCropOp).Device(tensorflow::DEVICE_CPU), DecodeJpegCropOp);
REGISTER_KERNEL_BUILDER(Name(kDecodeJpegSampledCropOp).Device(tensorflow::DEVICE_CPU), DecodeJpegSampledCropOp);
REGISTER_KERNEL_BUILDER(Name(kDecodeJpegCropBatchOp).Device(tensorflow::DEVICE_CPU), DecodeJpegCropBatchOp);
REGISTER_KERNEL_BUILDER(Name(kCropPixelsOp).Device(tensorflow::DEVICE_CPU), CropPixelsOp);
REGISTER_KERNEL_BUILDER(Name(kCropWindowOp).Device(tensorflow::DEVICE_CPU), CropWindowOp);

}  // namespace
}  // namespace tfliquid
