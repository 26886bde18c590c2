// Reads through TensorFlow's file system layer (local paths, gs://, ... whatever TF has registered), drawing
// every chunk from the process-wide ReadThrottle.
#ifndef TFLIQUID_OPS_COMMON_THROTTLED_READ_H_
#define TFLIQUID_OPS_COMMON_THROTTLED_READ_H_

#include <cstdint>
#include <string>

#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/status.h"

namespace tfliquid {

// Reads bytes [offset, offset + length) of `path` into buffer[0, length) with one logical read issued in
// throttle-sized chunks. A file that ends early is a DataLoss error naming the file and the offset.
absl::Status ReadRange(tensorflow::Env* env, const std::string& path, uint64_t offset, uint64_t length, char* buffer);

// Size of `path` in bytes.
absl::Status FileSize(tensorflow::Env* env, const std::string& path, uint64_t* size);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_THROTTLED_READ_H_
