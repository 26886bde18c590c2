// The per-pixel loops of the L3 decoder, with SSE2/SSSE3/AVX2 versions on x86 picked at run time (the scalar
// loops finish each row and are the whole implementation elsewhere). GCC does not vectorize the scalar Paeth loop well: it widens to
// 32-bit lanes, and it interleaves three planes byte by byte. Internal to ops/l3.
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
// SSSE3: pshufb gathers, for each of 8 values, the two bytes holding it into a 16-bit lane (big-endian), a
// multiply by 2^(its bit offset in the first byte) moves it to the top of the lane, and one shift by 16 - width
// brings it down. The shuffles and multipliers depend on the width and the segment's starting bit offset.
struct UnpackTables {
  struct Entry {
    __m128i shuffle, multiplier, down;
  };
  Entry entry[9][8];  // [width][bit offset of the first value in its byte]
  UnpackTables() {
    for (int width = 0; width <= 8; ++width) {
      for (int start = 0; start < 8; ++start) {
        alignas(16) int8_t shuffle[16];
        alignas(16) int16_t multiplier[8];
        for (int j = 0; j < 8; ++j) {
          const int bit = start + width * j;
          shuffle[2 * j] = static_cast<int8_t>((bit >> 3) + 1);
          shuffle[2 * j + 1] = static_cast<int8_t>(bit >> 3);
          multiplier[j] = static_cast<int16_t>(1 << (bit & 7));
        }
        entry[width][start] = {_mm_load_si128(reinterpret_cast<const __m128i*>(shuffle)),
                               _mm_load_si128(reinterpret_cast<const __m128i*>(multiplier)),
                               _mm_cvtsi32_si128(16 - width)};
      }
    }
  }
};
inline const UnpackTables kUnpackTables;

// Eight values of the given width from the 16 bytes at q.
__attribute__((target("ssse3"))) inline __m128i UnpackEight(const uint8_t* q, const UnpackTables::Entry& table) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  const __m128i lanes = _mm_srl_epi16(_mm_mullo_epi16(_mm_shuffle_epi8(bytes, table.shuffle), table.multiplier),
                                      table.down);
  return _mm_packus_epi16(lanes, lanes);
}

template <bool kBases>  // false: every base is 0 (zigzag mode), so skip adding them
__attribute__((target("ssse3"))) void UnpackRowSsse3(const CodedRow& coded, uint8_t* out) {
  // Locals, not coded's fields: the byte stores to `out` may alias them as far as the compiler knows.
  const uint8_t* const row = coded.row;
  const uint8_t* const widths = coded.widths;
  const uint8_t* const bases = coded.bases;
  const uint32_t step = coded.step, w = coded.w;
  uint64_t bit = coded.bit;
  uint32_t k = 0, x = 0;
  if (step == 8) {  // the default profile: one step per segment
    for (; x + 8 <= w; ++k, x += 8) {
      const unsigned width = widths[k];
      __m128i values = UnpackEight(row + (bit >> 3), kUnpackTables.entry[width][bit & 7]);
      if (kBases) values = _mm_add_epi8(values, _mm_set1_epi8(static_cast<char>(bases[k])));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + x), values);
      bit += 8 * width;
    }
  }
  for (; x < w; ++k, x += step) {
    const unsigned width = widths[k];
    const UnpackTables::Entry& table = kUnpackTables.entry[width][bit & 7];
    const __m128i base = _mm_set1_epi8(static_cast<char>(bases[k]));
    const uint32_t end = std::min(w, x + step);
    const uint8_t* q = row + (bit >> 3);
    for (uint32_t i = x; i < end; i += 8, q += width)  // 8 values of `width` bits are `width` bytes
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_add_epi8(UnpackEight(q, table), base));
    bit += static_cast<uint64_t>(end - x) * width;
  }
}
#endif

using UnpackRowFunction = void (*)(const CodedRow& coded, uint8_t* out);

inline UnpackRowFunction SelectUnpackRow([[maybe_unused]] bool zigzag) {
#ifdef TFLIQUID_L3_X86
  if (__builtin_cpu_supports("ssse3")) return zigzag ? UnpackRowSsse3<false> : UnpackRowSsse3<true>;
#endif
  return UnpackRowScalar;
}

