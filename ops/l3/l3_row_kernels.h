// The per-pixel loops of the L3 decoder, with SSE2/SSSE3/AVX2 versions on x86 picked at run time (the scalar
// loops take rows shorter than one SIMD block and are the whole implementation elsewhere). GCC does not vectorize
// the scalar Paeth loop well: it widens to 32-bit lanes, and it interleaves three planes byte by byte. The SIMD
// loops have no scalar tails: a row's last block overlaps the one before, or reads and writes past the row within
// the slack the decoder provides (kUnpack*Past, kNibbles*Past). Internal to ops/l3.
#ifndef TFLIQUID_OPS_L3_L3_ROW_KERNELS_H_
#define TFLIQUID_OPS_L3_L3_ROW_KERNELS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "l3/l3_layout.h"

// TFLIQUID_L3_SCALAR builds the scalar loops only, so that the tests can check them on x86 too.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(TFLIQUID_L3_SCALAR)
#include <immintrin.h>
#define TFLIQUID_L3_X86 1
#endif

namespace tfliquid::l3 {

// How far past the coded row the unpackers may read, and past the row's values they may write.
inline constexpr size_t kUnpackReadsPast = 16;
inline constexpr size_t kUnpackWritesPast = 7;

inline uint64_t LoadBigEndian64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return __builtin_bswap64(v);
}

// The 64 bits that start `bit` bits into p, most significant first.
inline uint64_t BitsAt(const uint8_t* p, uint64_t bit) {
  const uint8_t* q = p + (bit >> 3);
  const unsigned shift = bit & 7;
  const uint64_t word = LoadBigEndian64(q);
  return shift ? word << shift | q[8] >> (8 - shift) : word;
}

// A row's coded values: segment k has `step` values (the last one the rest of the row's w), each `widths[k]`
// bits, MSB first, plus `bases[k]`; segment 0 starts `bit` bits into `row`.
struct CodedRow {
  const uint8_t* row;
  uint64_t bit;
  const uint8_t* widths;
  const uint8_t* bases;
  uint32_t step, w;
};

// Unpacks eight values per step with no branch on the width, which changes unpredictably from segment to
// segment. out receives w values (and up to kUnpackWritesPast more).
inline void UnpackRowScalar(const CodedRow& coded, uint8_t* out) {
  uint64_t bit = coded.bit;
  for (uint32_t k = 0, x = 0; x < coded.w; ++k, x += coded.step) {
    const unsigned width = coded.widths[k];
    const uint32_t end = std::min(coded.w, x + coded.step);
    for (uint32_t i = x; i < end; i += 8) {
      const uint64_t word = BitsAt(coded.row, bit + static_cast<uint64_t>(i - x) * width);
      // The two-step shift keeps width 0 defined (a 64-bit shift would not be).
      for (unsigned j = 0; j < 8; ++j)
        out[i + j] = static_cast<uint8_t>((word << (width * j) >> (63 - width) >> 1) + coded.bases[k]);
    }
    bit += static_cast<uint64_t>(end - x) * width;
  }
}

#ifdef TFLIQUID_L3_X86
// SSSE3: pshufb gathers, for each of 8 values, the two bytes holding it into a 16-bit lane (big-endian); an
// unsigned high multiply by 2^(its bit offset in the first byte + width) shifts it down to the bottom of the lane,
// and a mask clears the bits of the values before it. Every step works lane by lane, so one AVX2 register can
// unpack two segments of different widths. The shuffles and multipliers depend on the width and the segment's
// starting bit offset; offset + width <= 15 keeps the multiplier within 16 bits.
struct UnpackTables {
  struct Entry {
    __m128i shuffle, multiplier, mask;
  };
  Entry entry[8][9];  // [bit offset of the first value in its byte][width]
  UnpackTables() {
    for (int start = 0; start < 8; ++start) {
      for (int width = 0; width <= 8; ++width) {
        alignas(16) int8_t shuffle[16];
        alignas(16) uint16_t multiplier[8], mask[8];
        for (int j = 0; j < 8; ++j) {
          const int bit = start + width * j;
          shuffle[2 * j] = static_cast<int8_t>((bit >> 3) + 1);
          shuffle[2 * j + 1] = static_cast<int8_t>(bit >> 3);
          multiplier[j] = static_cast<uint16_t>(1 << ((bit & 7) + width));
          mask[j] = static_cast<uint16_t>((1 << width) - 1);
        }
        entry[start][width] = {_mm_load_si128(reinterpret_cast<const __m128i*>(shuffle)),
                               _mm_load_si128(reinterpret_cast<const __m128i*>(multiplier)),
                               _mm_load_si128(reinterpret_cast<const __m128i*>(mask))};
      }
    }
  }
};
inline const UnpackTables kUnpackTables;

