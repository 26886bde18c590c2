// The item formats of PCR records (records/item_format.h). "jpeg": an image's scans up to the group read, closed
// with the EOI marker, which the record does not store (docs/formats/pcr.md): a progressive JPEG at that fidelity.
// "jpeg_pixels": that JPEG decoded, full size, uint8 RGB: decoded by the reader as it emits the image, the
// pixels of tf.io.decode_jpeg without a map of its own after the reader.
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "jpeg/scaled_decode.h"
#include "records/item_format.h"

namespace tfliquid {
namespace {

// Item i's parts (apart in the record) gathered into `jpeg`, closed with EOI: the progressive JPEG at the group.
template <typename String>
void GatherJpeg(const records::RecordPrefix& record, const char* buffer, uint32_t i, String* jpeg) {
  const uint64_t size = record.ItemSize(i);
  jpeg->resize(size + 2);
  record.CopyItem(buffer, i, jpeg->data());
  jpeg->data()[size] = '\xff';
  jpeg->data()[size + 1] = '\xd9';
}

absl::Status EmitProgressiveJpeg(const records::RecordPrefix& record, const char* buffer, uint32_t i, int64_t,
                                 tensorflow::Allocator* allocator, tensorflow::Tensor* out) {
  *out = tensorflow::Tensor(allocator, tensorflow::DT_STRING, tensorflow::TensorShape({}));
  GatherJpeg(record, buffer, i, &out->scalar<tensorflow::tstring>()());
  return absl::OkStatus();
}

absl::Status EmitPixels(const records::RecordPrefix& record, const char* buffer, uint32_t i, int64_t channels,
                        tensorflow::Allocator* allocator, tensorflow::Tensor* out) {
  if (channels != 3) return absl::InvalidArgumentError("item_format 'jpeg_pixels' emits RGB: item_channels 3");
  std::string jpeg;
  GatherJpeg(record, buffer, i, &jpeg);
  const auto* data = reinterpret_cast<const uint8_t*>(jpeg.data());
  constexpr int64_t kAnySize = std::numeric_limits<int32_t>::max();  // no target: the full size
  jpeg::ScaledDecoder decoder;
  std::string error;
  if (!decoder.Start(data, jpeg.size(), kAnySize, kAnySize, &error, /*no_finer_than_coded=*/false)) {
    return absl::DataLossError(absl::StrCat("image ", i, ": corrupt JPEG: ", error));
  }
  *out = tensorflow::Tensor(allocator, tensorflow::DT_UINT8,
                            tensorflow::TensorShape({decoder.height(), decoder.width(), 3}));
  if (!decoder.Decode(out->flat<uint8_t>().data(), &error)) {
    return absl::DataLossError(absl::StrCat("image ", i, ": corrupt JPEG: ", error));
  }
  return absl::OkStatus();
}

const bool kRegistered =
    records::RegisterItemFormat("jpeg", {tensorflow::DT_STRING, /*pixels=*/false, &EmitProgressiveJpeg}) &&
    records::RegisterItemFormat("jpeg_pixels", {tensorflow::DT_UINT8, /*pixels=*/true, &EmitPixels});

}  // namespace
}  // namespace tfliquid