// The widths of a row's segments: their largest and their sum.
struct WidthSummary {
  unsigned widest = 0, sum = 0;
};

// out[k] = the k-th 4-bit field of `bytes`, high nibble first, k < count.
inline WidthSummary SplitNibbles(const uint8_t* bytes, uint32_t count, uint8_t* out) {
  WidthSummary summary;
  uint32_t k = 0;
#ifdef TFLIQUID_L3_X86
  const __m128i low_nibbles = _mm_set1_epi8(15);
  __m128i widest = _mm_setzero_si128(), sums = _mm_setzero_si128();
  for (; k + 16 <= count; k += 16) {
    const __m128i packed = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + k / 2));
    const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), low_nibbles);
    const __m128i widths = _mm_unpacklo_epi8(high, _mm_and_si128(packed, low_nibbles));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), widths);
    widest = _mm_max_epu8(widest, widths);
    sums = _mm_add_epi64(sums, _mm_sad_epu8(widths, _mm_setzero_si128()));
  }
  alignas(16) uint8_t lanes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), widest);
  for (uint8_t lane : lanes) summary.widest = std::max<unsigned>(summary.widest, lane);
  summary.sum = static_cast<unsigned>(_mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4));
#endif
  for (; k < count; ++k) {
    out[k] = k & 1 ? bytes[k >> 1] & 15 : bytes[k >> 1] >> 4;
    summary.widest = std::max<unsigned>(summary.widest, out[k]);
    summary.sum += out[k];
  }
  return summary;
}

inline uint8_t Unzigzag(uint8_t v) { return static_cast<uint8_t>((v >> 1) ^ (0u - (v & 1u))); }

