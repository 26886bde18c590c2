// L3 lossless images (docs/formats/l3.md): the C++ codec core, no TensorFlow. Byte for byte the reference
// codec tfliquid/l3/codec.py. Never throws or aborts; every read is bounds-checked; thread-safe.
#ifndef TFLIQUID_OPS_L3_L3_CODEC_H_
#define TFLIQUID_OPS_L3_L3_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tfliquid::l3 {

inline constexpr size_t kHeaderSize = 24;
inline constexpr uint32_t kMaxSide = 1u << 24;
inline constexpr uint64_t kMaxBytes = 1ull << 30;
// The format version written: 2 ends the file with a CRC32C of all its other bytes. Version 1 files still read.
inline constexpr int kVersion = 2;
inline constexpr size_t kChecksumSize = 4;

struct Params {
  int channels = 0;
  bool subtract_green = false;
  bool zigzag = false;
  int segment = 0;  // pixels per segment; 0 = a whole patch row
  int patch = 0;
  int version = kVersion;
};

struct Header {
  Params params;
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint32_t> offsets;  // channels x patches + 1, relative to the payload
  size_t payload = 0;             // where the payload starts
};

// "default" or "paper" (docs/formats/l3.md, Profiles).
bool ProfileParams(const std::string& profile, uint32_t height, uint32_t width, int channels, Params* params,
                   std::string* error);

// pixels: height x width x channels, row-major (HWC).
bool Encode(const uint8_t* pixels, uint32_t height, uint32_t width, const Params& params, std::string* out,
            std::string* error);

// Validates the header and the offsets (before the caller allocates the image); not the checksum.
bool ParseHeader(const uint8_t* data, size_t size, Header* header, std::string* error);

// A version 2 file's checksum against its bytes ("offset N: checksum mismatch: ..."); true for version 1.
bool VerifyChecksum(const uint8_t* data, size_t size, const Header& header, std::string* error);

// Decodes into pixels[height x width x channels] (HWC), then verifies the checksum: a damaged file that still
// decodes is an error too, and one whose patch data breaks a rule names the byte. Errors read "offset N: ...".
bool Decode(const uint8_t* data, size_t size, const Header& header, uint8_t* pixels, std::string* error);

}  // namespace tfliquid::l3

#endif  // TFLIQUID_OPS_L3_L3_CODEC_H_
