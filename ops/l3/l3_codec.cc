// The L3 encoder and header parser (docs/formats/l3.md); the decoder is l3_decoder.cc.
#include "l3/l3_codec.h"

#include <cstring>

#include "l3/l3_layout.h"

namespace tfliquid::l3 {
namespace {

uint32_t LoadLe32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }

void StoreLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

int BitLength(unsigned value) { return value == 0 ? 0 : 32 - __builtin_clz(value); }

class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}
  void Put(uint32_t value, int bits) {  // most significant first
    for (int i = bits - 1; i >= 0; --i) {
      acc_ = static_cast<uint8_t>(acc_ << 1 | ((value >> i) & 1));
      if (++n_ == 8) Flush();
    }
  }
  void Align() {
    if (n_) {
      acc_ = static_cast<uint8_t>(acc_ << (8 - n_));
      Flush();
    }
  }

 private:
  void Flush() {
    out_->push_back(static_cast<char>(acc_));
    acc_ = 0;
    n_ = 0;
  }
  std::string* out_;
  uint8_t acc_ = 0;
  int n_ = 0;
};

void EncodeRow(const uint8_t* residuals, uint32_t w, const Params& params, std::string* out) {
  const uint32_t step = params.segment ? params.segment : w;
  std::vector<uint8_t> coded(w);
  std::vector<int> widths;
  BitWriter bits(out);
  for (uint32_t x0 = 0; x0 < w; x0 += step) {
    const uint32_t x1 = std::min(w, x0 + step);
    int base = 0;
    if (!params.zigzag) {
      base = 127;
      for (uint32_t x = x0; x < x1; ++x) base = std::min(base, static_cast<int>(static_cast<int8_t>(residuals[x])));
    }
    unsigned largest = 0;
    for (uint32_t x = x0; x < x1; ++x) {
      const int s = static_cast<int8_t>(residuals[x]);
      coded[x] = params.zigzag ? static_cast<uint8_t>((static_cast<unsigned>(s) << 1) ^ (s >> 7)) : static_cast<uint8_t>(s - base);
      largest = std::max<unsigned>(largest, coded[x]);
    }
    widths.push_back(BitLength(largest));
    bits.Put(widths.back(), 4);
    if (!params.zigzag) bits.Put(static_cast<uint8_t>(base), 8);
  }
  for (uint32_t x0 = 0, k = 0; x0 < w; x0 += step, ++k)
    for (uint32_t x = x0; x < std::min(w, x0 + step); ++x) bits.Put(coded[x], widths[k]);
  bits.Align();
}

}  // namespace

bool ProfileParams(const std::string& profile, uint32_t height, uint32_t width, int channels, Params* params,
                   std::string* error) {
  if (profile == "default") {
    *params = {channels, channels >= 3, true, 8, 128};
  } else if (profile == "paper") {
    const uint64_t pixels = static_cast<uint64_t>(height) * width;
    *params = {channels, false, false, 0, pixels <= 1080 * 720 ? 32 : pixels <= 1920 * 1080 ? 64 : 128};
  } else {
    *error = "profile must be 'default' or 'paper', got '" + profile + "'";
    return false;
  }
  return true;
}

