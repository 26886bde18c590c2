// The L3 decoder (docs/formats/l3.md), written for speed on one CPU core.
//
// A patch is decoded row by row, all its channels in step, so that everything it touches stays in L1: the
// prediction reads only the previous row, so each channel needs just two row buffers. For a row, the segment
// headers give every segment's bit offset and the row's length (checked against the patch stream before any
// value is read); the values are unpacked eight per load, up to four segments per step (l3_row_kernels.h), and
// the residuals added to the prediction in one vectorized loop over the row. Row buffers keep one replicated pixel
// either side, which is exactly the format's edge rule, so that loop has no edge cases. The channels' rows are
// then interleaved into the HWC image, where the subtract-green transform is undone.
// Full patches of the two profiles (32, 64 or 128 pixels wide) take a faster path on AVX2 machines: each channel's
// previous row stays in registers, and a row is a fixed sequence of vector steps for its profile's layout, with no
// indirect call or loop over segments; a patch it cannot decode goes to the row decoder above, which reports why.
#include <algorithm>
#include <cstring>

#include "l3/l3_codec.h"
#include "l3/l3_layout.h"
#include "l3/l3_row_kernels.h"

namespace tfliquid::l3 {
namespace {

// The header splitter and the unpacker load whole words, so they may read up to this many bytes past a row;
// streams that end closer than this to the end of the input are copied to a padded buffer first.
constexpr size_t kReadSlack = 16;
// ... and may write past a row's values: residual rows carry this much spare room.
constexpr size_t kWriteSlack = 8;
static_assert(kReadSlack >= kUnpackReadsPast && kReadSlack >= kNibblesReadPast && kWriteSlack >= kUnpackWritesPast);

// One channel stream of one patch: stream[0, length) is readable for kReadSlack more bytes; `at` is its offset in
// the input, for errors.
struct ChannelStream {
  const uint8_t* stream;
  size_t length;
  uint64_t at;
  size_t pos = 0;
};

// Decodes the rows of patch channel streams.
class RowDecoder {
 public:
  // max_width: the widest patch row, min(patch size, image width).
  RowDecoder(const Params& params, uint32_t max_width)
      : step_(params.segment ? params.segment : max_width),
        zigzag_(params.zigzag),
        header_bits_(params.zigzag ? 4 : 12),
        coded_(max_width + kWriteSlack),
        widths_(max_width + kNibblesWritePast),
        bases_(max_width) {}  // all 0 in zigzag mode

  // Sets the width of the rows that follow, those of a patch w pixels wide.
  void SetWidth(uint32_t w) {
    w_ = w;
    segments_ = (w + step_ - 1) / step_;
    row_header_bits_ = static_cast<uint64_t>(segments_) * header_bits_;
    last_segment_short_by_ = segments_ * step_ - w;
  }

  // Row 0: w raw bytes. `row` has one spare byte either side, for the replicated edge pixels.
  bool FirstRow(ChannelStream* s, uint8_t* row, std::string* error) {
    if (s->length < w_) return Fail(error, s->at, "patch data ends inside its first row");
    std::memcpy(row, s->stream, w_);
    // From the stream, not from `row`: reading back bytes the copy's wide stores have just written stalls.
    row[-1] = s->stream[0];
    row[w_] = s->stream[w_ - 1];
    s->pos = w_;
    return true;
  }

  // A later row, predicted from `previous` (edges included, as the reconstruction leaves them).
  bool NextRow(ChannelStream* s, const uint8_t* previous, uint8_t* row, std::string* error) {
    size_t row_bytes = 0;
    // A few rows ahead: with three streams and the image in flight, the hardware prefetcher alone is late
    // (measured: about 1.5% faster decodes from cold caches).
    __builtin_prefetch(s->stream + s->pos + 512);
    if (!DecodeRow(s->stream + s->pos, s->length - s->pos, s->at + s->pos, &row_bytes, error)) return false;
    reconstruct_(previous, coded_.data(), w_, row);
    s->pos += row_bytes;
    return true;
  }

  static bool Finish(const ChannelStream& s, std::string* error) {
    if (s.pos == s.length) return true;
    return Fail(error, s.at + s.pos, std::to_string(s.length - s.pos) + " bytes left over after the patch");
  }

