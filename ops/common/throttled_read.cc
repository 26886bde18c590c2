#include "common/throttled_read.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "common/read_queues.h"
#include "common/throttle.h"
#include "tensorflow/core/platform/errors.h"

namespace tfliquid {
namespace {

// Draws from the process-wide throttle on behalf of one operation, whose CancellationManager ends the waits:
// it is connected to the flag the throttle watches for as long as this object lives.
class CancellableDraw {
 public:
  explicit CancellableDraw(tensorflow::CancellationManager* manager) {
    // An operation cancelled already draws nothing; a null manager registers nothing (and never cancels).
    if (!tensorflow::RegisterCancellationCallback(manager, [this] { flag_.Cancel(); }, &deregister_).ok()) {
      flag_.Cancel();
    }
  }
  ~CancellableDraw() { deregister_(); }  // waits for a callback in progress, which uses flag_
  CancellableDraw(const CancellableDraw&) = delete;
  CancellableDraw& operator=(const CancellableDraw&) = delete;

  // False, with nothing drawn, once the operation is cancelled.
  bool Acquire(uint64_t bytes) { return ReadThrottle::Global().Acquire(bytes, &flag_); }
  // False, with nothing entered, once the operation is cancelled.
  bool Enter(const std::string& queue) { return ReadQueues::Global().Enter(queue, &flag_); }

 private:
  CancellationFlag flag_;
  std::function<void()> deregister_ = [] {};
};

}  // namespace

absl::Status FileSize(tensorflow::Env* env, const std::string& path, uint64_t* size) {
  tensorflow::uint64 file_size = 0;
  TF_RETURN_IF_ERROR(env->GetFileSize(path, &file_size));
  *size = file_size;
  return absl::OkStatus();
}

absl::Status ReadRange(tensorflow::Env* env, const std::string& path, uint64_t offset, uint64_t length, char* buffer,
                       tensorflow::CancellationManager* cancellation, const std::string* queue) {
  std::unique_ptr<tensorflow::RandomAccessFile> file;
  TF_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  CancellableDraw draw(cancellation);
  if (queue != nullptr && !draw.Enter(*queue)) {
    return tensorflow::errors::Cancelled(path, ": offset ", offset, ": read cancelled in read queue '", *queue, "'");
  }
  // Leaves the queue however the read ends.
  struct Admitted {
    const std::string* queue;
    ~Admitted() {
      if (queue != nullptr) ReadQueues::Global().Leave(*queue);
    }
  } admitted{queue};
  uint64_t done = 0;
  while (done < length) {
    const uint64_t chunk = std::min<uint64_t>(kThrottleChunkBytes, length - done);
    if (!draw.Acquire(chunk)) {
      return tensorflow::errors::Cancelled(path, ": offset ", offset + done, ": read cancelled while throttled, ",
                                           length - done, " of ", length, " bytes unread");
    }
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

absl::Status DrawBandwidth(uint64_t bytes, tensorflow::CancellationManager* cancellation) {
  if (!CancellableDraw(cancellation).Acquire(bytes)) {
    return tensorflow::errors::Cancelled("drawing ", bytes, " bytes of read bandwidth: cancelled while throttled");
  }
  return absl::OkStatus();
}

}  // namespace tfliquid
