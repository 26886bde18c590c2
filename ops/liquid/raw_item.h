// The Liquid raw item (docs/formats/liquid.md): a 16-byte header ("\x89RAW", then height, width and channels as
// little-endian uint32) and the pixels, uint8 in row-major HWC order. Pure C++: Liquid>DecodeRawItem and the record
// reader (the item format "raw", liquid_kernels.cc) both check items here.
#ifndef TFLIQUID_OPS_LIQUID_RAW_ITEM_H_
#define TFLIQUID_OPS_LIQUID_RAW_ITEM_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace tfliquid {
namespace liquid {

inline constexpr size_t kRawItemHeaderSize = 16;

struct RawItemShape {
  uint32_t height = 0, width = 0, channels = 0;
  uint64_t pixel_bytes() const { return static_cast<uint64_t>(height) * width * channels; }
};

// The shape of the raw item data[0, size), checked: its magic, sides of 1..65536 pixels, `channels` channels, and
// exactly the pixel bytes its header promises. Errors are InvalidArgument and read "offset N: what went wrong",
// with N counted from `base_offset` (the item's offset in its file, or 0 for an item on its own).
absl::Status ParseRawItem(const char* data, size_t size, uint32_t channels, uint64_t base_offset, RawItemShape* shape);

}  // namespace liquid
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_LIQUID_RAW_ITEM_H_