// Eight values of the given width from the 16 bytes at q.
__attribute__((target("ssse3"))) inline __m128i UnpackEight(const uint8_t* q, const UnpackTables::Entry& table) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m128i lanes =
      _mm_and_si128(_mm_mulhi_epu16(_mm_shuffle_epi8(bytes, table.shuffle), table.multiplier), table.mask);
  return _mm_packus_epi16(lanes, lanes);
}

// Rows of 8-value segments (the default profile): every segment but the last fills exactly `width` bytes, so all
// of a row's segments start at the same bit offset in their first byte (by_width holds the tables for it), each
// one `width` bytes after the one before. The last segment, shorter or not, is unpacked as 8 values.
// This unpacks segments [k, segments), segment k starting at byte q.
template <bool kBases>  // false: every base is 0 (zigzag mode), so skip adding them
__attribute__((target("ssse3"))) inline void UnpackEightsSsse3(const uint8_t* q, const UnpackTables::Entry* by_width,
                                                               const uint8_t* widths, const uint8_t* bases, uint32_t k,
                                                               uint32_t segments, uint8_t* out) {
  for (; k < segments; ++k) {
    const unsigned width = widths[k];
    __m128i values = UnpackEight(q, by_width[width]);
    if (kBases) values = _mm_add_epi8(values, _mm_set1_epi8(static_cast<char>(bases[k])));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 8 * k), values);
    q += width;
  }
}

template <bool kBases>
__attribute__((target("ssse3"))) void UnpackRowSsse3(const CodedRow& coded, uint8_t* out) {
  // Locals, not coded's fields: the byte stores to `out` may alias them as far as the compiler knows.
  const uint8_t* const row = coded.row;
  const uint8_t* const widths = coded.widths;
  const uint8_t* const bases = coded.bases;
  const uint32_t step = coded.step, w = coded.w;
  uint64_t bit = coded.bit;
  if (step == 8) {
    UnpackEightsSsse3<kBases>(row + (bit >> 3), kUnpackTables.entry[bit & 7], widths, bases, 0, (w + 7) / 8, out);
    return;
  }
  for (uint32_t k = 0, x = 0; x < w; ++k, x += step) {
    const unsigned width = widths[k];
    const UnpackTables::Entry& table = kUnpackTables.entry[bit & 7][width];
    const __m128i base = _mm_set1_epi8(static_cast<char>(bases[k]));
    const uint32_t end = std::min(w, x + step);
    const uint8_t* q = row + (bit >> 3);
    for (uint32_t i = x; i < end; i += 8, q += width)  // 8 values of `width` bits are `width` bytes
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_add_epi8(UnpackEight(q, table), base));
    bit += static_cast<uint64_t>(end - x) * width;
  }
}

// (GCC warns that passing __m256i has another ABI without AVX; these helpers only ever inline into AVX2 code.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
__attribute__((target("avx2"))) inline __m256i Pair(const __m128i& low, const __m128i& high) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
}

