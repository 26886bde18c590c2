#include "liquid/raw_item.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace tfliquid {
namespace liquid {
namespace {

constexpr char kRawMagic[4] = {'\x89', 'R', 'A', 'W'};
constexpr uint32_t kMaxSide = 1u << 16;

uint32_t LoadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian host
  return v;
}

}  // namespace

absl::Status ParseRawItem(const char* data, size_t size, uint32_t channels, uint64_t base_offset, RawItemShape* shape) {
  if (size < kRawItemHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat("offset ", base_offset + size, ": ends inside its 16-byte header"));
  }
  if (std::memcmp(data, kRawMagic, sizeof(kRawMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("offset ", base_offset, ": bad magic: not a raw item"));
  }
  shape->height = LoadLe32(data + 4);
  shape->width = LoadLe32(data + 8);
  shape->channels = LoadLe32(data + 12);
  if (shape->height < 1 || shape->width < 1 || shape->height > kMaxSide || shape->width > kMaxSide) {
    return absl::InvalidArgumentError(absl::StrCat("offset ", base_offset + 4, ": ", shape->height, "x", shape->width,
                                                   " is outside 1..65536 pixels a side"));
  }
  if (shape->channels != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset ", base_offset + 12, ": ", shape->channels, " channels, the dataset has ", channels));
  }
  if (size - kRawItemHeaderSize != shape->pixel_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("offset ", base_offset + kRawItemHeaderSize, ": ",
                                                   size - kRawItemHeaderSize, " pixel bytes for ", shape->height, "x",
                                                   shape->width, "x", shape->channels));
  }
  return absl::OkStatus();
}

}  // namespace liquid
}  // namespace tfliquid