// row[x] = residual(coded[x]) + Paeth(prev[x-1], prev[x], prev[x+1]) for x in [from, w); prev[-1] and prev[w]
// hold the replicated edge pixels.
template <bool kZigzag>
void ReconstructScalar(const uint8_t* prev, const uint8_t* coded, uint32_t from, uint32_t w, uint8_t* row) {
  for (uint32_t x = from; x < w; ++x) {
    const uint8_t residual = kZigzag ? Unzigzag(coded[x]) : coded[x];
    row[x] = static_cast<uint8_t>(residual + PaethOfPrevious(prev[static_cast<int64_t>(x) - 1], prev[x], prev[x + 1]));
  }
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
#pragma GCC diagnostic pop

template <bool kZigzag>
__attribute__((target("avx2"))) void ReconstructAvx2(const uint8_t* prev, const uint8_t* coded, uint32_t w,
                                                     uint8_t* row) {
  uint32_t x = 0;
  for (; x + 32 <= w; x += 32) {
    __m256i residual = Load32(coded + x);
    if (kZigzag) {
      // (v >> 1) ^ -(v & 1), bytewise: the 16-bit shift brings in a neighbour's bit, masked off.
      const __m256i one = _mm256_set1_epi8(1);
      const __m256i odd = _mm256_cmpeq_epi8(_mm256_and_si256(residual, one), one);
      residual = _mm256_xor_si256(_mm256_and_si256(_mm256_srli_epi16(residual, 1), _mm256_set1_epi8(0x7f)), odd);
    }
    const __m256i predicted = Paeth32(Load32(prev + x - 1), Load32(prev + x), Load32(prev + x + 1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + x), _mm256_add_epi8(residual, predicted));
  }
  ReconstructScalar<kZigzag>(prev, coded, x, w, row);
}
#endif

using ReconstructFunction = void (*)(const uint8_t* prev, const uint8_t* coded, uint32_t w, uint8_t* row);

template <bool kZigzag>
void ReconstructPortable(const uint8_t* prev, const uint8_t* coded, uint32_t w, uint8_t* row) {
  ReconstructScalar<kZigzag>(prev, coded, 0, w, row);
}

inline ReconstructFunction SelectReconstruct(bool zigzag) {
#ifdef TFLIQUID_L3_X86
  if (__builtin_cpu_supports("avx2")) return zigzag ? ReconstructAvx2<true> : ReconstructAvx2<false>;
#endif
  return zigzag ? ReconstructPortable<true> : ReconstructPortable<false>;
}

// out[x * C + c] = plane[c][x] (+ plane[1][x] for c = 0 and 2 under subtract-green), x in [from, n).
template <int kChannels, bool kSubtractGreen>
void InterleaveScalar(const uint8_t* const* plane, uint32_t from, uint32_t n, uint8_t* out) {
  for (uint32_t x = from; x < n; ++x) {
    for (int c = 0; c < kChannels; ++c) {
      const bool shifted = kSubtractGreen && (c == 0 || c == 2);
      out[x * kChannels + c] = static_cast<uint8_t>(plane[c][x] + (shifted ? plane[1][x] : 0));
    }
  }
}

#ifdef TFLIQUID_L3_X86
// 16 pixels of three planes to 48 interleaved bytes with byte shuffles (SSSE3).
__attribute__((target("ssse3"))) inline void InterleaveRgbSsse3(const uint8_t* const* plane, uint32_t n,
                                                                  uint8_t* out, bool subtract_green, uint32_t* done) {
  // Output byte i of each 16-byte block takes plane (i % 3)'s pixel (i / 3); -1 leaves a zero to OR into.
  alignas(16) static const int8_t kShuffle[3][3][16] = {
      {{0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5},
       {-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1},
       {-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1}},
      {{-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1},
       {5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10},
       {-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1}},
      {{-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1},
       {-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1},
       {10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15}}};
  // A span of whole cache lines is streamed past the cache: the image is written once and is larger than the
  // caches, so reading its lines in before overwriting them, as plain stores do, only costs memory bandwidth.
  // Partial lines are not: a line written partly by streaming stores and partly by others is slower than both
  // (measured: streaming the whole lines inside every row made the shipped photos decode 25% slower).
  const bool whole_lines = (reinterpret_cast<uintptr_t>(out) & 63) == 0 && (3 * n) % 64 == 0;
  uint32_t x = 0;
  for (; x + 16 <= n; x += 16) {
    __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[0] + x));
    const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[1] + x));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[2] + x));
    if (subtract_green) {
      r = _mm_add_epi8(r, g);
      b = _mm_add_epi8(b, g);
    }
    for (int k = 0; k < 3; ++k) {
      const __m128i* mask = reinterpret_cast<const __m128i*>(kShuffle[k]);
      const __m128i block = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, _mm_load_si128(mask)),
                                                      _mm_shuffle_epi8(g, _mm_load_si128(mask + 1))),
                                         _mm_shuffle_epi8(b, _mm_load_si128(mask + 2)));
      __m128i* target = reinterpret_cast<__m128i*>(out + 3 * x + 16 * k);
      if (whole_lines)
        _mm_stream_si128(target, block);
      else
        _mm_storeu_si128(target, block);
    }
  }
  *done = x;
}

// 16 pixels of four planes to 64 interleaved bytes (SSE2 unpacks).
inline void InterleaveRgbaSse2(const uint8_t* const* plane, uint32_t n, uint8_t* out, bool subtract_green,
                               uint32_t* done) {
  uint32_t x = 0;
  for (; x + 16 <= n; x += 16) {
    __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[0] + x));
    const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[1] + x));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[2] + x));
    const __m128i alpha = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plane[3] + x));
    if (subtract_green) {
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
  *done = x;
}
#endif

template <int kChannels, bool kSubtractGreen>
void InterleaveRow(const uint8_t* const* plane, uint32_t n, uint8_t* out) {
  uint32_t done = 0;
#ifdef TFLIQUID_L3_X86
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (kChannels == 3 && ssse3) InterleaveRgbSsse3(plane, n, out, kSubtractGreen, &done);
  if (kChannels == 4) InterleaveRgbaSse2(plane, n, out, kSubtractGreen, &done);
#endif
  InterleaveScalar<kChannels, kSubtractGreen>(plane, done, n, out);
}

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_ROW_KERNELS_H_
