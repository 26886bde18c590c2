// The SIMD row loops of the L3 decoder (ops/l3/l3_row_kernels.h) against their scalar versions, which are the
// format's definition written out (and which the fuzz target and the op tests check against the reference).
// The Paeth choice is checked on all 2^24 neighbourhoods; the rest on random rows of every width, segment
// length, bit width and starting bit offset, in buffers no larger than the loops' stated reach, so that the
// ASan build catches a loop reading or writing past it. No TensorFlow. Exits 1 on the first difference.
//
// Usage: ops/tests/l3_row_kernels.sh
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "l3/l3_row_kernels.h"

namespace tfliquid::l3 {
namespace {

int failures = 0;

void Check(bool ok, const char* what, int detail) {
  if (!ok && failures++ < 10) std::printf("MISMATCH %s (%d)\n", what, detail);
}

std::vector<uint8_t> RandomBytes(std::mt19937* rng, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>((*rng)());
  return bytes;
}

#ifdef TFLIQUID_L3_X86
__attribute__((target("avx2"))) void Paeth32Of(const uint8_t* a, const uint8_t* b, const uint8_t* c, uint8_t* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), Paeth32(Load32(a), Load32(b), Load32(c)));
}

void CheckPaethOnAllNeighbourhoods() {
  if (!__builtin_cpu_supports("avx2")) return;
  uint8_t a[32], b[32], c[32], chosen[32];
  for (int top = 0; top < 256; ++top) {
    for (int right = 0; right < 256; ++right) {
      for (int left0 = 0; left0 < 256; left0 += 32) {
        for (int i = 0; i < 32; ++i) a[i] = static_cast<uint8_t>(left0 + i), b[i] = top, c[i] = right;
        Paeth32Of(a, b, c, chosen);
        for (int i = 0; i < 32; ++i) Check(chosen[i] == PaethOfPrevious(a[i], top, right), "Paeth32", a[i]);
      }
    }
  }
}
#endif

template <bool kZigzag>
void CheckReconstruct(std::mt19937* rng) {
  for (uint32_t w = 1; w <= 300; ++w) {
    std::vector<uint8_t> prev = RandomBytes(rng, w + 2), coded = RandomBytes(rng, w);
    prev[0] = prev[1], prev[w + 1] = prev[w];       // the replicated edges
    std::vector<uint8_t> fast(w + 2), slow(w + 2);  // with the spare bytes for row's replicated edges
    SelectReconstruct(kZigzag)(prev.data() + 1, coded.data(), w, fast.data() + 1);
    ReconstructScalar<kZigzag>(prev.data() + 1, coded.data(), w, slow.data() + 1);
    Check(slow == fast && slow[0] == slow[1] && slow[w + 1] == slow[w], "Reconstruct", static_cast<int>(w));
  }
}

// Every unpacker this CPU can run, the one SelectUnpackRow picks first.
std::vector<UnpackRowFunction> Unpackers(bool zigzag) {
  std::vector<UnpackRowFunction> unpackers{SelectUnpackRow(zigzag)};
#ifdef TFLIQUID_L3_X86
  if (__builtin_cpu_supports("ssse3")) unpackers.push_back(zigzag ? UnpackRowSsse3<false> : UnpackRowSsse3<true>);
#endif
  return unpackers;
}

void CheckUnpack(std::mt19937* rng, bool zigzag) {
  const std::vector<UnpackRowFunction> unpackers = Unpackers(zigzag);
  for (int trial = 0; trial < 6000; ++trial) {
    const uint32_t w = 1 + (*rng)() % 200;
    // Mostly 8-value segments, the default profile's, which have loops of their own.
    const uint32_t step = trial % 4 < 2 ? 8 : trial % 4 == 2 ? w : 1 + (*rng)() % 40;
    const uint32_t segments = (w + step - 1) / step;
    std::vector<uint8_t> widths(segments), bases(segments, 0);
    const uint64_t first_bit = (*rng)() % 64;
    uint64_t bits = first_bit;
    for (uint32_t k = 0; k < segments; ++k) {
      widths[k] = static_cast<uint8_t>((*rng)() % 9);
      if (!zigzag) bases[k] = static_cast<uint8_t>((*rng)());
      bits += static_cast<uint64_t>(std::min(step, w - k * step)) * widths[k];
    }
    const std::vector<uint8_t> row = RandomBytes(rng, (bits + 7) / 8 + kUnpackReadsPast);
    const CodedRow coded{row.data(), first_bit, widths.data(), bases.data(), step, w};
    std::vector<uint8_t> slow(w + kUnpackWritesPast);
    UnpackRowScalar(coded, slow.data());
    for (const UnpackRowFunction unpack : unpackers) {
      std::vector<uint8_t> fast(w + kUnpackWritesPast);
      unpack(coded, fast.data());
      Check(std::equal(slow.begin(), slow.begin() + w, fast.begin()), "UnpackRow", trial);
    }
  }
}

