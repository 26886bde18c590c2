// Decodes a batch of L3 files with the GPU kernels (ops/l3/l3_decode.cu) run on the CPU by shim.h, launched as the
// op's GPU kernel launches them: from the launch plan of ops/l3/l3_launch_plan.cc, which validates the headers
// with the CPU decoder's parser.
//
//   decode_driver THREADS PIXELS_OUT TABLE_OUT IMAGE.l3 [IMAGE.l3 ...]
//
// Writes the task table (int64, so the tests can compare it with their Python oracle) and the decoded
// [B, H, W, C] bytes. THREADS = 0 picks the block size of the op's launch. Exit status 2 with "image I: corrupt
// L3 patch data at byte offset O" when the kernel reports corruption, 3 when the plan rejects a header.
#include "shim.h"  // first: the kernels use what it defines in CUDA's place

#include "l3_decode.cu"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "l3/l3_launch_plan.h"

alignas(16) unsigned char l3_shared[64 * 1024];

namespace {

std::string read(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const char* path, const void* data, size_t size) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), (std::streamsize)size);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: decode_driver THREADS PIXELS_OUT TABLE_OUT IMAGE.l3 [IMAGE.l3 ...]\n");
    return 3;
  }
  std::vector<std::string> files;
  for (int i = 4; i < argc; ++i) files.push_back(read(argv[i]));
  const std::vector<std::string_view> images(files.begin(), files.end());
  tfliquid::l3::BatchHeaders batch;
  std::string error;
  if (!tfliquid::l3::ParseBatchHeaders(images, &batch, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 3;
  }
  tfliquid::l3::LaunchPlan plan;
  tfliquid::l3::BuildLaunchPlan(images, batch, &plan);
  const int threads = std::atoi(argv[1]) ? std::atoi(argv[1]) : plan.threads();

  std::vector<unsigned char> pixels((size_t)(plan.images * plan.height * plan.width * plan.channels), 0xCD);
  std::vector<unsigned long long> errors(plan.images, ~0ull);
  shim::dynamic_shared = l3_shared;
  shim::launch(l3_decode_patches, (unsigned)plan.num_tasks(), threads, plan.shared_bytes(threads), plan.payload.data(),
               reinterpret_cast<const long long*>(plan.tasks.data()), pixels.data(), (int)plan.height, (int)plan.width,
               (int)plan.channels, plan.max_width, plan.max_segments, errors.data());
  for (int64_t i = 0; i < plan.images; ++i) {
    if (errors[i] != ~0ull) {
      std::fprintf(stderr, "image %lld: corrupt L3 patch data at byte offset %llu\n", (long long)i, errors[i]);
      return 2;
    }
  }
  if (plan.any_subtract_green()) {
    shim::launch(l3_add_green, 3, threads, 0, pixels.data(), (long long)(plan.height * plan.width), (int)plan.images,
                 (int)plan.channels, plan.subtract_green.data());
  }
  write(argv[2], pixels.data(), pixels.size());
  write(argv[3], plan.tasks.data(), plan.tasks.size() * sizeof(int64_t));
  return 0;
}
