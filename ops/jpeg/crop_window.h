// The crop windows training draws (docs/formats/pcr.md, "Decoding a crop"): torchvision's random resized crop from
// a SplitMix64 stream of a seed, and the central square. No TensorFlow dependency; tfliquid/jpeg/crop_reference.py
// is the same in Python, the tests' oracle.
#ifndef TFLIQUID_OPS_JPEG_CROP_WINDOW_H_
#define TFLIQUID_OPS_JPEG_CROP_WINDOW_H_

#include <cstddef>
#include <cstdint>

#include "jpeg/scaled_decode.h"

namespace tfliquid::jpeg {

// Uniform doubles in [0, 1) from SplitMix64 (Steele, Lea and Flood 2014) started at a [2] seed.
class CropDraws {
 public:
  CropDraws(int64_t seed0, int64_t seed1);
  double Uniform();

 private:
  uint64_t state_;
};

struct RandomCropParameters {
  double min_scale = 0.08, max_scale = 1.0;         // of the image's area
  double min_ratio = 3.0 / 4, max_ratio = 4.0 / 3;  // width over height
};

// Ten draws of an area and a log-uniform aspect; the first whose window fits is placed uniformly; else the largest
// window within the ratio, centred. height, width >= 1; 0 < min <= max for both ranges.
CropWindow RandomResizedCropWindow(int64_t height, int64_t width, const RandomCropParameters& parameters,
                                   CropDraws* draws);

// The central square of side max(1, round(fraction x min(height, width))), fraction in (0, 1].
CropWindow CenterCropWindow(int64_t height, int64_t width, double fraction);

// The image's height and width from its frame header; false if there is none to read.
bool FrameSize(const uint8_t* data, size_t size, int64_t* height, int64_t* width);

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_CROP_WINDOW_H_