// Two segments' values in 16-bit lanes: the one at q0 in the low half, the one at q1 in the high half.
__attribute__((target("avx2"))) inline __m256i UnpackTwoEights(const uint8_t* q0, const UnpackTables::Entry& table0,
                                                               const uint8_t* q1, const UnpackTables::Entry& table1) {
  const __m256i bytes = Pair(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0)),
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)));
  const __m256i shifted = _mm256_mulhi_epu16(_mm256_shuffle_epi8(bytes, Pair(table0.shuffle, table1.shuffle)),
                                             Pair(table0.multiplier, table1.multiplier));
  return _mm256_and_si256(shifted, Pair(table0.mask, table1.mask));
}

// Four 8-value segments of widths[0, 4), the first starting at byte q (each fills `width` bytes from the bit
// offset the tables by_width are for): their 32 values, without bases. q moves past them.
__attribute__((target("avx2"))) inline __m256i UnpackFourEights(const uint8_t*& q, const UnpackTables::Entry* by_width,
                                                                const uint8_t* widths) {
  const uint8_t* const q1 = q + widths[0];
  const uint8_t* const q2 = q1 + widths[1];
  const uint8_t* const q3 = q2 + widths[2];
  const __m256i first = UnpackTwoEights(q, by_width[widths[0]], q1, by_width[widths[1]]);
  const __m256i second = UnpackTwoEights(q2, by_width[widths[2]], q3, by_width[widths[3]]);
  q = q3 + widths[3];
  // The pack interleaves the halves: segments 0, 2 | 1, 3; the permutation puts them in order.
  return _mm256_permute4x64_epi64(_mm256_packus_epi16(first, second), 0xd8);
}
#pragma GCC diagnostic pop

// Rows of 8-value segments four segments (32 values) at a time, the rest as UnpackEightsSsse3 does; other rows as
// UnpackRowSsse3 does.
template <bool kBases>
__attribute__((target("avx2"))) void UnpackRowAvx2(const CodedRow& coded, uint8_t* out) {
  if (coded.step != 8) return UnpackRowSsse3<kBases>(coded, out);
  const uint8_t* const widths = coded.widths;
  const uint8_t* const bases = coded.bases;
  const UnpackTables::Entry* const by_width = kUnpackTables.entry[coded.bit & 7];
  const uint32_t segments = (coded.w + 7) / 8;
  const uint8_t* q = coded.row + (coded.bit >> 3);
  uint32_t k = 0;
  for (; k + 4 <= segments; k += 4) {
    __m256i values = UnpackFourEights(q, by_width, widths + k);
    if (kBases) {
      uint32_t four_bases;
      std::memcpy(&four_bases, bases + k, sizeof(four_bases));
      const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                              2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
      values = _mm256_add_epi8(values, _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(four_bases)), spread));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * k), values);
  }
  UnpackEightsSsse3<kBases>(q, by_width, widths, bases, k, segments, out);
}
#endif

using UnpackRowFunction = void (*)(const CodedRow& coded, uint8_t* out);

inline UnpackRowFunction SelectUnpackRow([[maybe_unused]] bool zigzag) {
#ifdef TFLIQUID_L3_X86
  if (__builtin_cpu_supports("avx2")) return zigzag ? UnpackRowAvx2<false> : UnpackRowAvx2<true>;
  if (__builtin_cpu_supports("ssse3")) return zigzag ? UnpackRowSsse3<false> : UnpackRowSsse3<true>;
#endif
  return UnpackRowScalar;
}

// The widths of a row's segments: their largest and their sum.
struct WidthSummary {
  unsigned widest = 0, sum = 0;
};

// How far past the fields SplitNibbles may read, and past out[count) it may write.
inline constexpr size_t kNibblesReadPast = 7;
inline constexpr size_t kNibblesWritePast = 15;

