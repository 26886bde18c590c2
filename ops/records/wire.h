// A minimal protobuf wire-format decoder, enough for the record header (records/record.h). The C++ reader does not link
// protobuf: TensorFlow bundles its own copy whose symbols and version are not a stable ABI for custom ops.
// Every read is bounds-checked; a malformed message makes a call return false, never read past the end.
#ifndef TFLIQUID_OPS_RECORDS_WIRE_H_
#define TFLIQUID_OPS_RECORDS_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string_view>

namespace tfliquid {
namespace wire {

enum WireType : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : begin_(data), p_(data), end_(data + size) {}

  bool done() const { return p_ == end_; }
  // Offset of the next byte from the start of the message, for error messages.
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }

  bool ReadVarint(uint64_t* value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t byte = *p_++;
      result |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) {
        *value = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  bool ReadTag(uint32_t* field, int* wire_type) {
    uint64_t tag;
    if (!ReadVarint(&tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1FFFFFFF) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<int>(tag & 7);
    return true;
  }

  bool ReadFixed32(uint32_t* value) { return ReadFixed(value); }
  bool ReadFixed64(uint64_t* value) { return ReadFixed(value); }

  bool ReadLengthDelimited(std::string_view* bytes) {
    uint64_t length;
    if (!ReadVarint(&length) || length > static_cast<uint64_t>(end_ - p_)) return false;
    *bytes = std::string_view(reinterpret_cast<const char*>(p_), length);
    p_ += length;
    return true;
  }

  // Skips a field of a type this decoder does not know (forward compatibility). Groups (3, 4) are rejected.
  bool Skip(int wire_type) {
    uint64_t unused64;
    uint32_t unused32;
    std::string_view unused_bytes;
    switch (wire_type) {
      case kVarint: return ReadVarint(&unused64);
      case kFixed64: return ReadFixed64(&unused64);
      case kLengthDelimited: return ReadLengthDelimited(&unused_bytes);
      case kFixed32: return ReadFixed32(&unused32);
      default: return false;
    }
  }

 private:
  template <typename T>
  bool ReadFixed(T* value) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    std::memcpy(value, p_, sizeof(T));  // wire format is little-endian, as is every supported host
    p_ += sizeof(T);
    return true;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
};

// Reads one element (unpacked, `wire_type` == the scalar's type) or a packed run (`wire_type` == 2) of a
// repeated scalar field, calling `append(value)` for each. `scalar_type` is kVarint, kFixed32 or kFixed64.
template <typename Append>
bool ReadRepeatedScalar(Reader* reader, int wire_type, int scalar_type, Append append) {
  auto read_one = [scalar_type](Reader* r, uint64_t* v) {
    if (scalar_type == kVarint) return r->ReadVarint(v);
    if (scalar_type == kFixed64) return r->ReadFixed64(v);
    uint32_t v32;
    if (!r->ReadFixed32(&v32)) return false;
    *v = v32;
    return true;
  };
  uint64_t value;
  if (wire_type == scalar_type) {
    if (!read_one(reader, &value)) return false;
    return append(value);
  }
  if (wire_type != kLengthDelimited) return false;
  std::string_view packed;
  if (!reader->ReadLengthDelimited(&packed)) return false;
  Reader inner(reinterpret_cast<const uint8_t*>(packed.data()), packed.size());
  while (!inner.done()) {
    if (!read_one(&inner, &value) || !append(value)) return false;
  }
  return true;
}

}  // namespace wire
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_RECORDS_WIRE_H_
