// Kernels of the JPEG ops (jpeg_ops.cc) over the pure C++ layers scan_split and transcode.
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "common/kernel.h"
#include "jpeg/jpeg_ops.h"
#include "jpeg/scaled_decode.h"
#include "jpeg/scan_script.h"
#include "jpeg/scan_split.h"
#include "jpeg/transcode.h"

namespace tfliquid {
namespace {

const uint8_t* Bytes(const tstring& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Splits `jpeg` and writes the scan ends to output `index`; errors name `source`.
void OutputScanEnds(OpKernelContext* ctx, int index, const char* data, size_t size, const std::string& source) {
  const jpeg::ScanSplitResult split = jpeg::ScanEnds(reinterpret_cast<const uint8_t*>(data), size);
  OP_REQUIRES(ctx, split.ok, tensorflow::errors::InvalidArgument(source, ": ", split.error));
  Tensor* ends;
  OP_REQUIRES_OK(ctx, AllocateOutput(ctx, index, {static_cast<int64_t>(split.scan_ends.size())}, &ends));
  auto flat = ends->vec<int64_t>();
  for (size_t k = 0; k < split.scan_ends.size(); ++k) flat(k) = static_cast<int64_t>(split.scan_ends[k]);
}

class JpegToProgressiveOp : public OpKernel {
 public:
  explicit JpegToProgressiveOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kKeepMarkersAttr, &keep_markers_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kRescriptProgressiveAttr, &rescript_progressive_));
    std::string script, error;
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kScanScriptAttr, &script));
    OP_REQUIRES(ctx, jpeg::ParseScanScript(script, &script_, &error), tensorflow::errors::InvalidArgument(error));
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring *contents_input, *source_input;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents_input));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "source", &source_input));
    const tstring& contents = *contents_input;
    const std::string source = source_input->empty() ? std::string("<jpeg>") : std::string(*source_input);
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    tstring& progressive = output->scalar<tstring>()();
    if (!rescript_progressive_ && jpeg::IsProgressive(Bytes(contents), contents.size())) {
      // Kept with the encoder's own scan script, once every scan is known to read whole: a damaged one would fail
      // at training time, far from its source. The scans are counted from the markers first: a file of too many
      // scans (each of which may be a pass over every block, for a few bytes) is refused before any is decoded.
      const size_t excess_scan = jpeg::ExcessScanOffset(Bytes(contents), contents.size());
      OP_REQUIRES(ctx, excess_scan == 0,
                  tensorflow::errors::InvalidArgument(source, ": offset ", excess_scan, ": more than ", jpeg::kMaxScans,
                                                      " scans"));
      std::string error;
      OP_REQUIRES(ctx, jpeg::CheckCoefficients(Bytes(contents), contents.size(), &error),
                  tensorflow::errors::InvalidArgument(source, ": corrupt progressive JPEG: ", error));
      progressive = contents;
    } else {
      std::string transcoded, error;
      OP_REQUIRES(
          ctx,
          jpeg::TranscodeToProgressive(Bytes(contents), contents.size(), keep_markers_, script_, &transcoded, &error),
          tensorflow::errors::InvalidArgument(source, ": cannot make the JPEG progressive: ", error));
      progressive = std::move(transcoded);
    }
    OutputScanEnds(ctx, 1, progressive.data(), progressive.size(), source);
  }

 private:
  bool keep_markers_;
  bool rescript_progressive_;
  jpeg::ScanScript script_;
};

class JpegScanEndsOp : public OpKernel {
 public:
  explicit JpegScanEndsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OutputScanEnds(ctx, 0, contents->data(), contents->size(), "<jpeg>");
  }
};

class CheckJpegOp : public OpKernel {
 public:
  explicit CheckJpegOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring *contents, *source;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "source", &source));
    std::string error;
    // Without a source the caller names the input itself, before the message.
    OP_REQUIRES(ctx, jpeg::CheckCoefficients(Bytes(*contents), contents->size(), &error),
                tensorflow::errors::InvalidArgument(source->empty() ? "" : absl::StrCat(*source, ": "),
                                                    "corrupt JPEG: ", error));
    ctx->set_output(0, ctx->input(0));
  }
};

