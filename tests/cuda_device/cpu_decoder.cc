#include "cpu_decoder.h"

#include <atomic>
#include <thread>

#include "l3/l3_codec.h"

namespace l3_check {
namespace {

bool DecodeInto(std::string_view image, uint8_t* pixels, size_t capacity, std::string* error) {
  namespace l3 = tfliquid::l3;
  const auto* data = reinterpret_cast<const uint8_t*>(image.data());
  l3::Header header;
  if (!l3::ParseHeader(data, image.size(), &header, error)) return false;
  if (static_cast<size_t>(header.height) * header.width * header.params.channels != capacity) {
    *error = "decodes to " + std::to_string(header.height) + "x" + std::to_string(header.width) + "x" +
             std::to_string(header.params.channels) + ", not the batch's shape";
    return false;
  }
  return l3::Decode(data, image.size(), header, pixels, error);
}

}  // namespace

bool DecodeOnCpu(std::string_view image, std::vector<uint8_t>* pixels, std::string* error) {
  namespace l3 = tfliquid::l3;
  const auto* data = reinterpret_cast<const uint8_t*>(image.data());
  l3::Header header;
  if (!l3::ParseHeader(data, image.size(), &header, error)) return false;
  pixels->resize(static_cast<size_t>(header.height) * header.width * header.params.channels);
  return l3::Decode(data, image.size(), header, pixels->data(), error);
}

void DecodeBatchOnCpu(const std::vector<std::string_view>& images, size_t image_bytes, unsigned threads,
                      std::vector<uint8_t>* pixels, std::vector<std::string>* errors) {
  pixels->resize(images.size() * image_bytes);
  errors->assign(images.size(), "");
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < images.size(); i = next++) {
        DecodeInto(images[i], pixels->data() + i * image_bytes, image_bytes, &(*errors)[i]);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
}

}  // namespace l3_check