bool Encode(const uint8_t* pixels, uint32_t height, uint32_t width, const Params& params, std::string* out,
            std::string* error) {
  const int channels = params.channels;
  if (channels != 1 && channels != 3 && channels != 4) return Fail(error, 0, "channels must be 1, 3 or 4");
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide ||
      static_cast<uint64_t>(height) * width * channels > kMaxBytes)
    return Fail(error, 0, "image outside the format's limits");
  auto value = [&](int c, uint32_t y, uint32_t x) {
    const uint8_t* px = pixels + (static_cast<uint64_t>(y) * width + x) * channels;
    return static_cast<uint8_t>(params.subtract_green && (c == 0 || c == 2) ? px[c] - px[1] : px[c]);
  };
  const std::vector<Patch> grid = PatchGrid(height, width, params.patch);
  std::string payload;
  std::vector<uint32_t> offsets{0};
  std::vector<uint8_t> residuals;
  for (int c = 0; c < channels; ++c) {
    for (const Patch& p : grid) {
      for (uint32_t x = 0; x < p.w; ++x) payload.push_back(static_cast<char>(value(c, p.y0, p.x0 + x)));
      residuals.resize(p.w);
      for (uint32_t y = 1; y < p.h; ++y) {
        auto prev = [&](uint32_t x) { return value(c, p.y0 + y - 1, p.x0 + x); };
        for (uint32_t x = 0; x < p.w; ++x) {
          const uint8_t predicted = PaethOfPrevious(prev(x > 0 ? x - 1 : x), prev(x), prev(x + 1 < p.w ? x + 1 : x));
          residuals[x] = static_cast<uint8_t>(value(c, p.y0 + y, p.x0 + x) - predicted);
        }
        EncodeRow(residuals.data(), p.w, params, &payload);
      }
      if (payload.size() > UINT32_MAX) return Fail(error, 0, "payload exceeds 4 GiB");
      offsets.push_back(static_cast<uint32_t>(payload.size()));
    }
  }
  out->assign(kMagic, sizeof(kMagic));
  out->push_back(1);
  out->push_back(static_cast<char>(channels));
  out->push_back(static_cast<char>((params.subtract_green ? kFlagSubtractGreen : 0) | (params.zigzag ? kFlagZigzag : 0)));
  out->push_back(static_cast<char>(params.segment));
  StoreLe(out, width, 4);
  StoreLe(out, height, 4);
  StoreLe(out, params.patch, 2);
  StoreLe(out, 0, 2);
  for (uint32_t offset : offsets) StoreLe(out, offset, 4);
  out->append(payload);
  return true;
}

bool ParseHeader(const uint8_t* data, size_t size, Header* header, std::string* error) {
  if (size < kHeaderSize) return Fail(error, size, "data ends inside the 24-byte header");
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) return Fail(error, 0, "bad magic: not an L3 image");
  if (data[8] != 1) return Fail(error, 8, "unsupported version " + std::to_string(data[8]));
  Params& p = header->params;
  p.channels = data[9];
  if (p.channels != 1 && p.channels != 3 && p.channels != 4)
    return Fail(error, 9, std::to_string(p.channels) + " channels (1, 3 or 4 expected)");
  const uint8_t flags = data[10];
  p.subtract_green = flags & kFlagSubtractGreen;
  p.zigzag = flags & kFlagZigzag;
  if ((flags & ~(kFlagSubtractGreen | kFlagZigzag)) || (p.subtract_green && p.channels < 3))
    return Fail(error, 10, "invalid flags");
  p.segment = data[11];
  header->width = LoadLe32(data + 12);
  header->height = LoadLe32(data + 16);
  if (header->width < 1 || header->height < 1 || header->width > kMaxSide || header->height > kMaxSide ||
      static_cast<uint64_t>(header->width) * header->height * p.channels > kMaxBytes)
    return Fail(error, 12, "image outside the format's limits");
  p.patch = data[20] | data[21] << 8;
  if (p.patch < 1 || p.patch > 4096 || data[22] || data[23])
    return Fail(error, 20, "patch size outside 1..4096 or reserved field set");
  const uint64_t patches = static_cast<uint64_t>((header->width + p.patch - 1) / p.patch) *
                           ((header->height + p.patch - 1) / p.patch);
  const uint64_t count = p.channels * patches + 1;
  header->payload = kHeaderSize + 4 * count;
  if (header->payload > size) return Fail(error, size, "data ends inside the patch offsets");
  header->offsets.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    header->offsets[i] = LoadLe32(data + kHeaderSize + 4 * i);
    if ((i == 0 && header->offsets[i] != 0) || (i > 0 && header->offsets[i] < header->offsets[i - 1]))
      return Fail(error, kHeaderSize, "patch offsets are not increasing from 0 to the payload length");
  }
  if (header->payload + header->offsets.back() != size)
    return Fail(error, kHeaderSize, "patch offsets are not increasing from 0 to the payload length");
  return true;
}

}  // namespace tfliquid::l3
