#include "jpeg/crop_window.h"

#include <algorithm>
#include <cmath>

#include "jpeg/scan_split.h"

namespace tfliquid::jpeg {

namespace {
constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;
constexpr int kAttempts = 10;  // torchvision's

// SplitMix64's output function: a bijection of 64 bits that mixes every bit into every other.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Python's round(): to the nearest integer, halves to even (nearbyint in the default rounding mode).
int64_t Round(double value) { return static_cast<int64_t>(std::nearbyint(value)); }
}  // namespace

// Both halves of the seed mixed in, so that seeds one apart start unrelated streams (a plain sum would make
// (s + 1, t)'s stream (s, t)'s one draw on).
CropDraws::CropDraws(int64_t seed0, int64_t seed1)
    : state_(Mix(Mix(static_cast<uint64_t>(seed0)) + static_cast<uint64_t>(seed1))) {}

double CropDraws::Uniform() {
  state_ += kGoldenGamma;
  return static_cast<double>(Mix(state_) >> 11) * 0x1.0p-53;
}

CropWindow RandomResizedCropWindow(int64_t height, int64_t width, const RandomCropParameters& p, CropDraws* draws) {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double low = std::log(p.min_ratio), high = std::log(p.max_ratio);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const double target = area * (p.min_scale + draws->Uniform() * (p.max_scale - p.min_scale));
    const double aspect = std::exp(low + draws->Uniform() * (high - low));
    const int64_t w = Round(std::sqrt(target * aspect)), h = Round(std::sqrt(target / aspect));
    if (w < 1 || w > width || h < 1 || h > height) continue;
    const int64_t y =
        std::min(height - h, static_cast<int64_t>(draws->Uniform() * static_cast<double>(height - h + 1)));
    const int64_t x = std::min(width - w, static_cast<int64_t>(draws->Uniform() * static_cast<double>(width - w + 1)));
    return {y, x, h, w};
  }
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  int64_t h = height, w = width;
  if (aspect < p.min_ratio) {
    h = std::clamp<int64_t>(Round(static_cast<double>(width) / p.min_ratio), 1, height);
  } else if (aspect > p.max_ratio) {
    w = std::clamp<int64_t>(Round(static_cast<double>(height) * p.max_ratio), 1, width);
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

CropWindow CenterCropWindow(int64_t height, int64_t width, double fraction) {
  const int64_t side = std::max<int64_t>(1, Round(fraction * static_cast<double>(std::min(height, width))));
  return {(height - side) / 2, (width - side) / 2, side, side};
}

bool FrameSize(const uint8_t* data, size_t size, int64_t* height, int64_t* width) {
  const size_t offset = FrameHeaderOffset(data, size);
  // The frame header: FF Cn, length (2), precision (1), height (2), width (2).
  if (offset == 0 || offset + 9 > size) return false;
  *height = data[offset + 5] << 8 | data[offset + 6];
  *width = data[offset + 7] << 8 | data[offset + 8];
  return *height > 0 && *width > 0;
}

}  // namespace tfliquid::jpeg
