#include "cache/item_codec.h"

#include <cstring>

#include "common/crc32c.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/platform/errors.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the item format is little-endian, as is the host");

namespace tfliquid {
namespace cache {
namespace {

using tensorflow::DataType;
using tensorflow::Tensor;
using tensorflow::tstring;

constexpr uint64_t kFixedHeader = 16;  // magic, key length, tensor count
constexpr uint64_t kCrcBytes = 4;

bool IsStorable(DataType dtype) { return dtype == tensorflow::DT_STRING || tensorflow::DataTypeCanUseMemcpy(dtype); }

uint64_t DataBytes(const Tensor& t) {
  if (t.dtype() != tensorflow::DT_STRING) return t.tensor_data().size();
  uint64_t bytes = 0;
  const auto strings = t.flat<tstring>();
  for (int64_t i = 0; i < strings.size(); ++i) bytes += 8 + strings(i).size();
  return bytes;
}

template <typename T>
void Put(T value, std::string* out) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads fixed-size fields and byte runs from an item, refusing to pass its end.
class Reader {
 public:
  Reader(const char* data, uint64_t size) : data_(data), size_(size) {}

  template <typename T>
  bool Get(T* value) {
    if (size_ - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  const char* Take(uint64_t n) {
    if (size_ - pos_ < n) return nullptr;
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

 private:
  const char* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

bool Fail(std::string* error, uint64_t offset, const std::string& what) {
  *error = "offset " + std::to_string(offset) + ": " + what;
  return false;
}

bool DecodeTensor(Reader* in, Tensor* out, std::string* error) {
  uint32_t dtype, rank;
  const uint64_t start = in->pos();
  if (!in->Get(&dtype) || !in->Get(&rank)) return Fail(error, start, "tensor header past the end");
  if (!tensorflow::DataType_IsValid(static_cast<int>(dtype)) || dtype == tensorflow::DT_INVALID ||
      !IsStorable(static_cast<DataType>(dtype))) {
    return Fail(error, start, "unsupported dtype " + std::to_string(dtype));
  }
  if (rank > kMaxRank) return Fail(error, start, "rank " + std::to_string(rank) + " > 254");
  tensorflow::TensorShape shape;
  uint64_t elements = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    int64_t dim;
    if (!in->Get(&dim)) return Fail(error, in->pos(), "dims past the end");
    if (dim < 0) return Fail(error, in->pos() - 8, "negative dimension");
    // Every element takes at least one byte (a string at least its length field), so a shape with more
    // elements than bytes left is damaged: checked before multiplying further or allocating.
    if (dim > 0 && elements > in->left() / static_cast<uint64_t>(dim)) {
      return Fail(error, in->pos() - 8, "shape larger than the file");
    }
    elements *= static_cast<uint64_t>(dim);
    if (!shape.AddDimWithStatus(dim).ok()) return Fail(error, in->pos() - 8, "invalid shape");
  }
  const DataType type = static_cast<DataType>(dtype);
  if (type != tensorflow::DT_STRING) {
    const uint64_t bytes = elements * tensorflow::DataTypeSize(type);
    if (bytes > in->left()) return Fail(error, in->pos(), "tensor data past the end");
    *out = Tensor(type, shape);
    std::memcpy(const_cast<char*>(out->tensor_data().data()), in->Take(bytes), bytes);
    return true;
  }
  if (elements * 8 > in->left()) return Fail(error, in->pos(), "string lengths past the end");
  *out = Tensor(tensorflow::DT_STRING, shape);
  auto strings = out->flat<tstring>();
  for (int64_t i = 0; i < strings.size(); ++i) {
    uint64_t length;
    const uint64_t at = in->pos();
    if (!in->Get(&length)) return Fail(error, at, "string length past the end");
    const char* bytes = in->Take(length);
    if (bytes == nullptr) return Fail(error, at, "string of " + std::to_string(length) + " bytes past the end");
    strings(i).assign(bytes, length);
  }
  return true;
}

uint64_t Fnv1aSplitmix(const std::string& key, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

bool IsStorableKey(const std::string& key) { return !key.empty() && key.size() <= kMaxKeyBytes; }

absl::Status CheckStorable(const std::vector<Tensor>& values) {
  if (values.empty() || values.size() > kMaxTensors) {
    return tensorflow::errors::InvalidArgument("a cached item holds 1..", kMaxTensors, " tensors, got ", values.size());
  }
  for (const Tensor& t : values) {
    if (!IsStorable(t.dtype())) {
      return tensorflow::errors::InvalidArgument(
          "cannot cache a tensor of dtype ", tensorflow::DataTypeString(t.dtype()), ": only numbers, bool and string");
    }
  }
  return absl::OkStatus();
}

uint64_t EncodedSize(const std::string& key, const std::vector<Tensor>& values) {
  uint64_t size = kFixedHeader + key.size() + kCrcBytes;
  for (const Tensor& t : values) size += 8 + 8 * static_cast<uint64_t>(t.dims()) + DataBytes(t);
  return size;
}

void EncodeItem(const std::string& key, const std::vector<Tensor>& values, std::string* out) {
  const size_t start = out->size();
  out->reserve(start + EncodedSize(key, values));
  out->append(kItemMagic, sizeof(kItemMagic));
  Put(static_cast<uint32_t>(key.size()), out);
  Put(static_cast<uint32_t>(values.size()), out);
  out->append(key);
  for (const Tensor& t : values) {
    Put(static_cast<uint32_t>(t.dtype()), out);
    Put(static_cast<uint32_t>(t.dims()), out);
    for (int d = 0; d < t.dims(); ++d) Put(static_cast<int64_t>(t.dim_size(d)), out);
    if (t.dtype() != tensorflow::DT_STRING) {
      out->append(t.tensor_data().data(), t.tensor_data().size());
      continue;
    }
    const auto strings = t.flat<tstring>();
    for (int64_t i = 0; i < strings.size(); ++i) {
      Put(static_cast<uint64_t>(strings(i).size()), out);
      out->append(strings(i).data(), strings(i).size());
    }
  }
  Put(Crc32c(out->data() + start, out->size() - start), out);
}

Decoded DecodeItem(const char* data, uint64_t size, const std::string& key, std::vector<Tensor>* values,
                   std::string* error) {
  const auto damaged = [error](uint64_t offset, const std::string& what) {
    Fail(error, offset, what);
    return Decoded::kDamaged;
  };
  if (size < kFixedHeader + kCrcBytes) return damaged(0, "item of " + std::to_string(size) + " bytes is too short");
  if (std::memcmp(data, kItemMagic, sizeof(kItemMagic)) != 0) return damaged(0, "not a version-1 cache item");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data + size - kCrcBytes, kCrcBytes);
  if (Crc32c(data, size - kCrcBytes) != stored_crc) return damaged(size - kCrcBytes, "CRC mismatch");
  Reader in(data, size - kCrcBytes);
  in.Take(sizeof(kItemMagic));
  uint32_t key_length, count;
  in.Get(&key_length);
  in.Get(&count);
  if (key_length == 0 || key_length > kMaxKeyBytes) return damaged(8, "key length out of range");
  if (count == 0 || count > kMaxTensors) return damaged(12, "tensor count out of range");
  const char* stored_key = in.Take(key_length);
  if (stored_key == nullptr) return damaged(16, "key past the end");
  if (key.size() != key_length || std::memcmp(stored_key, key.data(), key_length) != 0) return Decoded::kOtherKey;
  values->assign(count, Tensor());
  for (Tensor& t : *values) {
    if (!DecodeTensor(&in, &t, error)) return Decoded::kDamaged;
  }
  if (in.left() != 0) return damaged(in.pos(), std::to_string(in.left()) + " bytes after the last tensor");
  return Decoded::kOk;
}

std::string KeyHash(const std::string& key) {
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx",
                static_cast<unsigned long long>(Fnv1aSplitmix(key, 0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(Fnv1aSplitmix(key, 0x84222325cbf29ce4ull)));
  return hex;
}

}  // namespace cache
}  // namespace tfliquid
