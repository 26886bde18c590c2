#include "records/item_format.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace records {
namespace {

struct Registry {
  tensorflow::mutex mu;
  std::map<std::string, ItemFormat> formats TF_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: ops may run during static destruction
  return *registry;
}

// "bytes": an item's parts up to the group read, as a string.
absl::Status EmitBytes(const RecordPrefix& record, const char* buffer, uint32_t i, int64_t,
                       tensorflow::Allocator* allocator, tensorflow::Tensor* out) {
  *out = tensorflow::Tensor(allocator, tensorflow::DT_STRING, tensorflow::TensorShape({}));
  tensorflow::tstring& bytes = out->scalar<tensorflow::tstring>()();
  bytes.resize_uninitialized(record.ItemSize(i));
  record.CopyItem(buffer, i, bytes.data());
  return absl::OkStatus();
}

const bool kBytesRegistered = RegisterItemFormat("bytes", {tensorflow::DT_STRING, /*pixels=*/false, &EmitBytes});

}  // namespace

bool RegisterItemFormat(const std::string& name, ItemFormat format) {
  Registry& registry = TheRegistry();
  tensorflow::mutex_lock lock(registry.mu);
  registry.formats[name] = format;
  return true;
}

absl::Status FindItemFormat(const std::string& name, const ItemFormat** format) {
  Registry& registry = TheRegistry();
  tensorflow::mutex_lock lock(registry.mu);
  const auto it = registry.formats.find(name);
  if (it != registry.formats.end()) {
    *format = &it->second;  // std::map nodes stay put
    return absl::OkStatus();
  }
  std::string names;
  for (const auto& [known, unused] : registry.formats) absl::StrAppend(&names, names.empty() ? "'" : ", '", known, "'");
  return absl::InvalidArgumentError(absl::StrCat("item_format must be one of ", names, ", got '", name, "'"));
}

}  // namespace records
}  // namespace tfliquid
