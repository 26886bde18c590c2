#include "corruption.h"

#include <random>

#include "l3/l3_codec.h"

namespace l3_check {

std::vector<Corruption> Corruptions(const std::vector<std::string>& images, int count, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<Corruption> corruptions;
  for (int k = 0; k < count; ++k) {
    const size_t victim = k % images.size();
    const std::string& file = images[victim];
    tfliquid::l3::Header header;
    std::string unused;
    tfliquid::l3::ParseHeader(reinterpret_cast<const uint8_t*>(file.data()), file.size(), &header, &unused);
    const size_t cuts[] = {10, tfliquid::l3::kHeaderSize + 2, header.payload + 1, file.size() / 2, file.size() - 1};
    constexpr int kCuts = sizeof(cuts) / sizeof(cuts[0]);
    Corruption corruption{victim, "", file};
    if (k < kCuts && cuts[k] < file.size()) {
      corruption.data.resize(cuts[k]);
      corruption.what = "cut to " + std::to_string(cuts[k]) + " of " + std::to_string(file.size()) + " bytes";
    } else {
      const size_t byte = random() % file.size();
      const int bit = static_cast<int>(random() % 8);
      corruption.data[byte] = static_cast<char>(corruption.data[byte] ^ (1 << bit));
      corruption.what = "bit " + std::to_string(bit) + " of byte " + std::to_string(byte) + " flipped";
    }
    corruptions.push_back(std::move(corruption));
  }
  return corruptions;
}

}  // namespace l3_check
