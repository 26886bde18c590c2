// The MinIO cache's item file (docs/formats/cache.md): one item = its key and the tensors `fetch` returned.
// The same encoding sizes items in memory, so a byte budget means the same in both backends.
#ifndef TFLIQUID_OPS_CACHE_ITEM_CODEC_H_
#define TFLIQUID_OPS_CACHE_ITEM_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/platform/status.h"

namespace tfliquid {
namespace cache {

inline constexpr char kItemMagic[8] = {'L', 'Q', 'C', 'I', 'T', 'E', 'M', '1'};
inline constexpr uint32_t kMaxKeyBytes = 65536;
inline constexpr uint32_t kMaxTensors = 4096;
inline constexpr uint32_t kMaxRank = 254;

// Whether an item file can hold `key` (1..kMaxKeyBytes bytes). The item of a key it cannot hold is uncacheable,
// which is not an error: keys are data (a long string key), and the pipeline fetches that item every time.
bool IsStorableKey(const std::string& key);

// InvalidArgument unless every tensor's dtype can be stored (numbers, bool, string) and their count is in range:
// what fetch returns is fixed when the pipeline is built, so that is a programming error.
absl::Status CheckStorable(const std::vector<tensorflow::Tensor>& values);

// Size in bytes of the encoded item: what the budget counts.
uint64_t EncodedSize(const std::string& key, const std::vector<tensorflow::Tensor>& values);

// Appends the encoded item to *out (the key must be storable, and CheckStorable must have passed).
void EncodeItem(const std::string& key, const std::vector<tensorflow::Tensor>& values, std::string* out);

enum class Decoded {
  kOk,        // *values holds the item
  kOtherKey,  // an intact item of another key whose hash is the same
  kDamaged,   // not a complete, intact item: the reason is in *error
};

// Decodes data[0, size) as the item of `key`. Nothing is allocated before the lengths have been checked
// against `size`.
Decoded DecodeItem(const char* data, uint64_t size, const std::string& key, std::vector<tensorflow::Tensor>* values,
                   std::string* error);

// The file name stem of `key`: 32 hex digits (docs/formats/cache.md, Key hash).
std::string KeyHash(const std::string& key);

}  // namespace cache
}  // namespace tfliquid

#endif  // TFLIQUID_OPS_CACHE_ITEM_CODEC_H_