void CheckSplitNibbles(std::mt19937* rng) {
  for (uint32_t count = 1; count <= 300; ++count) {
    const std::vector<uint8_t> bytes = RandomBytes(rng, (count + 1) / 2 + kNibblesReadPast);
    std::vector<uint8_t> widths(count + kNibblesWritePast);
    const WidthSummary summary = SplitNibbles(bytes.data(), count, widths.data());
    unsigned widest = 0, sum = 0;
    for (uint32_t k = 0; k < count; ++k) {
      const unsigned expected = k & 1 ? bytes[k / 2] & 15 : bytes[k / 2] >> 4;
      Check(widths[k] == expected, "SplitNibbles", static_cast<int>(count));
      widest = std::max(widest, expected);
      sum += expected;
    }
    Check(summary.widest == widest && summary.sum == sum, "SplitNibbles summary", static_cast<int>(count));
  }
}

// Every interleaver this CPU can run for the layout, the one SelectInterleave picks first.
template <int kChannels, bool kSubtractGreen>
std::vector<InterleaveFunction> Interleavers() {
  std::vector<InterleaveFunction> interleavers{SelectInterleave(kChannels, kSubtractGreen)};
#ifdef TFLIQUID_L3_X86
  if (kChannels == 3 && __builtin_cpu_supports("ssse3")) interleavers.push_back(InterleaveRgbSsse3<kSubtractGreen>);
#endif
  return interleavers;
}

template <int kChannels, bool kSubtractGreen>
void CheckInterleave(std::mt19937* rng) {
  const std::vector<InterleaveFunction> interleavers = Interleavers<kChannels, kSubtractGreen>();
  for (uint32_t n = 1; n <= 200; ++n) {
    std::vector<std::vector<uint8_t>> planes;
    const uint8_t* plane[kChannels];
    for (int c = 0; c < kChannels; ++c) planes.push_back(RandomBytes(rng, n)), plane[c] = planes.back().data();
    std::vector<uint8_t> slow(n * kChannels);
    InterleaveScalar<kChannels, kSubtractGreen>(plane, n, slow.data());
    // Output rows at every offset from a cache line (streamed when aligned and of whole lines), in buffers that
    // end where the row does.
    for (size_t misalign = 0; misalign < 64; ++misalign) {
      const size_t size = misalign + n * kChannels;
      uint8_t* const buffer = static_cast<uint8_t*>(::operator new(size, std::align_val_t{64}));
      for (const InterleaveFunction interleave : interleavers) {
        interleave(plane, n, buffer + misalign);
#ifdef TFLIQUID_L3_X86
        _mm_sfence();  // after streaming stores, as the decoder does
#endif
        Check(std::equal(slow.begin(), slow.end(), buffer + misalign), "Interleave",
              kChannels * 1000 + static_cast<int>(n));
      }
      ::operator delete(buffer, std::align_val_t{64});
    }
  }
}

}  // namespace
}  // namespace tfliquid::l3

int main() {
  using namespace tfliquid::l3;
  std::mt19937 rng(7);
#ifdef TFLIQUID_L3_X86
  CheckPaethOnAllNeighbourhoods();
#endif
  CheckReconstruct<true>(&rng);
  CheckReconstruct<false>(&rng);
  CheckUnpack(&rng, true);
  CheckUnpack(&rng, false);
  CheckSplitNibbles(&rng);
  CheckInterleave<1, false>(&rng);
  CheckInterleave<3, false>(&rng);
  CheckInterleave<3, true>(&rng);
  CheckInterleave<4, false>(&rng);
  CheckInterleave<4, true>(&rng);
  if (failures) {
    std::printf("%d mismatches\n", failures);
    return 1;
  }
  std::printf("l3 row kernels: SIMD and scalar agree\n");
  return 0;
}
