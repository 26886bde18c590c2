#include "records/record.h"

#include <algorithm>
#include <cstring>

#include "common/crc32c.h"
#include "records/wire.h"

namespace tfliquid {
namespace records {
namespace {

uint32_t LoadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian host
  return v;
}

bool Fail(std::string* error, uint64_t offset, const std::string& message) {
  *error = "offset " + std::to_string(offset) + ": " + message;
  return false;
}

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Field numbers of RecordHeader in protos/records.proto.
enum HeaderField : uint32_t {
  kNumItems = 1,
  kNumGroups = 2,
  kLabels = 3,
  kKeys = 4,
  kPartSizes = 5,
  kGroupEnds = 6,
  kGroupCrc32c = 7,
};

bool DecodeHeaderFields(const char* data, size_t size, RecordHeader* h, std::string* error) {
  wire::Reader reader(reinterpret_cast<const uint8_t*>(data), size);
  // Repeated fields are bounded by the message size, which the caller bounded before reading it.
  auto bounded = [](auto* vec) {
    return [vec](uint64_t v) {
      if (vec->size() >= static_cast<size_t>(kMaxItems) * kMaxGroups) return false;
      vec->push_back(static_cast<typename std::decay_t<decltype(*vec)>::value_type>(v));
      return true;
    };
  };
  while (!reader.done()) {
    const size_t field_offset = reader.offset();
    uint32_t field;
    int type;
    if (!reader.ReadTag(&field, &type)) return Fail(error, kPreambleSize + field_offset, "malformed header tag");
    bool ok;
    uint64_t value;
    std::string_view bytes;
    switch (field) {
      case kNumItems:
      case kNumGroups:
        ok = type == wire::kVarint && reader.ReadVarint(&value) && value <= UINT32_MAX;
        if (ok) (field == kNumItems ? h->num_items : h->num_groups) = static_cast<uint32_t>(value);
        break;
      case kLabels: ok = wire::ReadRepeatedScalar(&reader, type, wire::kVarint, bounded(&h->labels)); break;
      case kKeys:
        ok = type == wire::kLengthDelimited && reader.ReadLengthDelimited(&bytes) && h->keys.size() < kMaxItems;
        if (ok) h->keys.push_back(bytes);
        break;
      case kPartSizes:
        ok = wire::ReadRepeatedScalar(&reader, type, wire::kVarint, [h](uint64_t v) {
          if (v > UINT32_MAX || h->part_sizes.size() >= static_cast<size_t>(kMaxItems) * kMaxGroups) return false;
          h->part_sizes.push_back(static_cast<uint32_t>(v));
          return true;
        });
        break;
      case kGroupEnds: ok = wire::ReadRepeatedScalar(&reader, type, wire::kVarint, bounded(&h->group_ends)); break;
      case kGroupCrc32c: ok = wire::ReadRepeatedScalar(&reader, type, wire::kFixed32, bounded(&h->group_crc32c)); break;
      default: ok = reader.Skip(type);
    }
    if (!ok) {
      return Fail(error, kPreambleSize + field_offset,
                  "malformed header field " + std::to_string(field) + " (wire type " + std::to_string(type) + ")");
    }
  }
  return true;
}

bool CheckHeaderInvariants(const RecordHeader& h, std::string* error) {
  const uint64_t at = kPreambleSize;
  const uint64_t n = h.num_items, g = h.num_groups;
  if (n < 1 || n > kMaxItems) return Fail(error, at, "num_items " + std::to_string(n) + " outside [1, 2^20]");
  if (g < 1 || g > kMaxGroups) return Fail(error, at, "num_groups " + std::to_string(g) + " outside [1, 64]");
  if (h.labels.size() != n)
    return Fail(error, at, std::to_string(h.labels.size()) + " labels for " + std::to_string(n) + " items");
  if (!h.keys.empty() && h.keys.size() != n)
    return Fail(error, at, std::to_string(h.keys.size()) + " keys for " + std::to_string(n) + " items");
  if (h.part_sizes.size() != n * g)
    return Fail(
        error, at,
        std::to_string(h.part_sizes.size()) + " part sizes, expected items x groups = " + std::to_string(n * g));
  if (h.group_ends.size() != g || h.group_crc32c.size() != g)
    return Fail(error, at, "group_ends/group_crc32c must have one entry per group");
  uint64_t previous_end = 0;
  for (uint64_t k = 0; k < g; ++k) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; ++i) sum += h.part_sizes[k * n + i];
    if (h.group_ends[k] < previous_end || h.group_ends[k] - previous_end != sum)
      return Fail(error, at,
                  "group " + std::to_string(k + 1) + " spans " + std::to_string(h.group_ends[k] - previous_end) +
                      " bytes but its parts sum to " + std::to_string(sum));
    previous_end = h.group_ends[k];
  }
  return true;
}

}  // namespace