 private:
  // Reads the headers of one row's segments into widths_ and bases_; returns the row's length in bits (header and
  // values), or 0 after an error.
  uint64_t ReadHeaders(const uint8_t* row, size_t available, uint64_t at, std::string* error) {
    const uint32_t segments = segments_;
    if ((row_header_bits_ + 7) / 8 > available)
      return Fail(error, at, "patch data ends inside a row's segment headers");
    uint8_t* __restrict widths = widths_.data();
    uint8_t* __restrict bases = bases_.data();
    WidthSummary summary;
    if (zigzag_) {
      summary = SplitNibbles(row, segments, widths);
    } else {
      for (uint32_t k = 0; k < segments; ++k) {
        // 12 bits at 12k: both bytes exist since the headers fit (BitsAt may read further, into the slack).
        const uint64_t field = BitsAt(row, 12ull * k) >> 52;
        widths[k] = field >> 8;
        bases[k] = static_cast<uint8_t>(field);
        summary.widest = std::max<unsigned>(summary.widest, widths[k]);
        summary.sum += widths[k];
      }
    }
    if (summary.widest > 8) return Fail(error, at, "segment width " + std::to_string(summary.widest) + " > 8");
    // Every segment has step_ values but the last.
    return row_header_bits_ + static_cast<uint64_t>(summary.sum) * step_ -
           static_cast<uint64_t>(last_segment_short_by_) * widths[segments - 1];
  }

  // Unpacks one row's coded values into coded_ (residuals plus base in base mode, zigzag codes otherwise).
  bool DecodeRow(const uint8_t* row, size_t available, uint64_t at, size_t* row_bytes, std::string* error) {
    const uint64_t row_bits = ReadHeaders(row, available, at, error);
    if (row_bits == 0) return false;
    *row_bytes = (row_bits + 7) / 8;
    if (*row_bytes > available) return Fail(error, at, "patch data ends inside a row");
    unpack_row_({row, row_header_bits_, widths_.data(), bases_.data(), step_, w_}, coded_.data());
    return true;
  }

