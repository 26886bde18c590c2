// The record container that PCR and Liquid share (docs/formats/records.md). Pure C++: no TensorFlow, no I/O.
//
// A record holds N items, each cut into G parts stored group by group (all items' part 1, then all items'
// part 2, ...), so that one read of a prefix of the file yields every item up to a group: PCR's scan groups.
// A reader reads bytes [0, prefix_end) in one read, then calls ParseRecordPrefix on them to validate the
// preamble, the header and the CRC32C of every group in the prefix; CopyItem then concatenates item i's parts
// up to that group. What an item's bytes mean is its format's business (records/item_format.h).
#ifndef TFLIQUID_OPS_RECORDS_RECORD_H_
#define TFLIQUID_OPS_RECORDS_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfliquid {
namespace records {

// The container's magic kept the name of the first format stored in it.
inline constexpr char kRecordMagic[8] = {'\x89', 'P', 'C', 'R', '\r', '\n', '\x1a', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kPreambleSize = 24;
inline constexpr uint32_t kMaxItems = 1u << 20;
inline constexpr uint32_t kMaxGroups = 64;
inline constexpr uint32_t kMaxHeaderBytes = 256u << 20;
// Preamble flag bit 0: every item is whole, in one group (Liquid's records).
inline constexpr uint32_t kWholeItemsFlag = 1;

struct RecordHeader {
  uint32_t num_items = 0;
  uint32_t num_groups = 0;
  std::vector<int64_t> labels;
  std::vector<std::string_view> keys;  // views into the prefix buffer
  std::vector<uint32_t> part_sizes;    // group-major
  std::vector<uint64_t> group_ends;    // relative to the payload offset
  std::vector<uint32_t> group_crc32c;
};

// A validated record prefix. Views into the buffer given to ParseRecordPrefix, which must outlive it.
struct RecordPrefix {
  RecordHeader header;
  uint64_t payload_offset = 0;
  uint32_t groups_read = 0;  // min(requested group, num_groups)
  bool whole_items = false;  // kWholeItemsFlag
  // part_offsets[k * num_items + i]: absolute offset of part k+1 of item i in the buffer.
  std::vector<uint64_t> part_offsets;

  uint32_t num_items() const { return header.num_items; }
  // Bytes of item i's parts up to `groups_read`.
  uint64_t ItemSize(uint32_t i) const;
  // Writes item i's parts up to `groups_read` into out[0, ItemSize(i)).
  void CopyItem(const char* buffer, uint32_t i, char* out) const;
  // Where item i's first part starts in the buffer.
  uint64_t ItemOffset(uint32_t i) const { return part_offsets[i]; }
};

// Reads the 24-byte preamble: on success sets *header_length and *flags. `size` may be the whole prefix or just
// 24 bytes.
bool ParsePreamble(const char* data, size_t size, uint32_t* header_length, uint32_t* flags, std::string* error);

// Decodes the header message (wire format, unknown fields skipped) and checks its invariants.
bool ParseHeader(const char* data, size_t size, RecordHeader* header, std::string* error);

// Validates a prefix buffer for `group` (>= 1; values above the record's group count mean all groups), which
// must end where that group ends or where the record ends: other bytes are not this record's prefix (they were
// cut where another record's group ended). `header_crc32c`, unless -1, is the record's identity as its index lists
// it: a preamble holding another header CRC32C is another record. Errors read "offset N: what went wrong"; the
// caller adds the file name.
bool ParseRecordPrefix(const char* data, size_t size, uint32_t group, RecordPrefix* prefix, std::string* error,
                       int64_t header_crc32c = -1);

}  // namespace records
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_RECORDS_RECORD_H_