bool ParsePreamble(const char* data, size_t size, uint32_t* header_length, uint32_t* flags, std::string* error) {
  if (size < kPreambleSize)
    return Fail(error, size, "file ends inside the 24-byte preamble (" + std::to_string(size) + " bytes)");
  if (std::memcmp(data, kRecordMagic, sizeof(kRecordMagic)) != 0)
    return Fail(error, 0, "bad magic: not a tfliquid record");
  const uint32_t version = LoadLe32(data + 8);
  if (version != kFormatVersion)
    return Fail(error, 8, "unsupported format version " + std::to_string(version) + " (this reader reads 1)");
  *header_length = LoadLe32(data + 12);
  if (*header_length > kMaxHeaderBytes)
    return Fail(error, 12, "header length " + std::to_string(*header_length) + " exceeds the 256 MiB limit");
  *flags = LoadLe32(data + 20);
  if ((*flags & ~kWholeItemsFlag) != 0) return Fail(error, 20, "unknown flags " + Hex(*flags));
  return true;
}

bool ParseHeader(const char* data, size_t size, RecordHeader* header, std::string* error) {
  *header = RecordHeader();
  return DecodeHeaderFields(data, size, header, error) && CheckHeaderInvariants(*header, error);
}

bool ParseRecordPrefix(const char* data, size_t size, uint32_t group, RecordPrefix* prefix, std::string* error,
                       int64_t header_crc32c) {
  uint32_t header_length, flags;
  if (!ParsePreamble(data, size, &header_length, &flags, error)) return false;
  const uint32_t stored_crc = LoadLe32(data + 16);
  if (header_crc32c >= 0 && stored_crc != static_cast<uint32_t>(header_crc32c))
    return Fail(error, 16,
                "header CRC32C " + Hex(stored_crc) + " is not the record's, " +
                    Hex(static_cast<uint32_t>(header_crc32c)) +
                    ", that the index lists: the file holds another record (replaced by another conversion)");
  const uint64_t payload_offset = kPreambleSize + static_cast<uint64_t>(header_length);
  if (payload_offset > size)
    return Fail(
        error, 12,
        "header length " + std::to_string(header_length) + " runs past the " + std::to_string(size) + " bytes read");
  const char* header_bytes = data + kPreambleSize;
  const uint32_t header_crc = Crc32c(header_bytes, header_length);
  if (stored_crc != header_crc)
    return Fail(error, kPreambleSize,
                "header CRC32C mismatch (stored " + Hex(stored_crc) + ", computed " + Hex(header_crc) + ")");
  RecordHeader& h = prefix->header;
  if (!ParseHeader(header_bytes, header_length, &h, error)) return false;
  if (group < 1) return Fail(error, 0, "group must be >= 1");
  prefix->whole_items = (flags & kWholeItemsFlag) != 0;
  if (prefix->whole_items && h.num_groups != 1)
    return Fail(error, kPreambleSize, "a record of whole items has one group, not " + std::to_string(h.num_groups));

  prefix->payload_offset = payload_offset;
  prefix->groups_read = std::min(group, h.num_groups);
  const uint64_t needed = payload_offset + h.group_ends[prefix->groups_read - 1];
  if (needed > size)
    return Fail(error, size,
                "record ends at " + std::to_string(size) + " bytes, group " + std::to_string(prefix->groups_read) +
                    " ends at " + std::to_string(needed));
  const uint64_t record_end = payload_offset + h.group_ends.back();
  if (size != needed && size != record_end)
    return Fail(error, needed,
                "the " + std::to_string(size) + " bytes read are neither this record up to group " +
                    std::to_string(prefix->groups_read) + " (" + std::to_string(needed) + " bytes) nor all of it (" +
                    std::to_string(record_end) + " bytes): the file is not the record its reader was told of");

  const uint32_t n = h.num_items;
  prefix->part_offsets.resize(static_cast<size_t>(prefix->groups_read) * n);
  uint64_t group_start = payload_offset;
  for (uint32_t k = 0; k < prefix->groups_read; ++k) {
    const uint64_t group_end = payload_offset + h.group_ends[k];
    const uint32_t crc = Crc32c(data + group_start, group_end - group_start);
    if (crc != h.group_crc32c[k])
      return Fail(error, group_start,
                  "group " + std::to_string(k + 1) + " CRC32C mismatch (stored " + Hex(h.group_crc32c[k]) +
                      ", computed " + Hex(crc) + ")");
    uint64_t offset = group_start;
    for (uint32_t i = 0; i < n; ++i) {
      prefix->part_offsets[static_cast<size_t>(k) * n + i] = offset;
      offset += h.part_sizes[static_cast<size_t>(k) * n + i];
    }
    group_start = group_end;
  }
  return true;
}

uint64_t RecordPrefix::ItemSize(uint32_t i) const {
  const uint32_t n = header.num_items;
  uint64_t size = 0;
  for (uint32_t k = 0; k < groups_read; ++k) size += header.part_sizes[static_cast<size_t>(k) * n + i];
  return size;
}

void RecordPrefix::CopyItem(const char* buffer, uint32_t i, char* out) const {
  const uint32_t n = header.num_items;
  for (uint32_t k = 0; k < groups_read; ++k) {
    const size_t at = static_cast<size_t>(k) * n + i;
    const uint32_t size = header.part_sizes[at];
    std::memcpy(out, buffer + part_offsets[at], size);
    out += size;
  }
}

}  // namespace records
}  // namespace tfliquid
