#include "batch.h"

#include <cstring>

#include "l3/l3_codec.h"

namespace l3_check {

size_t Batch::encoded_bytes() const {
  size_t bytes = 0;
  for (const std::string& file : encoded) bytes += file.size();
  return bytes;
}

std::string Batch::shape() const {
  const Image& first = images[0];
  return std::to_string(images.size()) + "x" + std::to_string(first.height) + "x" + std::to_string(first.width) + "x" +
         std::to_string(first.channels);
}

bool Batch::Matches(size_t i, const uint8_t* decoded) const {
  return std::memcmp(images[i].pixels.data(), decoded, image_bytes()) == 0;
}

JsonLine Batch::Line(const char* check) const {
  JsonLine line;
  line.Add("check", check)
      .Add("batch", name)
      .Add("profile", profile)
      .Add("shape", shape())
      .Add("images", images.size())
      .Add("pixel_bytes", images.size() * image_bytes())
      .Add("encoded_bytes", encoded_bytes());
  return line;
}

bool LoadBatch(const std::string& path, const std::string& profile, Batch* batch, std::string* error) {
  namespace l3 = tfliquid::l3;
  const size_t slash = path.find_last_of('/') + 1;
  batch->name = path.substr(slash, path.find_last_of('.') - slash);
  batch->profile = profile;
  if (!ReadPam(path, &batch->images, error)) return false;
  if (batch->images.empty()) {
    *error = path + ": no image";
    return false;
  }
  for (const Image& image : batch->images) {
    const Image& first = batch->images[0];
    l3::Params params;
    std::string encoded, encode_error;
    if (image.height != first.height || image.width != first.width || image.channels != first.channels) {
      *error = path + ": its images differ in shape";
      return false;
    }
    if (!l3::ProfileParams(profile, image.height, image.width, image.channels, &params, &encode_error) ||
        !l3::Encode(image.pixels.data(), image.height, image.width, params, &encoded, &encode_error)) {
      *error = path + ": " + encode_error;
      return false;
    }
    batch->encoded.push_back(std::move(encoded));
  }
  return true;
}

}  // namespace l3_check
