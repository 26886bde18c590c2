// A batch of the GPU check: the source images of one PAM file (one shape), encoded by the op library's C++ encoder
// (ops/l3/l3_codec.h, byte for byte the reference codec) with one profile.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_BATCH_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_BATCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "json.h"
#include "pam.h"

namespace l3_check {

struct Batch {
  std::string name;  // the file's, without its folder and extension
  std::string profile;
  std::vector<Image> images;
  std::vector<std::string> encoded;  // L3 files

  std::vector<std::string_view> views() const { return {encoded.begin(), encoded.end()}; }
  size_t image_bytes() const { return images[0].pixels.size(); }
  size_t encoded_bytes() const;
  std::string shape() const;  // "256x512x512x3"
  // image i's source pixels equal `decoded` (image_bytes() bytes)?
  bool Matches(size_t i, const uint8_t* decoded) const;
  // A JSON line of `check` that names the batch: its name, profile, shape and sizes.
  JsonLine Line(const char* check) const;
};

// Reads `path` and encodes every image with `profile` ("default" or "paper"); false, saying why, when the file is
// not a PAM stream of images of one shape or the encoder refuses an image.
bool LoadBatch(const std::string& path, const std::string& profile, Batch* batch, std::string* error);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_BATCH_H_
