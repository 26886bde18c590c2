// Damaged files for the GPU check: an image of a batch cut short or with one bit flipped. Format version 1 has no
// checksum, so a flip may also decode, to other pixels, without any error (the check then requires the CPU
// decoder's pixels); version 2's checksum refuses every flip.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_CORRUPTION_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_CORRUPTION_H_

#include <cstdint>
#include <string>
#include <vector>

namespace l3_check {

struct Corruption {
  size_t victim;     // which image of the batch
  std::string what;  // "cut to 27 of 5120 bytes", "bit 3 of byte 1234 flipped"
  std::string data;  // the damaged file
};

// `count` damaged copies, victims in turn: first cuts inside the fixed header, the offsets table, the first row,
// the middle and the last byte of the file, then single bit flips at random (from `seed`).
std::vector<Corruption> Corruptions(const std::vector<std::string>& images, int count, uint64_t seed);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_CORRUPTION_H_
