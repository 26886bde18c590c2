// The item format of PCR records (records/item_format.h). "jpeg": an image's scans up to the group read, closed
// with the EOI marker, which the record does not store (docs/formats/pcr.md): a progressive JPEG at that fidelity.
#include "records/item_format.h"

namespace tfliquid {
namespace {

// Item i's parts (apart in the record) gathered into one string, closed with EOI: the progressive JPEG at the group.
absl::Status EmitProgressiveJpeg(const records::RecordPrefix& record, const char* buffer, uint32_t i, int64_t,
                                 tensorflow::Allocator* allocator, tensorflow::Tensor* out) {
  *out = tensorflow::Tensor(allocator, tensorflow::DT_STRING, tensorflow::TensorShape({}));
  tensorflow::tstring& jpeg = out->scalar<tensorflow::tstring>()();
  const uint64_t size = record.ItemSize(i);
  jpeg.resize_uninitialized(size + 2);
  record.CopyItem(buffer, i, jpeg.data());
  jpeg.data()[size] = '\xff';
  jpeg.data()[size + 1] = '\xd9';
  return absl::OkStatus();
}

const bool kRegistered =
    records::RegisterItemFormat("jpeg", {tensorflow::DT_STRING, /*pixels=*/false, &EmitProgressiveJpeg});

}  // namespace
}  // namespace tfliquid
