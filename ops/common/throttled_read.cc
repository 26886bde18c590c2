#include "common/throttled_read.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "common/throttle.h"
#include "tensorflow/core/platform/errors.h"

namespace tfliquid {

absl::Status FileSize(tensorflow::Env* env, const std::string& path, uint64_t* size) {
  tensorflow::uint64 file_size = 0;
  TF_RETURN_IF_ERROR(env->GetFileSize(path, &file_size));
  *size = file_size;
  return absl::OkStatus();
}

absl::Status ReadRange(tensorflow::Env* env, const std::string& path, uint64_t offset, uint64_t length, char* buffer) {
  std::unique_ptr<tensorflow::RandomAccessFile> file;
  TF_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  uint64_t done = 0;
  while (done < length) {
    const uint64_t chunk = std::min<uint64_t>(kThrottleChunkBytes, length - done);
    ReadThrottle::Global().Acquire(chunk);
    absl::string_view result;
    absl::Status status = file->Read(offset + done, chunk, &result, buffer + done);
    // OutOfRange with a short result is how TF file systems report end of file.
    if (!status.ok() && !absl::IsOutOfRange(status)) return status;
    if (result.data() != buffer + done) std::memcpy(buffer + done, result.data(), result.size());
    if (result.size() < chunk) {
      return tensorflow::errors::DataLoss(path, ": offset ", offset + done + result.size(), ": file ends there but ",
                                          offset + length, " bytes were expected (truncated file?)");
    }
    done += chunk;
  }
  return absl::OkStatus();
}

}  // namespace tfliquid
