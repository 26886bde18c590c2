// Parsing of a PCR record prefix (docs/formats/pcr.md). Pure C++: no TensorFlow, no I/O.
//
// A reader reads bytes [0, prefix_end) of a record file in one read, then calls ParseRecordPrefix on them to
// validate the preamble, the header and the CRC of every scan group in the prefix. AssembleImage then
// reconstructs image i at that fidelity: partial 1 || ... || partial g || EOI (a record of whole items, as
// Liquid's, has one group and no EOI is added).
#ifndef TFLIQUID_OPS_PCR_RECORD_H_
#define TFLIQUID_OPS_PCR_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfliquid {
namespace pcr {

inline constexpr char kRecordMagic[8] = {'\x89', 'P', 'C', 'R', '\r', '\n', '\x1a', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kPreambleSize = 24;
inline constexpr uint32_t kMaxImages = 1u << 20;
inline constexpr uint32_t kMaxScanGroups = 64;
inline constexpr uint32_t kMaxHeaderBytes = 256u << 20;
// Preamble flag bit 0: every image is one whole item (a Liquid record, docs/formats/liquid.md): one scan group,
// and readers append no EOI.
inline constexpr uint32_t kWholeItemsFlag = 1;

struct RecordHeader {
  uint32_t num_images = 0;
  uint32_t num_scan_groups = 0;
  std::vector<int64_t> labels;
  std::vector<std::string_view> keys;   // views into the prefix buffer
  std::vector<uint32_t> partial_sizes;  // group-major
  std::vector<uint64_t> group_ends;     // relative to the payload offset
  std::vector<uint32_t> group_crc32c;
};

// A validated record prefix. Views into the buffer given to ParseRecordPrefix, which must outlive it.
struct RecordPrefix {
  RecordHeader header;
  uint64_t payload_offset = 0;
  uint32_t groups_read = 0;  // min(requested scan group, num_scan_groups)
  bool whole_items = false;  // kWholeItemsFlag: images are emitted as stored, with no EOI
  // partial_offsets[k * num_images + i]: absolute offset of partial k+1 of image i in the buffer.
  std::vector<uint64_t> partial_offsets;

  uint32_t num_images() const { return header.num_images; }
  // Bytes of image i reconstructed at `groups_read` groups, EOI included (unless whole_items).
  uint64_t ImageSize(uint32_t i) const;
  // Writes image i into out[0, ImageSize(i)).
  void AssembleImage(const char* buffer, uint32_t i, char* out) const;
};

// Reads the 24-byte preamble: on success sets *header_length and *flags. `size` may be the whole prefix or just
// 24 bytes.
bool ParsePreamble(const char* data, size_t size, uint32_t* header_length, uint32_t* flags, std::string* error);

// Decodes the header message (wire format, unknown fields skipped) and checks its invariants.
bool ParseHeader(const char* data, size_t size, RecordHeader* header, std::string* error);

// Validates a prefix buffer for `scan_group` (>= 1; values above the record's group count mean all groups).
// Errors read "offset N: what went wrong"; the caller adds the file name.
bool ParseRecordPrefix(const char* data, size_t size, uint32_t scan_group, RecordPrefix* prefix, std::string* error);

}  // namespace pcr
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_PCR_RECORD_H_
