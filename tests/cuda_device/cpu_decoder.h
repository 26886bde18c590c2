// The reference of the GPU check: the CPU decoder of the op library (ops/l3/l3_codec.h, the one Liquid>DecodeL3
// and the batch op's CPU kernel run), on every core, the images of a batch shared among the threads.
#ifndef TFLIQUID_TESTS_CUDA_DEVICE_CPU_DECODER_H_
#define TFLIQUID_TESTS_CUDA_DEVICE_CPU_DECODER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace l3_check {

// One image: false with the decoder's error ("offset 40: ...") when it rejects the file.
bool DecodeOnCpu(std::string_view image, std::vector<uint8_t>* pixels, std::string* error);

// A batch of images of `image_bytes` decoded pixels each, on `threads` threads, into `pixels` ([B] x image_bytes);
// errors[i] is "" or image i's error.
void DecodeBatchOnCpu(const std::vector<std::string_view>& images, size_t image_bytes, unsigned threads,
                      std::vector<uint8_t>* pixels, std::vector<std::string>* errors);

}  // namespace l3_check

#endif  // TFLIQUID_TESTS_CUDA_DEVICE_CPU_DECODER_H_
