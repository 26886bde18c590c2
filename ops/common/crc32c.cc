#include "common/crc32c.h"

#include <array>
#include <cstring>

namespace tfliquid {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t;
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

uint32_t Crc32cTable(const uint8_t* p, size_t n, uint32_t c) {
  const auto& t = GetTables().t;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian host (x86-64, aarch64)
    word ^= c;
    c = t[7][word & 0xFF] ^ t[6][(word >> 8) & 0xFF] ^ t[5][(word >> 16) & 0xFF] ^ t[4][(word >> 24) & 0xFF] ^
        t[3][(word >> 32) & 0xFF] ^ t[2][(word >> 40) & 0xFF] ^ t[1][(word >> 48) & 0xFF] ^ t[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return c;
}

#if defined(__x86_64__)
// Appending `len` zero bytes to a message multiplies its CRC by x^(8 len) mod P: a linear map of the 32 CRC bits,
// applied byte by byte through four tables (Mark Adler's crc32c.c). It joins CRCs computed side by side.
class ZerosOperator {
 public:
  // `len` a power of two.
  explicit ZerosOperator(size_t len) {
    std::array<uint32_t, 32> odd, even;  // operators for an odd and an even power of two zero bits
    odd[0] = kPolynomial;                // one zero bit
    for (int n = 1; n < 32; ++n) odd[n] = 1u << (n - 1);
    Square(odd, &even);  // two zero bits
    Square(even, &odd);  // four
    // Squaring doubles the zeros: eight bits (one byte) in even, then two bytes in odd, ..., until len is used up.
    std::array<uint32_t, 32>* result = &even;
    while (true) {
      Square(odd, &even);
      result = &even;
      if ((len >>= 1) == 0) break;
      Square(even, &odd);
      result = &odd;
      if ((len >>= 1) == 0) break;
    }
    for (uint32_t n = 0; n < 256; ++n) {
      for (int byte = 0; byte < 4; ++byte) tables_[byte][n] = Times(*result, n << (8 * byte));
    }
  }

  uint32_t Apply(uint32_t crc) const {
    return tables_[0][crc & 0xFF] ^ tables_[1][(crc >> 8) & 0xFF] ^ tables_[2][(crc >> 16) & 0xFF] ^
           tables_[3][crc >> 24];
  }

 private:
  static uint32_t Times(const std::array<uint32_t, 32>& matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (int n = 0; vector; ++n, vector >>= 1) {
      if (vector & 1) sum ^= matrix[n];
    }
    return sum;
  }
  static void Square(const std::array<uint32_t, 32>& matrix, std::array<uint32_t, 32>* square) {
    for (int n = 0; n < 32; ++n) (*square)[n] = Times(matrix, matrix[n]);
  }

  std::array<std::array<uint32_t, 256>, 4> tables_;
};

__attribute__((target("sse4.2"))) inline uint64_t Crc32cWord(uint64_t crc, const uint8_t* p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return __builtin_ia32_crc32di(crc, word);
}

// The crc32 instruction takes 3 cycles and issues one per cycle: three independent streams over the thirds of a
// block keep it busy, joined by shifting the first two CRCs over the thirds after them.
template <size_t kBlock>
__attribute__((target("sse4.2"))) uint64_t Crc32cBlocks(const uint8_t*& p, size_t& n, uint64_t c0) {
  static const ZerosOperator shift(kBlock);
  while (n >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    for (const uint8_t* end = p + kBlock; p < end; p += 8) {
      c0 = Crc32cWord(c0, p);
      c1 = Crc32cWord(c1, p + kBlock);
      c2 = Crc32cWord(c2, p + 2 * kBlock);
    }
    c0 = shift.Apply(static_cast<uint32_t>(c0)) ^ c1;
    c0 = shift.Apply(static_cast<uint32_t>(c0)) ^ c2;
    p += 2 * kBlock;
    n -= 3 * kBlock;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const uint8_t* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  c64 = Crc32cBlocks<8192>(p, n, c64);
  c64 = Crc32cBlocks<256>(p, n, c64);
  while (n >= 8) {
    c64 = Crc32cWord(c64, p);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n--) c = __builtin_ia32_crc32qi(c, *p++);
  return c;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (HasSse42()) return ~Crc32cHardware(p, n, c);
#endif
  return ~Crc32cTable(p, n, c);
}

}  // namespace tfliquid