  const uint32_t step_;  // pixels per segment (0 in the header: a whole patch row)
  const bool zigzag_;
  const unsigned header_bits_;  // per segment: a 4-bit width, plus an 8-bit base without zigzag
  // The rows' shape, set per patch by SetWidth.
  uint32_t w_ = 0, segments_ = 0, last_segment_short_by_ = 0;
  uint64_t row_header_bits_ = 0;
  const UnpackRowFunction unpack_row_ = SelectUnpackRow(zigzag_);
  const ReconstructFunction reconstruct_ = SelectReconstruct(zigzag_);
  std::vector<uint8_t> coded_;
  std::vector<uint8_t> widths_, bases_;
};

#ifdef TFLIQUID_L3_X86
// Full patches (32 x kBlocks pixels wide) of the two profiles: each channel's previous row lives in kBlocks
// registers of 32 pixels and a row is a fixed sequence of vector steps for the profile's row layout, with no
// indirect call or loop over segments. These return false, having checked nothing further, at the first thing
// that is not a valid patch; the caller then decodes the patch with RowDecoder, which says what is wrong.
// (GCC warns that passing __m256i has another ABI without AVX; these helpers only ever inline into AVX2 code.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// Pixel x - 1 of a row at every x of its 32-pixel block `block`; `before` is the block to its left, or none for the
// row's first block, whose first pixel is then replicated: the format's edge rule.
__attribute__((target("avx2"))) inline __m256i LeftNeighbours(__m256i block, const __m256i* before) {
  if (before) return _mm256_alignr_epi8(block, _mm256_permute2x128_si256(block, *before, 0x03), 15);
  const __m256i shifted = _mm256_alignr_epi8(block, _mm256_permute2x128_si256(block, block, 0x08), 15);
  return _mm256_or_si256(shifted, _mm256_and_si256(block, _mm256_setr_epi64x(0xff, 0, 0, 0)));
}

// Pixel x + 1 likewise; `after` is the block to the right, or none for the row's last block.
__attribute__((target("avx2"))) inline __m256i RightNeighbours(__m256i block, const __m256i* after) {
  if (after) return _mm256_alignr_epi8(_mm256_permute2x128_si256(block, *after, 0x21), block, 1);
  const __m256i shifted = _mm256_alignr_epi8(_mm256_permute2x128_si256(block, block, 0x81), block, 1);
  return _mm256_or_si256(shifted, _mm256_and_si256(block, _mm256_setr_epi64x(0, 0, 0, 0xffll << 56)));
}

// The residuals of a paper-profile row (one segment: a 12-bit header of width and base, then the values from bit
// 12, in groups of eight `width` bytes apart that all start 4 bits into a byte). Returns the row's length in
// bytes, 2 + 4 x kBlocks x width, or 0 if it is not a valid row within `available` bytes.
template <int kBlocks>
__attribute__((target("avx2"))) inline size_t WholeSegmentResiduals(const uint8_t* p, size_t available,
                                                                    __m256i* residuals) {
  if (available < 2) return 0;
  const unsigned width = p[0] >> 4;
  const size_t row_bytes = 2 + 4 * kBlocks * width;
  if (width > 8 || row_bytes > available) return 0;
  const UnpackTables::Entry& table = kUnpackTables.entry[4][width];
  const __m256i base = _mm256_set1_epi8(static_cast<char>(p[0] << 4 | p[1] >> 4));
  for (int j = 0; j < kBlocks; ++j) {
    const uint8_t* const q = p + 1 + 4 * width * j;  // reads at most 15 bytes past the row: within kReadSlack
    const __m256i low = UnpackTwoEights(q, table, q + width, table);
    const __m256i high = UnpackTwoEights(q + 2 * width, table, q + 3 * width, table);
    residuals[j] = _mm256_add_epi8(_mm256_permute4x64_epi64(_mm256_packus_epi16(low, high), 0xd8), base);
  }
  return row_bytes;
}

// The residuals of a default-profile row (8-value segments: 4 x kBlocks 4-bit widths, then each segment's values,
// zigzag-mapped, in `width` bytes that start on a byte). Returns the row's length in bytes or 0, likewise.
template <int kBlocks>
__attribute__((target("avx2"))) inline size_t EightValueSegmentResiduals(const uint8_t* p, size_t available,
                                                                         __m256i* residuals) {
  constexpr uint32_t kSegments = 4 * kBlocks;
  constexpr size_t kHeaderBytes = kSegments / 2;
  if (available < kHeaderBytes) return 0;
  uint8_t widths[kSegments + kNibblesWritePast];
  const WidthSummary summary = SplitNibbles(p, kSegments, widths);
  const size_t row_bytes = kHeaderBytes + summary.sum;
  if (summary.widest > 8 || row_bytes > available) return 0;
  const uint8_t* q = p + kHeaderBytes;  // reads at most 16 bytes past the row: within kReadSlack
  for (int j = 0; j < kBlocks; ++j)
    residuals[j] = Unzigzag32(UnpackFourEights(q, kUnpackTables.entry[0], widths + 4 * j));
  return row_bytes;
}

// Reads one row of a profile's layout (as WholeSegmentResiduals and EightValueSegmentResiduals do).
using ResidualsFunction = size_t (*)(const uint8_t* p, size_t available, __m256i* residuals);

// Decodes the row at stream->pos into `row`, predicted from the row it holds; `Residuals` reads the profile's row.
template <int kBlocks, ResidualsFunction Residuals>
__attribute__((target("avx2"))) inline bool WholeRow(ChannelStream* stream, __m256i* row) {
  __m256i residuals[kBlocks];
  const size_t row_bytes = Residuals(stream->stream + stream->pos, stream->length - stream->pos, residuals);
  if (row_bytes == 0) return false;
  __m256i before = row[0];  // the previous row's block j - 1, once row[j - 1] holds the new one
  for (int j = 0; j < kBlocks; ++j) {
    const __m256i top = row[j];
    const __m256i top_left = LeftNeighbours(top, j > 0 ? &before : nullptr);
    const __m256i top_right = RightNeighbours(top, j + 1 < kBlocks ? &row[j + 1] : nullptr);
    before = top;
    row[j] = _mm256_add_epi8(residuals[j], Paeth32(top_left, top, top_right));
  }
  stream->pos += row_bytes;
  return true;
}

template <int kBlocks>
__attribute__((target("avx2"))) inline void StoreRow(const __m256i* row, uint8_t* out) {
  for (int j = 0; j < kBlocks; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * j), row[j]);
}

template <int kBlocks, ResidualsFunction Residuals>
__attribute__((target("avx2"))) bool DecodeWholeRowPatch(ChannelStream* streams, int channels, uint32_t height,
                                                         InterleaveFunction interleave, uint8_t* out,
                                                         size_t out_stride) {
  constexpr uint32_t kWidth = 32 * kBlocks;
  alignas(32) uint8_t rows[4][kWidth];  // the interleave's input
  const uint8_t* const plane[4] = {rows[0], rows[1], rows[2], rows[3]};
  __m256i row[4][kBlocks];
  for (int c = 0; c < channels; ++c) {
    if (streams[c].length < kWidth) return false;
    for (int j = 0; j < kBlocks; ++j) row[c][j] = Load32(streams[c].stream + 32 * j);
    streams[c].pos = kWidth;
    StoreRow<kBlocks>(row[c], rows[c]);
  }
  interleave(plane, kWidth, out);
  for (uint32_t y = 1; y < height; ++y) {
    out += out_stride;
    for (int c = 0; c < channels; ++c) {
      if (!WholeRow<kBlocks, Residuals>(&streams[c], row[c])) return false;
      StoreRow<kBlocks>(row[c], rows[c]);
    }
    interleave(plane, kWidth, out);
  }
  for (int c = 0; c < channels; ++c)
    if (streams[c].pos != streams[c].length) return false;
  return true;
}
#pragma GCC diagnostic pop

using WholeRowPatchFunction = bool (*)(ChannelStream* streams, int channels, uint32_t height,
                                       InterleaveFunction interleave, uint8_t* out, size_t out_stride);

// The vector decoder of the full patches of these parameters, or none.
template <ResidualsFunction Residuals1, ResidualsFunction Residuals2, ResidualsFunction Residuals4>
WholeRowPatchFunction ForPatchSize(int patch) {
  switch (patch) {
    case 32: return DecodeWholeRowPatch<1, Residuals1>;
    case 64: return DecodeWholeRowPatch<2, Residuals2>;
    case 128: return DecodeWholeRowPatch<4, Residuals4>;
    default: return nullptr;
  }
}

WholeRowPatchFunction SelectWholeRowPatch(const Params& params) {
  if (!__builtin_cpu_supports("avx2")) return nullptr;
  if (params.segment == 0 && !params.zigzag)  // the paper profile
    return ForPatchSize<WholeSegmentResiduals<1>, WholeSegmentResiduals<2>, WholeSegmentResiduals<4>>(params.patch);
  if (params.segment == 8 && params.zigzag)  // the default profile
    return ForPatchSize<EightValueSegmentResiduals<1>, EightValueSegmentResiduals<2>, EightValueSegmentResiduals<4>>(
        params.patch);
  return nullptr;
}
#endif

}  // namespace