class DecodeJpegScaledOp : public OpKernel {
 public:
  explicit DecodeJpegScaledOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kResizeAttr, &resize_));
  }

  void Compute(OpKernelContext* ctx) override {
    const tstring* contents;
    int64_t height, width;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "contents", &contents));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "target_height", &height));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "target_width", &width));
    std::string corrupt = "corrupt JPEG: ";
    if (ctx->num_inputs() > 3) {  // Liquid>DecodeJpegScaledInContext
      const tstring* context;
      OP_REQUIRES_OK(ctx, ScalarInput(ctx, "context", &context));
      if (!context->empty()) corrupt = absl::StrCat(*context, ": ", corrupt);
    }
    const bool full_size = height == 0 && width == 0;
    OP_REQUIRES(
        ctx, full_size || (height >= 1 && width >= 1 && height <= kMaxImageSide && width <= kMaxImageSide),
        tensorflow::errors::InvalidArgument("the target size must be in 1x1..", kMaxImageSide, "x", kMaxImageSide,
                                            " (or 0x0: the full size), got ", height, "x", width));
    jpeg::ScaledDecoder decoder;
    std::string error;
    constexpr int64_t kLargest = std::numeric_limits<int64_t>::max();  // a target no scale reaches: 8/8
    OP_REQUIRES(ctx,
                full_size ? decoder.Start(Bytes(*contents), contents->size(), kLargest, kLargest, &error,
                                          /*no_finer_than_coded=*/false)
                          : decoder.Start(Bytes(*contents), contents->size(), height, width, &error),
                tensorflow::errors::InvalidArgument(corrupt, error));
    const bool resized = resize_ && !full_size && (decoder.height() != height || decoder.width() != width);
    Tensor* image;
    OP_REQUIRES_OK(ctx, resized ? AllocateOutput(ctx, 0, {height, width, 3}, &image)
                                : AllocateOutput(ctx, 0, {decoder.height(), decoder.width(), 3}, &image));
    OP_REQUIRES(ctx,
                decoder.DecodeResized(image->flat<uint8_t>().data(), image->dim_size(0), image->dim_size(1), &error),
                tensorflow::errors::InvalidArgument(corrupt, error));
  }

 private:
  bool resize_ = false;
};

// Parses its scan_script attribute, as JpegToProgressiveOp does when it is built: a conversion checks its script
// before it writes anything.
class CheckScanScriptOp : public OpKernel {
 public:
  explicit CheckScanScriptOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string text, error;
    jpeg::ScanScript script;
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kScanScriptAttr, &text));
    OP_REQUIRES(ctx, jpeg::ParseScanScript(text, &script, &error), tensorflow::errors::InvalidArgument(error));
  }

  void Compute(OpKernelContext*) override {}
};

REGISTER_KERNEL_BUILDER(Name(kJpegToProgressiveOp).Device(tensorflow::DEVICE_CPU), JpegToProgressiveOp);
REGISTER_KERNEL_BUILDER(Name(kJpegScanEndsOp).Device(tensorflow::DEVICE_CPU), JpegScanEndsOp);
REGISTER_KERNEL_BUILDER(Name(kCheckJpegOp).Device(tensorflow::DEVICE_CPU), CheckJpegOp);
REGISTER_KERNEL_BUILDER(Name(kCheckScanScriptOp).Device(tensorflow::DEVICE_CPU), CheckScanScriptOp);
REGISTER_KERNEL_BUILDER(Name(kDecodeJpegScaledOp).Device(tensorflow::DEVICE_CPU), DecodeJpegScaledOp);
REGISTER_KERNEL_BUILDER(Name(kDecodeJpegScaledInContextOp).Device(tensorflow::DEVICE_CPU), DecodeJpegScaledOp);

}  // namespace
}  // namespace tfliquid
