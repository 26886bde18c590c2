// How a record's items leave the reader (the item_format attribute of Liquid>RecordDataset): as their bytes, or
// as what a capability makes of them. The records layer knows no image format; each capability registers its own
// (PCR: the progressive JPEG closed with EOI, ops/pcr/jpeg_item.cc; Liquid: a raw item's pixels,
// ops/liquid/raw_item.cc) under a name, at library load.
#ifndef TFLIQUID_OPS_RECORDS_ITEM_FORMAT_H_
#define TFLIQUID_OPS_RECORDS_ITEM_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "records/record.h"
#include "tensorflow/core/framework/allocator.h"
#include "tensorflow/core/framework/partial_tensor_shape.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.pb.h"

namespace tfliquid {
namespace records {

struct ItemFormat {
  tensorflow::DataType dtype;
  // The shape of every item: a scalar, or [H, W, channels] (`channels` is the reader's item_channels).
  bool pixels;
  // Item i of `record` (whose bytes are `buffer`) as a tensor from `allocator`. Errors read "offset N: ...",
  // N counted in the record; the reader adds its name.
  absl::Status (*emit)(const RecordPrefix& record, const char* buffer, uint32_t i, int64_t channels,
                       tensorflow::Allocator* allocator, tensorflow::Tensor* out);

  tensorflow::PartialTensorShape Shape(int64_t channels) const {
    return pixels ? tensorflow::PartialTensorShape({-1, -1, channels}) : tensorflow::PartialTensorShape({});
  }
};

// Registers `format` under `name`; returns true, so that a file can register at load time:
//   static const bool kRegistered = RegisterItemFormat("jpeg", {...});
bool RegisterItemFormat(const std::string& name, ItemFormat format);

// The format registered under `name`, or InvalidArgument listing the registered names.
absl::Status FindItemFormat(const std::string& name, const ItemFormat** format);

}  // namespace records
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_RECORDS_ITEM_FORMAT_H_
