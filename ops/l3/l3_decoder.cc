// The L3 decoder (docs/formats/l3.md), written for speed on one CPU core.
//
// A patch is decoded channel by channel into planar tiles, row by row: the row's segment headers give every
// segment's bit offset and the row's length (checked against the patch stream before any value is read), each
// segment is unpacked eight values per 64-bit load with its bit width as a compile-time constant, and the
// residuals are added to the prediction in one loop over the row that reads only the previous row, so the
// compiler vectorizes it. Tiles keep one replicated pixel either side of each row, which is exactly the
// format's edge rule, so that loop has no edge cases. The tiles are then interleaved into the HWC image, where
// the subtract-green transform is undone.
#include <cstring>

#include "l3/l3_codec.h"
#include "l3/l3_layout.h"
#include "l3/l3_row_kernels.h"

namespace tfliquid::l3 {
namespace {

// The unpacker loads whole words, so it may read up to this many bytes past a row; streams that end closer than
// this to the end of the input are copied to a padded buffer first.
constexpr size_t kReadSlack = 16;
// ... and may write up to 7 values past a segment: residual rows carry this much spare room.
constexpr size_t kWriteSlack = 8;
static_assert(kReadSlack >= kUnpackReadsPast && kWriteSlack >= kUnpackWritesPast);

// Decodes the channel streams of one patch into planar tiles.
class TileDecoder {
 public:
  explicit TileDecoder(const Params& params, uint32_t width)
      : step_(params.segment ? params.segment : std::min<uint32_t>(params.patch, width)),
        zigzag_(params.zigzag),
        coded_(params.patch + kWriteSlack),
        widths_(params.patch),
        bases_(params.patch) {}  // all 0 in zigzag mode

  // Decodes stream[0, length) -- readable for kReadSlack more bytes -- as an h x w patch into `tile` (rows
  // `stride` apart, one spare byte either side). `at` is the stream's offset in the input, for errors.
  bool Decode(const uint8_t* stream, size_t length, uint64_t at, uint32_t h, uint32_t w, uint8_t* tile,
              size_t stride, std::string* error) {
    if (length < w) return Fail(error, at, "patch data ends inside its first row");
    std::memcpy(tile, stream, w);
    Pad(tile, w);
    size_t pos = w;
    for (uint32_t y = 1; y < h; ++y) {
      uint8_t* row = tile + y * stride;
      size_t row_bytes = 0;
      if (!DecodeRow(stream + pos, length - pos, at + pos, w, &row_bytes, error)) return false;
      reconstruct_(row - stride, coded_.data(), w, row);
      Pad(row, w);
      pos += row_bytes;
    }
    if (pos != length)
      return Fail(error, at + pos, std::to_string(length - pos) + " bytes left over after the patch");
    return true;
  }

 private:
  static void Pad(uint8_t* row, uint32_t w) {
    row[-1] = row[0];
    row[w] = row[w - 1];
  }

  // Reads one row's segment headers into widths_ and bases_; returns the row's length in bits (header and
  // values), or 0 after an error.
  uint64_t ReadHeaders(const uint8_t* row, size_t available, uint64_t at, uint32_t w, std::string* error) {
    const uint32_t segments = (w + step_ - 1) / step_;
    const unsigned header_bits = zigzag_ ? 4 : 12;
    if ((static_cast<uint64_t>(segments) * header_bits + 7) / 8 > available)
      return Fail(error, at, "patch data ends inside a row's segment headers");
    uint8_t* __restrict widths = widths_.data();
    uint8_t* __restrict bases = bases_.data();
    if (zigzag_) {
      SplitNibbles(row, segments, widths);
    } else {
      for (uint32_t k = 0; k < segments; ++k) {
        // 12 bits at 12k: both bytes exist since the headers fit (BitsAt may read further, into the slack).
        const uint64_t field = BitsAt(row, 12ull * k) >> 52;
        widths[k] = field >> 8;
        bases[k] = static_cast<uint8_t>(field);
      }
    }
    uint8_t widest = 0;
    unsigned width_sum = 0;
    for (uint32_t k = 0; k < segments; ++k) {
      widest = std::max(widest, widths[k]);
      width_sum += widths[k];
    }
    if (widest > 8) return Fail(error, at, "segment width " + std::to_string(widest) + " > 8");
    // Every segment has step_ values but the last, which has `last`.
    const uint32_t last = w - (segments - 1) * step_;
    return static_cast<uint64_t>(segments) * header_bits + static_cast<uint64_t>(width_sum) * step_ -
           static_cast<uint64_t>(step_ - last) * widths[segments - 1];
  }