// out[k] = the k-th 4-bit field of `bytes`, high nibble first, k < count.
inline WidthSummary SplitNibbles(const uint8_t* bytes, uint32_t count, uint8_t* out) {
  WidthSummary summary;
#ifdef TFLIQUID_L3_X86
  // 16 fields (8 bytes) at a time, the last block too: its fields past `count` are masked to width 0.
  const __m128i low_nibbles = _mm_set1_epi8(15);
  const __m128i lane_index = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m128i widest = _mm_setzero_si128(), sums = _mm_setzero_si128();
  for (uint32_t k = 0; k < count; k += 16) {
    const __m128i packed = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + k / 2));
    const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), low_nibbles);
    const __m128i in_row = _mm_cmplt_epi8(lane_index, _mm_set1_epi8(static_cast<char>(std::min(count - k, 16u))));
    const __m128i widths = _mm_and_si128(_mm_unpacklo_epi8(high, _mm_and_si128(packed, low_nibbles)), in_row);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), widths);
    widest = _mm_max_epu8(widest, widths);
    sums = _mm_add_epi64(sums, _mm_sad_epu8(widths, _mm_setzero_si128()));
  }
  widest = _mm_max_epu8(widest, _mm_srli_si128(widest, 8));
  widest = _mm_max_epu8(widest, _mm_srli_si128(widest, 4));
  widest = _mm_max_epu8(widest, _mm_srli_si128(widest, 2));
  widest = _mm_max_epu8(widest, _mm_srli_si128(widest, 1));
  summary.widest = _mm_cvtsi128_si32(widest) & 255;
  summary.sum = static_cast<unsigned>(_mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4));
#else
  for (uint32_t k = 0; k < count; ++k) {
    out[k] = k & 1 ? bytes[k >> 1] & 15 : bytes[k >> 1] >> 4;
    summary.widest = std::max<unsigned>(summary.widest, out[k]);
    summary.sum += out[k];
  }
#endif
  return summary;
}

inline uint8_t Unzigzag(uint8_t v) { return static_cast<uint8_t>((v >> 1) ^ (0u - (v & 1u))); }

// row[x] = residual(coded[x]) + Paeth(prev[x-1], prev[x], prev[x+1]) for x in [0, w); prev[-1] and prev[w]
// hold the replicated edge pixels, and row[-1] and row[w] receive row's, for the next row's prediction.
template <bool kZigzag>
void ReconstructScalar(const uint8_t* prev, const uint8_t* coded, uint32_t w, uint8_t* row) {
  for (uint32_t x = 0; x < w; ++x) {
    const uint8_t residual = kZigzag ? Unzigzag(coded[x]) : coded[x];
    row[x] = static_cast<uint8_t>(residual + PaethOfPrevious(prev[static_cast<int64_t>(x) - 1], prev[x], prev[x + 1]));
  }
  row[-1] = row[0];
  row[w] = row[w - 1];
}

#ifdef TFLIQUID_L3_X86
// The Paeth choice of 32 pixels in unsigned bytes, no widening. With s1 = a - b and s2 = c - b, the distances are
// |p-a| = |s2| = da, |p-c| = |s1| = dc and |p-b| = |s1 + s2|, which is da + dc when s1 and s2 have the same sign
// (then a wins when da <= dc, and b never does, since da + dc <= dc would need da = 0 <= dc) and |da - dc| when
// they do not (at most 255: it fits a byte). A zero s1 or s2 fits both cases.
// (GCC warns that passing __m256i has another ABI without AVX; these helpers only ever inline into AVX2 code.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
__attribute__((target("avx2"))) inline __m256i AtMost(__m256i x, __m256i y) {  // unsigned x <= y, bytewise
  return _mm256_cmpeq_epi8(_mm256_min_epu8(x, y), x);
}

__attribute__((target("avx2"))) inline __m256i Load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

