// The L3 encoder and header parser (docs/formats/l3.md); the decoder is l3_decoder.cc.
#include "l3/l3_codec.h"

#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "l3/l3_layout.h"
#include "l3/l3_row_kernels.h"

namespace tfliquid::l3 {
namespace {

uint32_t LoadLe32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }

void StoreLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

int BitLength(unsigned value) { return value == 0 ? 0 : 32 - __builtin_clz(value); }

// Writes MSB-first bit fields of up to 32 bits through a 64-bit accumulator into a buffer large enough.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  void Put(uint32_t value, int bits) {
    acc_ = acc_ << bits | value;
    for (n_ += bits; n_ >= 8; n_ -= 8) out_[size_++] = static_cast<uint8_t>(acc_ >> (n_ - 8));
  }
  void Align() {
    if (n_) Put(0, 8 - n_);
  }
  size_t size() const { return size_; }

 private:
  uint8_t* out_;
  size_t size_ = 0;
  uint64_t acc_ = 0;  // the low n_ bits are pending
  int n_ = 0;
};

// Packs one row of residuals: all segment headers, then every segment's values, then zero padding.
class RowEncoder {
 public:
  RowEncoder(const Params& params, uint32_t max_width)
      : params_(params), coded_(max_width), widths_(max_width), packed_((20 * max_width + 7) / 8 + 8) {}

  void Encode(const uint8_t* residuals, uint32_t w, std::string* out) {
    const uint32_t step = params_.segment ? params_.segment : w;
    BitWriter bits(packed_.data());  // at most 12 header bits (1-pixel segments) and 8 value bits a pixel
    for (uint32_t x0 = 0, k = 0; x0 < w; x0 += step, ++k) {
      const uint32_t x1 = std::min(w, x0 + step);
      int base = 0;
      if (!params_.zigzag) {
        base = 127;
        for (uint32_t x = x0; x < x1; ++x) base = std::min<int>(base, static_cast<int8_t>(residuals[x]));
      }
      unsigned largest = 0;
      for (uint32_t x = x0; x < x1; ++x) {
        const int s = static_cast<int8_t>(residuals[x]);
        coded_[x] = params_.zigzag ? static_cast<uint8_t>((static_cast<unsigned>(s) << 1) ^ (s >> 7))
                                   : static_cast<uint8_t>(s - base);
        largest |= coded_[x];  // the OR has the bit length of the largest value
      }
      widths_[k] = static_cast<uint8_t>(BitLength(largest));
      if (params_.zigzag)
        bits.Put(widths_[k], 4);
      else
        bits.Put(widths_[k] << 8 | static_cast<uint8_t>(base), 12);
    }
    for (uint32_t x0 = 0, k = 0; x0 < w; x0 += step, ++k) {
      const uint32_t x1 = std::min(w, x0 + step);
      const int width = widths_[k];
      uint32_t x = x0;
      for (; x + 4 <= x1; x += 4)  // four values per write: at most 32 bits
        bits.Put(((coded_[x] << width | coded_[x + 1]) << width | coded_[x + 2]) << width | coded_[x + 3], 4 * width);
      for (; x < x1; ++x) bits.Put(coded_[x], width);
    }
    bits.Align();
    out->append(reinterpret_cast<const char*>(packed_.data()), bits.size());
  }

 private:
  const Params& params_;
  std::vector<uint8_t> coded_, widths_, packed_;
};