  // Unpacks one row's coded values into coded_ (residuals plus base in base mode, zigzag codes otherwise).
  bool DecodeRow(const uint8_t* row, size_t available, uint64_t at, uint32_t w, size_t* row_bytes,
                 std::string* error) {
    const uint64_t row_bits = ReadHeaders(row, available, at, w, error);
    if (row_bits == 0) return false;
    *row_bytes = (row_bits + 7) / 8;
    if (*row_bytes > available) return Fail(error, at, "patch data ends inside a row");
    const uint32_t segments = (w + step_ - 1) / step_;
    unpack_row_({row, static_cast<uint64_t>(segments) * (zigzag_ ? 4 : 12), widths_.data(), bases_.data(), step_, w},
                coded_.data());
    return true;
  }

  const uint32_t step_;  // pixels per segment (0 in the header: a whole patch row)
  const bool zigzag_;
  const UnpackRowFunction unpack_row_ = SelectUnpackRow(zigzag_);
  const ReconstructFunction reconstruct_ = SelectReconstruct(zigzag_);
  std::vector<uint8_t> coded_;
  std::vector<uint8_t> widths_, bases_;
};

// Writes the tiles of one patch into the HWC image, undoing subtract-green (R = R' + G, B = B' + G).
template <int kChannels, bool kSubtractGreen>
void Interleave(const uint8_t* tiles, size_t tile_size, size_t stride, const Patch& patch, uint32_t width,
                uint8_t* pixels) {
  for (uint32_t y = 0; y < patch.h; ++y) {
    const uint8_t* plane[kChannels];
    for (int c = 0; c < kChannels; ++c) plane[c] = tiles + c * tile_size + y * stride;
    InterleaveRow<kChannels, kSubtractGreen>(
        plane, patch.w, pixels + (static_cast<uint64_t>(patch.y0 + y) * width + patch.x0) * kChannels);
  }
}

void InterleavePatch(const Params& params, const uint8_t* tiles, size_t tile_size, size_t stride,
                     const Patch& patch, uint32_t width, uint8_t* pixels) {
  switch (params.channels * 2 + params.subtract_green) {
    case 2: Interleave<1, false>(tiles, tile_size, stride, patch, width, pixels); break;
    case 6: Interleave<3, false>(tiles, tile_size, stride, patch, width, pixels); break;
    case 7: Interleave<3, true>(tiles, tile_size, stride, patch, width, pixels); break;
    case 8: Interleave<4, false>(tiles, tile_size, stride, patch, width, pixels); break;
    default: Interleave<4, true>(tiles, tile_size, stride, patch, width, pixels); break;
  }
}

}  // namespace

bool Decode(const uint8_t* data, size_t size, const Header& header, uint8_t* pixels, std::string* error) {
  const Params& params = header.params;
  const std::vector<Patch> grid = PatchGrid(header.height, header.width, params.patch);
  // Tile rows: one spare byte on the left, the patch, one spare on the right.
  const size_t stride = params.patch + 2;
  const size_t tile_size = stride * std::min<uint32_t>(params.patch, header.height);
  std::vector<uint8_t> tiles(tile_size * params.channels);
  std::vector<uint8_t> padded;  // streams too close to the end of `data` for the unpacker's look-ahead
  TileDecoder decoder(params, header.width);
  for (size_t i = 0; i < grid.size(); ++i) {
    for (int c = 0; c < params.channels; ++c) {
      const size_t start = header.payload + header.offsets[c * grid.size() + i];
      const size_t end = header.payload + header.offsets[c * grid.size() + i + 1];
      const uint8_t* stream = data + start;
      if (size - end < kReadSlack) {
        padded.assign(end - start + kReadSlack, 0);
        std::memcpy(padded.data(), stream, end - start);
        stream = padded.data();
      }
      if (!decoder.Decode(stream, end - start, start, grid[i].h, grid[i].w, tiles.data() + c * tile_size + 1,
                          stride, error)) {
        *error += " (channel " + std::to_string(c) + ", patch " + std::to_string(i) + ")";
        return false;
      }
    }
    InterleavePatch(params, tiles.data() + 1, tile_size, stride, grid[i], header.width, pixels);
  }
  return true;
}

}  // namespace tfliquid::l3