__attribute__((target("avx2"))) inline __m256i Paeth32(__m256i a, __m256i b, __m256i c) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i a_over_b = _mm256_subs_epu8(a, b), b_over_a = _mm256_subs_epu8(b, a);
  const __m256i c_over_b = _mm256_subs_epu8(c, b), b_over_c = _mm256_subs_epu8(b, c);
  const __m256i da = _mm256_or_si256(c_over_b, b_over_c), dc = _mm256_or_si256(a_over_b, b_over_a);
  const __m256i same_sign = _mm256_cmpeq_epi8(_mm256_cmpeq_epi8(a_over_b, zero), _mm256_cmpeq_epi8(c_over_b, zero));
  const __m256i db_opposite = _mm256_or_si256(_mm256_subs_epu8(da, dc), _mm256_subs_epu8(dc, da));
  const __m256i pick_a = _mm256_and_si256(AtMost(da, dc), _mm256_or_si256(same_sign, AtMost(da, db_opposite)));
  const __m256i pick_b = _mm256_andnot_si256(same_sign, AtMost(db_opposite, dc));
  return _mm256_blendv_epi8(_mm256_blendv_epi8(c, b, pick_b), a, pick_a);
}

// Unzigzag of 32 bytes: (v >> 1) ^ -(v & 1), bytewise; the 16-bit shift brings in a neighbour's bit, masked off.
__attribute__((target("avx2"))) inline __m256i Unzigzag32(__m256i v) {
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i odd = _mm256_cmpeq_epi8(_mm256_and_si256(v, one), one);
  return _mm256_xor_si256(_mm256_and_si256(_mm256_srli_epi16(v, 1), _mm256_set1_epi8(0x7f)), odd);
}

// Pixels [0, 32) of a row.
template <bool kZigzag>
__attribute__((target("avx2"))) inline __m256i Reconstruct32(const uint8_t* prev, const uint8_t* coded) {
  __m256i residual = Load32(coded);
  if (kZigzag) residual = Unzigzag32(residual);
  return _mm256_add_epi8(residual, Paeth32(Load32(prev - 1), Load32(prev), Load32(prev + 1)));
}
#pragma GCC diagnostic pop

template <bool kZigzag>
__attribute__((target("avx2"))) void ReconstructAvx2(const uint8_t* prev, const uint8_t* coded, uint32_t w,
                                                     uint8_t* row) {
  if (w < 32) return ReconstructScalar<kZigzag>(prev, coded, w, row);
  // The edge pixels are copied from registers: a byte load of what a 32-byte store has just written stalls until
  // the store reaches the cache, and so would the next row's loads if the edge bytes were stored just before.
  __m256i pixels = Reconstruct32<kZigzag>(prev, coded);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), pixels);
  row[-1] = static_cast<uint8_t>(_mm256_cvtsi256_si32(pixels));
  for (uint32_t x = 32; x < w; x += 32) {
    // When 32 does not divide w, the last block overlaps the one before instead of leaving a scalar tail: row[x]
    // depends on prev and coded alone, so its pixels come out the same again.
    x = std::min(x, w - 32);
    pixels = Reconstruct32<kZigzag>(prev + x, coded + x);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + x), pixels);
  }
  row[w] = static_cast<uint8_t>(_mm256_extract_epi8(pixels, 31));
}
#endif

using ReconstructFunction = void (*)(const uint8_t* prev, const uint8_t* coded, uint32_t w, uint8_t* row);

inline ReconstructFunction SelectReconstruct(bool zigzag) {
#ifdef TFLIQUID_L3_X86
  if (__builtin_cpu_supports("avx2")) return zigzag ? ReconstructAvx2<true> : ReconstructAvx2<false>;
#endif
  return zigzag ? ReconstructScalar<true> : ReconstructScalar<false>;
}

// out[x * C + c] = plane[c][x] (+ plane[1][x] for c = 0 and 2 under subtract-green), x in [0, n).
template <int kChannels, bool kSubtractGreen>
void InterleaveScalar(const uint8_t* const* plane, uint32_t n, uint8_t* out) {
  for (uint32_t x = 0; x < n; ++x) {
    for (int c = 0; c < kChannels; ++c) {
      const bool shifted = kSubtractGreen && (c == 0 || c == 2);
      out[x * kChannels + c] = static_cast<uint8_t>(plane[c][x] + (shifted ? plane[1][x] : 0));
    }
  }
}