// The image as channel planes, R and B minus G under subtract-green.
std::vector<uint8_t> Planes(const uint8_t* pixels, uint64_t count, const Params& params) {
  const int channels = params.channels;
  std::vector<uint8_t> planes(count * channels);
  for (int c = 0; c < channels; ++c) {
    uint8_t* plane = planes.data() + c * count;
    const bool minus_green = params.subtract_green && (c == 0 || c == 2);
    for (uint64_t i = 0; i < count; ++i)
      plane[i] = static_cast<uint8_t>(pixels[i * channels + c] - (minus_green ? pixels[i * channels + 1] : 0));
  }
  return planes;
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
  if (params.version != 1 && params.version != 2)
    return Fail(error, 0, "format version must be 1 or 2, got " + std::to_string(params.version));
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide ||
      static_cast<uint64_t>(height) * width * channels > kMaxBytes)
    return Fail(error, 0, "image outside the format's limits");
  const uint64_t count = static_cast<uint64_t>(height) * width;
  const std::vector<uint8_t> planes = Planes(pixels, count, params);
  const std::vector<Patch> grid = PatchGrid(height, width, params.patch);
  std::string payload;
  payload.reserve(count * channels / 2);
  std::vector<uint32_t> offsets{0};
  const uint32_t max_width = std::min<uint32_t>(params.patch, width);
  // Rows with a spare byte either side, as the decoder's row loops read and write them.
  std::vector<uint8_t> residuals(max_width), above(max_width + 2), predicted(max_width + 2);
  // The decoder's reconstruction of zero residuals is the prediction itself: the encoder reuses its SIMD loop.
  const std::vector<uint8_t> zeros(max_width, 0);
  const ReconstructFunction predict = SelectReconstruct(/*zigzag=*/false);
  RowEncoder row_encoder(params, max_width);
  for (int c = 0; c < channels; ++c) {
    for (const Patch& p : grid) {
      const uint8_t* patch = planes.data() + c * count + static_cast<uint64_t>(p.y0) * width + p.x0;
      payload.append(reinterpret_cast<const char*>(patch), p.w);
      for (uint32_t y = 1; y < p.h; ++y) {
        // The previous row with its edge pixels replicated, as the prediction's edge rule reads it.
        std::memcpy(above.data() + 1, patch + static_cast<uint64_t>(y - 1) * width, p.w);
        above[0] = above[1];
        above[p.w + 1] = above[p.w];
        predict(above.data() + 1, zeros.data(), p.w, predicted.data() + 1);
        const uint8_t* row = patch + static_cast<uint64_t>(y) * width;
        for (uint32_t x = 0; x < p.w; ++x) residuals[x] = static_cast<uint8_t>(row[x] - predicted[x + 1]);
        row_encoder.Encode(residuals.data(), p.w, &payload);
      }
      if (payload.size() > UINT32_MAX) return Fail(error, 0, "payload exceeds 4 GiB");
      offsets.push_back(static_cast<uint32_t>(payload.size()));
    }
  }
  out->assign(kMagic, sizeof(kMagic));
  out->push_back(static_cast<char>(params.version));
  out->push_back(static_cast<char>(channels));
  out->push_back(
      static_cast<char>((params.subtract_green ? kFlagSubtractGreen : 0) | (params.zigzag ? kFlagZigzag : 0)));
  out->push_back(static_cast<char>(params.segment));
  StoreLe(out, width, 4);
  StoreLe(out, height, 4);
  StoreLe(out, params.patch, 2);
  StoreLe(out, 0, 2);
  for (uint32_t offset : offsets) StoreLe(out, offset, 4);
  out->append(payload);
  if (params.version >= 2) StoreLe(out, Crc32c(out->data(), out->size()), kChecksumSize);
  return true;
}

bool ParseHeader(const uint8_t* data, size_t size, Header* header, std::string* error) {
  if (size < kHeaderSize) return Fail(error, size, "data ends inside the 24-byte header");
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) return Fail(error, 0, "bad magic: not an L3 image");
  if (data[8] != 1 && data[8] != 2) return Fail(error, 8, "unsupported version " + std::to_string(data[8]));
  Params& p = header->params;
  p.version = data[8];
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
  const uint64_t patches =
      static_cast<uint64_t>((header->width + p.patch - 1) / p.patch) * ((header->height + p.patch - 1) / p.patch);
  const uint64_t count = p.channels * patches + 1;
  header->payload = kHeaderSize + 4 * count;
  if (header->payload > size) return Fail(error, size, "data ends inside the patch offsets");
  header->offsets.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    header->offsets[i] = LoadLe32(data + kHeaderSize + 4 * i);
    if ((i == 0 && header->offsets[i] != 0) || (i > 0 && header->offsets[i] < header->offsets[i - 1]))
      return Fail(error, kHeaderSize, "patch offsets are not increasing from 0 to the payload length");
  }
  const size_t trailer = p.version >= 2 ? kChecksumSize : 0;
  if (header->payload + header->offsets.back() + trailer != size)
    return Fail(error, kHeaderSize, "patch offsets are not increasing from 0 to the payload length");
  return true;
}

bool VerifyChecksum(const uint8_t* data, size_t size, const Header& header, std::string* error) {
  if (header.params.version < 2) return true;
  const size_t at = size - kChecksumSize;
  const uint32_t stored = LoadLe32(data + at), computed = Crc32c(data, at);
  if (stored == computed) return true;
  char detail[96];
  std::snprintf(detail, sizeof(detail), "checksum mismatch: the file says %08x, its bytes give %08x", stored, computed);
  return Fail(error, at, detail);
}

}  // namespace tfliquid::l3
