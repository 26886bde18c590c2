#include "l3/l3_codec.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tfliquid::l3 {
namespace {

constexpr char kMagic[8] = {'\x89', 'L', '3', 'I', '\r', '\n', '\x1a', '\n'};
constexpr uint8_t kFlagSubtractGreen = 1;
constexpr uint8_t kFlagZigzag = 2;

bool Fail(std::string* error, uint64_t offset, const std::string& message) {
  *error = "offset " + std::to_string(offset) + ": " + message;
  return false;
}

uint32_t LoadLe32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }

void StoreLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

int BitLength(unsigned value) { return value == 0 ? 0 : 32 - __builtin_clz(value); }

struct Patch {
  uint32_t y0, x0, h, w;
};

std::vector<Patch> PatchGrid(uint32_t height, uint32_t width, int n) {
  std::vector<Patch> grid;
  for (uint32_t y = 0; y < height; y += n)
    for (uint32_t x = 0; x < width; x += n)
      grid.push_back({y, x, std::min<uint32_t>(n, height - y), std::min<uint32_t>(n, width - x)});
  return grid;
}

// The custom Paeth prediction from the previous row alone; `prev(x)` reads the previous row.
template <typename Prev>
uint8_t Predict(Prev prev, uint32_t x, uint32_t w) {
  const int b = prev(x), a = x > 0 ? prev(x - 1) : b, c = x + 1 < w ? prev(x + 1) : b;
  const int p = a + c - b, da = std::abs(p - a), db = std::abs(p - b), dc = std::abs(p - c);
  return static_cast<uint8_t>(da <= db && da <= dc ? a : db <= dc ? b : c);
}

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

// Reads MSB-first bit fields through a small look-ahead word instead of bit by bit.
class BitReader {
 public:
  BitReader(const uint8_t* data, size_t pos, size_t end) : data_(data), pos_(pos), end_(end) {}
  bool Get(int bits, uint32_t* value) {
    while (avail_ < bits && pos_ < end_) {
      word_ = word_ << 8 | data_[pos_++];
      avail_ += 8;
    }
    if (avail_ < bits) return false;
    avail_ -= bits;
    *value = static_cast<uint32_t>(word_ >> avail_) & ((1u << bits) - 1);
    return true;
  }
  void Align() { avail_ -= avail_ % 8; }
  // The next unread byte (the look-ahead holds whole bytes once aligned).
  size_t pos() const { return pos_ - avail_ / 8; }

 private:
  const uint8_t* data_;
  size_t pos_, end_;
  uint64_t word_ = 0;
  int avail_ = 0;  // unread bits at the bottom of word_
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
      coded[x] = params.zigzag ? static_cast<uint8_t>((s << 1) ^ (s >> 7)) : static_cast<uint8_t>(s - base);
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

bool DecodeRow(BitReader* bits, uint32_t w, const Params& params, uint8_t* residuals, std::string* error) {
  const uint32_t step = params.segment ? params.segment : w;
  const size_t at = bits->pos();
  std::vector<uint32_t> widths, bases;
  for (uint32_t x0 = 0; x0 < w; x0 += step) {
    uint32_t width, base = 0;
    if (!bits->Get(4, &width) || (!params.zigzag && !bits->Get(8, &base)))
      return Fail(error, at, "patch data ends inside a row's segment headers");
    if (width > 8) return Fail(error, at, "segment width " + std::to_string(width) + " > 8");
    widths.push_back(width);
    bases.push_back(base);
  }
  for (uint32_t x0 = 0, k = 0; x0 < w; x0 += step, ++k) {
    for (uint32_t x = x0; x < std::min(w, x0 + step); ++x) {
      uint32_t v;
      if (!bits->Get(widths[k], &v)) return Fail(error, bits->pos(), "patch data ends inside a row");
      residuals[x] = params.zigzag ? static_cast<uint8_t>((v >> 1) ^ (0u - (v & 1)))
                                   : static_cast<uint8_t>(v + static_cast<int8_t>(bases[k]));
    }
  }
  bits->Align();
  return true;
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
        for (uint32_t x = 0; x < p.w; ++x)
          residuals[x] = static_cast<uint8_t>(value(c, p.y0 + y, p.x0 + x) - Predict(prev, x, p.w));
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

bool Decode(const uint8_t* data, size_t size, const Header& header, uint8_t* pixels, std::string* error) {
  const Params& params = header.params;
  const int channels = params.channels;
  const uint32_t width = header.width;
  const std::vector<Patch> grid = PatchGrid(header.height, width, params.patch);
  std::vector<uint8_t> residuals;
  for (int c = 0; c < channels; ++c) {
    for (size_t i = 0; i < grid.size(); ++i) {
      const Patch& p = grid[i];
      const size_t start = header.payload + header.offsets[c * grid.size() + i];
      const size_t end = header.payload + header.offsets[c * grid.size() + i + 1];
      auto at = [&](uint32_t y, uint32_t x) -> uint8_t& {
        return pixels[(static_cast<uint64_t>(p.y0 + y) * width + p.x0 + x) * channels + c];
      };
      if (end - start < p.w) return Fail(error, start, "patch data ends inside its first row");
      for (uint32_t x = 0; x < p.w; ++x) at(0, x) = data[start + x];
      BitReader bits(data, start + p.w, end);
      residuals.resize(p.w);
      for (uint32_t y = 1; y < p.h; ++y) {
        if (!DecodeRow(&bits, p.w, params, residuals.data(), error)) return false;
        auto prev = [&](uint32_t x) { return at(y - 1, x); };
        for (uint32_t x = 0; x < p.w; ++x) at(y, x) = static_cast<uint8_t>(residuals[x] + Predict(prev, x, p.w));
      }
      if (bits.pos() != end)
        return Fail(error, bits.pos(), std::to_string(end - bits.pos()) + " bytes left over in channel " +
                                           std::to_string(c) + " patch " + std::to_string(i));
    }
  }
  if (params.subtract_green) {
    const uint64_t n = static_cast<uint64_t>(header.height) * width;
    for (uint64_t i = 0; i < n; ++i) {
      uint8_t* px = pixels + i * channels;
      px[0] = static_cast<uint8_t>(px[0] + px[1]);
      px[2] = static_cast<uint8_t>(px[2] + px[1]);
    }
  }
  return true;
}

}  // namespace tfliquid::l3