#ifdef TFLIQUID_L3_X86
// The SIMD loops take 16 or 32 pixels at a time. When that does not divide n, the last block overlaps the one
// before (writing the same bytes again) instead of leaving a scalar tail; shorter rows go to the narrower loop.

// Byte shuffles that interleave 16 pixels of three planes: byte i of output block k (16 bytes) takes plane
// (16k + i) % 3's pixel (16k + i) / 3; -1 leaves a zero to OR into. The AVX2 loop's 32-byte outputs o = 0, 1, 2
// are blocks (2o, 2o + 1) % 3 of the pixels in their lanes.
struct RgbShuffles {
  alignas(32) int8_t block[3][3][16];   // [output block k][plane]
  alignas(32) int8_t output[3][3][32];  // [32-byte output o][plane]
};

constexpr RgbShuffles MakeRgbShuffles() {
  RgbShuffles shuffles{};
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 16; ++i) {
        const int byte = 16 * k + i;
        shuffles.block[k][c][i] = static_cast<int8_t>(byte % 3 == c ? byte / 3 : -1);
      }
  for (int o = 0; o < 3; ++o)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 32; ++i) shuffles.output[o][c][i] = shuffles.block[(2 * o + i / 16) % 3][c][i % 16];
  return shuffles;
}
inline constexpr RgbShuffles kRgbShuffles = MakeRgbShuffles();

// A span of whole cache lines is streamed past the cache: the image is written once and is larger than the
// caches, so reading its lines in before overwriting them, as plain stores do, only costs memory bandwidth.
// Partial lines are not: a line written partly by streaming stores and partly by others is slower than both
// (measured: streaming the whole lines inside every row made the shipped photos decode 25% slower). Such a span
// is a multiple of 64 pixels, so it has no overlapping last block.
inline bool WholeCacheLines(const uint8_t* out, uint32_t bytes) {
  return (reinterpret_cast<uintptr_t>(out) & 63) == 0 && bytes % 64 == 0;
}

// 16 pixels of three planes to 48 interleaved bytes with byte shuffles (SSSE3).
template <bool kSubtractGreen>
__attribute__((target("ssse3"))) void InterleaveRgbSsse3(const uint8_t* const* plane, uint32_t n, uint8_t* out) {
  if (n < 16) return InterleaveScalar<3, kSubtractGreen>(plane, n, out);
  const bool whole_lines = WholeCacheLines(out, 3 * n);
  for (uint32_t x = 0; x < n; x += 16) {
    x = std::min(x, n - 16);
    __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[0] + x));
    const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[1] + x));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[2] + x));
    if (kSubtractGreen) {
      r = _mm_add_epi8(r, g);
      b = _mm_add_epi8(b, g);
    }
    for (int k = 0; k < 3; ++k) {
      const __m128i* mask = reinterpret_cast<const __m128i*>(kRgbShuffles.block[k]);
      const __m128i block = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(r, _mm_load_si128(mask)), _mm_shuffle_epi8(g, _mm_load_si128(mask + 1))),
          _mm_shuffle_epi8(b, _mm_load_si128(mask + 2)));
      __m128i* target = reinterpret_cast<__m128i*>(out + 3 * x + 16 * k);
      if (whole_lines)
        _mm_stream_si128(target, block);
      else
        _mm_storeu_si128(target, block);
    }
  }
}

