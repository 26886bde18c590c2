// Images for the GPU check: Netpbm PAM (P7), 8 bits, DEPTH 1, 3 or 4, several images back to back in one file
// (a Netpbm stream), which tests/cuda_device/gpu_check.py writes with NumPy alone.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_PAM_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_PAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace l3_check {

struct Image {
  uint32_t height = 0, width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // [height, width, channels]
};

// Every image of the file at `path`; false, saying where, when it is not such a stream.
bool ReadPam(const std::string& path, std::vector<Image>* images, std::string* error);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_PAM_H_
