// Decoding a JPEG at a reduced size with libjpeg's DCT scaling (docs/formats/pcr.md, "Decoding at a size"): at the
// size a model needs and no more than the scans present hold. No TensorFlow dependency.
#ifndef TFLIQUID_OPS_JPEG_SCALED_DECODE_H_
#define TFLIQUID_OPS_JPEG_SCALED_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tfliquid::jpeg {

// The largest M in 1..8 such that the scans in [data, data + size) code every coefficient of the top-left M x M of
// the luminance's (the first component's) 8x8 blocks (a first scan of each: successive-approximation refinements
// do not count). 8 for a baseline JPEG; 1 for a progressive prefix of DC scans. 0 on data it cannot parse (the
// decoder then reports what is wrong).
int SupportedEighths(const uint8_t* data, size_t size);

// Bilinear resizing of RGB pixels, pixel centres at half-integers as tf.image.resize places them (without
// antialiasing), rounded to the nearest uint8; if mirror, the result mirrored left to right (at no cost: output
// column x takes the taps of out_width - 1 - x).
void ResizeBilinear(const uint8_t* in, int64_t in_height, int64_t in_width, uint8_t* out, int64_t out_height,
                    int64_t out_width, bool mirror = false);

// Mirrors rows of RGB pixels left to right, in place.
void MirrorRows(uint8_t* pixels, int64_t height, int64_t width);

// libjpeg's output size at scale eighths / 8: ceil(size * eighths / 8).
int64_t ScaledSize(int64_t size, int eighths);

// Decodes to RGB at scale M / 8, M the smallest of 1, 2, 4 and 8 whose output is at least target_height x
// target_width (8 when none is), and, if no_finer_than_coded, at most SupportedEighths rounded down to one of
// them (the scans hold nothing finer). Read
// strictly (libjpeg's warnings that lose data are errors); never exits or prints; thread-safe. At 8/8, the pixels
// of tf.io.decode_jpeg (libjpeg's fast integer transform, TensorFlow's default; CMYK converted as TensorFlow
// converts it). Progressive scans of spectral selection only (PCR's fast script) are entropy-decoded by
// DecodeSpectralScans (spectral_decode.h) and the rest by libjpeg, into the same pixels.
//
//   ScaledDecoder decoder;
//   if (!decoder.Start(data, size, 224, 224, &error)) ...;
//   std::vector<uint8_t> pixels(decoder.height() * decoder.width() * 3);
//   if (!decoder.Decode(pixels.data(), &error)) ...;
//   (or, for exactly 224 x 224: std::vector<uint8_t> pixels(224 * 224 * 3); decoder.DecodeResized(...))
//
// With a crop window (docs/formats/pcr.md, "Decoding a crop"), the scale is chosen for the window's size, and only
// the window is decoded: height() x width() is its region at that scale (at 8/8 the window itself, the pixels of
// tf.io.decode_jpeg cropped), and only the MCU rows and columns around it are inverse-transformed, upsampled and
// colour-converted.
struct CropWindow {
  int64_t y = 0, x = 0, height = 0, width = 0;  // in full-size pixels
};

class ScaledDecoder {
 public:
  ScaledDecoder();
  ~ScaledDecoder();

  // Reads the header and chooses the scale. False and *error ("what (at byte N)") on failure; a crop window not
  // inside the image is such a failure.
  bool Start(const uint8_t* data, size_t size, int64_t target_height, int64_t target_width, std::string* error,
             bool no_finer_than_coded = true, const CropWindow* crop = nullptr);
  int64_t height() const;
  int64_t width() const;
  int eighths() const;          // the scale chosen
  bool window_outside() const;  // whether Start failed on a crop window not inside the image
  // Writes height() x width() x 3 bytes of RGB. False and *error on failure.
  bool Decode(uint8_t* pixels, std::string* error);
  // Writes out_height x out_width x 3 bytes of RGB: the decode, resized bilinearly when its size is another,
  // mirrored left to right if mirror.
  bool DecodeResized(uint8_t* pixels, int64_t out_height, int64_t out_width, std::string* error, bool mirror = false);

  struct State;  // libjpeg's, in scaled_decode.cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace tfliquid::jpeg

#endif  // TFLIQUID_OPS_JPEG_SCALED_DECODE_H_