// 32 pixels of three planes to 96 interleaved bytes (AVX2). Its shuffles stay within 16-byte lanes, so each output
// takes its sources with the 16 pixels each lane needs: the low 16 in both lanes, all 32, the high 16 in both.
template <bool kSubtractGreen>
__attribute__((target("avx2"))) void InterleaveRgbAvx2(const uint8_t* const* plane, uint32_t n, uint8_t* out) {
  if (n < 32) return InterleaveRgbSsse3<kSubtractGreen>(plane, n, out);
  const bool whole_lines = WholeCacheLines(out, 3 * n);
  for (uint32_t x = 0; x < n; x += 32) {
    x = std::min(x, n - 32);
    __m256i rgb[3] = {Load32(plane[0] + x), Load32(plane[1] + x), Load32(plane[2] + x)};
    if (kSubtractGreen) {
      rgb[0] = _mm256_add_epi8(rgb[0], rgb[1]);
      rgb[2] = _mm256_add_epi8(rgb[2], rgb[1]);
    }
    for (int o = 0; o < 3; ++o) {
      const __m256i* mask = reinterpret_cast<const __m256i*>(kRgbShuffles.output[o]);
      __m256i block = _mm256_setzero_si256();
      for (int c = 0; c < 3; ++c) {
        const __m256i source = o == 0   ? _mm256_permute4x64_epi64(rgb[c], 0x44)
                               : o == 1 ? rgb[c]
                                        : _mm256_permute4x64_epi64(rgb[c], 0xee);
        block = _mm256_or_si256(block, _mm256_shuffle_epi8(source, _mm256_load_si256(mask + c)));
      }
      __m256i* target = reinterpret_cast<__m256i*>(out + 3 * x + 32 * o);
      if (whole_lines)
        _mm256_stream_si256(target, block);
      else
        _mm256_storeu_si256(target, block);
    }
  }
}

// 16 pixels of four planes to 64 interleaved bytes (SSE2 unpacks).
template <bool kSubtractGreen>
void InterleaveRgbaSse2(const uint8_t* const* plane, uint32_t n, uint8_t* out) {
  if (n < 16) return InterleaveScalar<4, kSubtractGreen>(plane, n, out);
  for (uint32_t x = 0; x < n; x += 16) {
    x = std::min(x, n - 16);
    __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[0] + x));
    const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[1] + x));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[2] + x));
    const __m128i alpha = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[3] + x));
    if (kSubtractGreen) {
      r = _mm_add_epi8(r, g);
      b = _mm_add_epi8(b, g);
    }
    const __m128i rg_low = _mm_unpacklo_epi8(r, g), rg_high = _mm_unpackhi_epi8(r, g);
    const __m128i ba_low = _mm_unpacklo_epi8(b, alpha), ba_high = _mm_unpackhi_epi8(b, alpha);
    __m128i* dst = reinterpret_cast<__m128i*>(out + 4 * x);
    _mm_storeu_si128(dst, _mm_unpacklo_epi16(rg_low, ba_low));
    _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(rg_low, ba_low));
    _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(rg_high, ba_high));
    _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(rg_high, ba_high));
  }
}
#endif

using InterleaveFunction = void (*)(const uint8_t* const* plane, uint32_t n, uint8_t* out);

inline InterleaveFunction SelectInterleave(int channels, bool subtract_green) {
#ifdef TFLIQUID_L3_X86
  if (channels == 3 && __builtin_cpu_supports("avx2"))
    return subtract_green ? InterleaveRgbAvx2<true> : InterleaveRgbAvx2<false>;
  if (channels == 3 && __builtin_cpu_supports("ssse3"))
    return subtract_green ? InterleaveRgbSsse3<true> : InterleaveRgbSsse3<false>;
  if (channels == 4) return subtract_green ? InterleaveRgbaSse2<true> : InterleaveRgbaSse2<false>;
#endif
  switch (channels * 2 + subtract_green) {
    case 2: return InterleaveScalar<1, false>;
    case 6: return InterleaveScalar<3, false>;
    case 7: return InterleaveScalar<3, true>;
    case 8: return InterleaveScalar<4, false>;
    default: return InterleaveScalar<4, true>;
  }
}

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_ROW_KERNELS_H_
