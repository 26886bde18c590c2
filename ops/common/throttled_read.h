// Reads through TensorFlow's file system layer (local paths, gs://, ... whatever TF has registered), drawing
// every chunk from the process-wide ReadThrottle. The throttle's waits end as soon as the reading op's (or
// iterator's) CancellationManager is cancelled: a dropped iterator or an interrupted program does not wait out
// reads that nobody will use.
#ifndef TFLIQUID_OPS_COMMON_THROTTLED_READ_H_
#define TFLIQUID_OPS_COMMON_THROTTLED_READ_H_

#include <cstdint>
#include <string>

#include "tensorflow/core/framework/cancellation.h"
#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/status.h"

namespace tfliquid {

// Reads bytes [offset, offset + length) of `path` into buffer[0, length) with one logical read issued in
// throttle-sized chunks, once the read queue `queue` (null: none; common/read_queues.h) admits it. A file that
// ends early is a DataLoss error naming the file and the offset; a read that `cancellation` (null: none) cancels
// is a Cancelled error naming them, and the chunks it did not read are not counted as read.
absl::Status ReadRange(tensorflow::Env* env, const std::string& path, uint64_t offset, uint64_t length, char* buffer,
                       tensorflow::CancellationManager* cancellation, const std::string* queue = nullptr);

// Draws `bytes` from the throttle for a reader outside tfliquid; a Cancelled error, with nothing drawn, if
// `cancellation` (null: none) is cancelled first.
absl::Status DrawBandwidth(uint64_t bytes, tensorflow::CancellationManager* cancellation);

// Size of `path` in bytes.
absl::Status FileSize(tensorflow::Env* env, const std::string& path, uint64_t* size);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_THROTTLED_READ_H_
