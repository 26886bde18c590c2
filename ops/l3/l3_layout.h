// What the L3 encoder, header parser and decoder share (docs/formats/l3.md): magic, flags, the patch grid, the
// custom Paeth prediction and error formatting. Internal to ops/l3.
#ifndef TFLIQUID_OPS_L3_L3_LAYOUT_H_
#define TFLIQUID_OPS_L3_L3_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace tfliquid::l3 {

inline constexpr char kMagic[8] = {'\x89', 'L', '3', 'I', '\r', '\n', '\x1a', '\n'};
inline constexpr uint8_t kFlagSubtractGreen = 1;
inline constexpr uint8_t kFlagZigzag = 2;

inline bool Fail(std::string* error, uint64_t offset, const std::string& message) {
  *error = "offset " + std::to_string(offset) + ": " + message;
  return false;
}

struct Patch {
  uint32_t y0, x0, h, w;
};

// Patches row-major; those on the right and bottom edges are cut.
inline std::vector<Patch> PatchGrid(uint32_t height, uint32_t width, int n) {
  std::vector<Patch> grid;
  for (uint32_t y = 0; y < height; y += n)
    for (uint32_t x = 0; x < width; x += n)
      grid.push_back({y, x, std::min<uint32_t>(n, height - y), std::min<uint32_t>(n, width - x)});
  return grid;
}

// The custom Paeth choice between top-left a, top b and top-right c (p = a + c - b; ties a, b, c).
// |p-a| = |c-b|, |p-b| = |a+c-2b|, |p-c| = |a-b|: written this way it is branch-free and vectorizes.
inline uint8_t PaethOfPrevious(int a, int b, int c) {
  const int da = std::abs(c - b), db = std::abs(a + c - 2 * b), dc = std::abs(a - b);
  return static_cast<uint8_t>(da <= db && da <= dc ? a : db <= dc ? b : c);
}

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_LAYOUT_H_
