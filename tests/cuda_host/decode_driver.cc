// Decodes a batch of L3 files with the GPU kernels (tfliquid/l3/kernels/l3_decode.cu) run on the CPU by shim.h.
//
//   decode_driver THREADS PIXELS_OUT TABLE_OUT IMAGE.l3 [IMAGE.l3 ...]
//
// Builds the task table as tfliquid/l3/plan.py does (and writes it, int64, so the tests can compare the two),
// launches both kernels, and writes the decoded [B, H, W, C] bytes. THREADS = 0 picks the block size plan.py
// picks. Exit status 2 with "image I: corrupt L3 patch data at byte offset O" when the kernel reports corruption.
// Only the checks that keep the kernel inside the payload are repeated here; plan.py validates headers fully.
#include "shim.h"  // first: the kernels use what it defines in CUDA's place

#include "l3_decode.cu"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

alignas(16) unsigned char l3_shared[64 * 1024];

namespace {

struct L3File {
  std::vector<unsigned char> bytes;
  int channels, flags, segment, patch, width, height;
  size_t payload;  // where the payload starts
  std::vector<uint32_t> offsets;
};

uint32_t le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(3);
}

L3File read_l3(const char* path) {
  std::ifstream in(path, std::ios::binary);
  L3File f{{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}, 0, 0, 0, 0, 0, 0, 0, {}};
  if (f.bytes.size() < 24 || std::memcmp(f.bytes.data(), "\x89L3I\r\n\x1a\n", 8) != 0) fail("not an L3 file");
  const unsigned char* h = f.bytes.data();
  f.channels = h[9], f.flags = h[10], f.segment = h[11];
  f.width = (int)le(h + 12, 4), f.height = (int)le(h + 16, 4), f.patch = (int)le(h + 20, 2);
  if (f.patch < 1 || f.width < 1 || f.height < 1) fail("bad header");
  const size_t patches = (size_t)((f.width + f.patch - 1) / f.patch) * ((f.height + f.patch - 1) / f.patch);
  const size_t count = f.channels * patches + 1;
  f.payload = 24 + 4 * count;
  if (f.payload > f.bytes.size()) fail("offsets cut");
  for (size_t i = 0; i < count; ++i) f.offsets.push_back(le(h + 24 + 4 * i, 4));
  if (f.offsets[0] != 0 || !std::is_sorted(f.offsets.begin(), f.offsets.end()) ||
      f.payload + f.offsets.back() != f.bytes.size())
    fail("bad offsets");
  return f;
}

void write(const char* path, const void* data, size_t size) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), (std::streamsize)size);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) fail("usage: decode_driver THREADS PIXELS_OUT TABLE_OUT IMAGE.l3 [IMAGE.l3 ...]");
  std::vector<L3File> files;
  for (int i = 4; i < argc; ++i) files.push_back(read_l3(argv[i]));
  const L3File& first = files[0];
  const int images = (int)files.size(), height = first.height, width = first.width, channels = first.channels;

  std::vector<unsigned char> payload;
  std::vector<long long> tasks;
  std::vector<unsigned char> subtract_green;
  int max_width = 0, max_segments = 0;
  for (int i = 0; i < images; ++i) {
    const L3File& f = files[i];
    if (f.height != height || f.width != width || f.channels != channels) fail("images differ in shape");
    const long long base = (long long)payload.size();
    payload.insert(payload.end(), f.bytes.begin() + (long)f.payload, f.bytes.end());
    subtract_green.push_back(f.flags & 1);
    size_t k = 0;
    for (int c = 0; c < channels; ++c) {
      for (int y0 = 0; y0 < height; y0 += f.patch) {
        for (int x0 = 0; x0 < width; x0 += f.patch, ++k) {
          const int h = std::min(f.patch, height - y0), w = std::min(f.patch, width - x0);
          const int segment = f.segment ? f.segment : w;
          tasks.insert(tasks.end(), {base + f.offsets[k], base + f.offsets[k + 1], (long long)f.payload - base, i, c,
                                     y0, x0, h, w, segment, (f.flags >> 1) & 1});
          max_width = std::max(max_width, w);
          max_segments = std::max(max_segments, (w + segment - 1) / segment);
        }
      }
    }
  }
  const unsigned blocks = (unsigned)(tasks.size() / L3_TASK_FIELDS);
  const int threads = std::atoi(argv[1]) ? std::atoi(argv[1]) : std::min(256, (max_width + 31) / 32 * 32);
  const size_t shared_bytes = 4 * (max_segments + threads + 1) + 2 * max_segments + 2 * max_width;

  std::vector<unsigned char> pixels((size_t)images * height * width * channels, 0xCD);  // unwritten shows
  std::vector<unsigned long long> errors(images, ~0ull);
  shim::dynamic_shared = l3_shared;
  shim::launch(l3_decode_patches, blocks, threads, shared_bytes, payload.data(), tasks.data(), pixels.data(), height,
               width, channels, max_width, max_segments, errors.data());
  for (int i = 0; i < images; ++i) {
    if (errors[i] != ~0ull) {
      std::fprintf(stderr, "image %d: corrupt L3 patch data at byte offset %llu\n", i, errors[i]);
      return 2;
    }
  }
  if (std::count(subtract_green.begin(), subtract_green.end(), 1)) {
    shim::launch(l3_add_green, 3, threads, 0, pixels.data(), (long long)height * width, images, channels,
                 subtract_green.data());
  }
  write(argv[2], pixels.data(), pixels.size());
  write(argv[3], tasks.data(), tasks.size() * sizeof(long long));
  return 0;
}