bool Decode(const uint8_t* data, size_t size, const Header& header, uint8_t* pixels, std::string* error) {
  const Params& params = header.params;
  const int channels = params.channels;
  const std::vector<Patch> grid = PatchGrid(header.height, header.width, params.patch);
  // Two rows per channel (previous and current), each with a spare byte either side.
  const size_t row_size = params.patch + 2;
  std::vector<uint8_t> rows(row_size * 2 * channels);
  auto row_of = [&](int c, uint32_t y) { return rows.data() + (2 * c + (y & 1)) * row_size + 1; };
  std::vector<std::vector<uint8_t>> padded(channels);  // streams too close to the end of `data` for look-ahead
  std::vector<ChannelStream> streams(channels);
  RowDecoder decoder(params, std::min<uint32_t>(params.patch, header.width));
  const InterleaveFunction interleave = SelectInterleave(channels, params.subtract_green);
#ifdef TFLIQUID_L3_X86
  const WholeRowPatchFunction whole_row_patch = SelectWholeRowPatch(params);
#endif
  const size_t out_stride = static_cast<size_t>(header.width) * channels;
  auto fail = [&](int c, size_t i) {
    *error += " (channel " + std::to_string(c) + ", patch " + std::to_string(i) + ")";
    return false;
  };
  for (size_t i = 0; i < grid.size(); ++i) {
    const Patch& patch = grid[i];
    for (int c = 0; c < channels; ++c) {
      const size_t start = header.payload + header.offsets[c * grid.size() + i];
      const size_t end = header.payload + header.offsets[c * grid.size() + i + 1];
      streams[c] = {data + start, end - start, start};
      if (size - end < kReadSlack) {
        padded[c].assign(end - start + kReadSlack, 0);
        std::memcpy(padded[c].data(), data + start, end - start);
        streams[c].stream = padded[c].data();
      }
    }
    // The patch row's place in the image.
    uint8_t* out = pixels + (static_cast<uint64_t>(patch.y0) * header.width + patch.x0) * channels;
#ifdef TFLIQUID_L3_X86
    if (whole_row_patch && patch.w == static_cast<uint32_t>(params.patch) &&
        whole_row_patch(streams.data(), channels, patch.h, interleave, out, out_stride))
      continue;
#endif
    decoder.SetWidth(patch.w);
    // The first row apart (raw bytes), so that the loop over the others has no branch on it. plane[c] is channel
    // c's latest row, which predicts its next one.
    const uint8_t* plane[4];
    for (int c = 0; c < channels; ++c) {
      if (!decoder.FirstRow(&streams[c], row_of(c, 0), error)) return fail(c, i);
      plane[c] = row_of(c, 0);
    }
    interleave(plane, patch.w, out);
    for (uint32_t y = 1; y < patch.h; ++y) {
      out += out_stride;
      for (int c = 0; c < channels; ++c) {
        uint8_t* row = row_of(c, y);
        if (!decoder.NextRow(&streams[c], plane[c], row, error)) return fail(c, i);
        plane[c] = row;
      }
      interleave(plane, patch.w, out);
    }
    for (int c = 0; c < channels; ++c)
      if (!RowDecoder::Finish(streams[c], error)) return fail(c, i);
  }
#ifdef TFLIQUID_L3_X86
  _mm_sfence();  // the interleave's streaming stores are visible before the image is handed on
#endif
  return VerifyChecksum(data, size, header, error);
}

}  // namespace tfliquid::l3
