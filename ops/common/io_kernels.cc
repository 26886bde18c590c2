// Kernels of the throttled I/O ops: Liquid>ReadFile(Range), Liquid>SetReadBandwidth, Liquid>DrawReadBandwidth,
// Liquid>ReadStats, Liquid>Crc32c, and of the read queues: Liquid>QueuedReadFile, Liquid>SetReadQueueThreads,
// Liquid>ReadQueueCounts.
#include <algorithm>

#include "common/crc32c.h"
#include "common/input_checks.h"
#include "common/io_ops.h"
#include "common/kernel.h"
#include "common/read_queues.h"
#include "common/throttle.h"
#include "common/throttled_read.h"

namespace tfliquid {
namespace {

// Inputs: filename, and for Liquid>ReadFileRange also offset and length (length < 0: to the end of the file), for
// Liquid>QueuedReadFile the queue.
class ReadFileOp : public OpKernel {
 public:
  explicit ReadFileOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring* filename;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "filename", &filename));
    const std::string path(*filename);
    const tstring* queue_input = nullptr;
    std::string queue;
    if (ctx->num_inputs() == 2) {
      OP_REQUIRES_OK(ctx, ScalarInput(ctx, "queue", &queue_input));
      queue = std::string(*queue_input);
    }
    int64_t offset = 0, length = -1;
    if (ctx->num_inputs() == 3) {
      OP_REQUIRES_OK(ctx, ScalarInput(ctx, "offset", &offset));
      OP_REQUIRES_OK(ctx, ScalarInput(ctx, "length", &length));
    }
    OP_REQUIRES(ctx, offset >= 0, tensorflow::errors::InvalidArgument(path, ": negative offset ", offset));
    uint64_t size;
    OP_REQUIRES_OK(ctx, FileSize(ctx->env(), path, &size));
    if (length < 0) length = std::max<int64_t>(0, static_cast<int64_t>(size) - offset);
    // Checked before allocating: a bad range must not ask for more memory than the file holds.
    OP_REQUIRES(ctx, static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) <= size,
                tensorflow::errors::OutOfRange(path, ": offset ", offset, ": range of ", length,
                                               " bytes runs past the end of the ", size, "-byte file"));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    tstring& contents = output->scalar<tstring>()();
    contents.resize_uninitialized(length);
    OP_REQUIRES_OK(ctx, ReadRange(ctx->env(), path, offset, length, contents.data(), ctx->cancellation_manager(),
                                  queue_input == nullptr ? nullptr : &queue));
  }
};

class SetReadQueueThreadsOp : public OpKernel {
 public:
  explicit SetReadQueueThreadsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring* queue;
    int64_t threads;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "queue", &queue));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "threads", &threads));
    OP_REQUIRES(
        ctx, threads >= 1,
        tensorflow::errors::InvalidArgument("threads of read queue '", *queue, "' must be >= 1, got ", threads));
    ReadQueues::Global().SetThreads(std::string(*queue), threads);
  }
};

class ReadQueueCountsOp : public OpKernel {
 public:
  explicit ReadQueueCountsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor* queues;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "queues", 1, &queues));
    Tensor *admitted, *waiting;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, queues->shape(), &admitted));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, queues->shape(), &waiting));
    for (int64_t i = 0; i < queues->NumElements(); ++i) {
      ReadQueues::Global().Counts(std::string(queues->vec<tstring>()(i)), &admitted->vec<int64_t>()(i),
                                  &waiting->vec<int64_t>()(i));
    }
  }
};

class SetReadBandwidthOp : public OpKernel {
 public:
  explicit SetReadBandwidthOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    double rate;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "bytes_per_second", &rate));
    ReadThrottle::Global().SetRate(rate);
  }
};

class DrawReadBandwidthOp : public OpKernel {
 public:
  explicit DrawReadBandwidthOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    int64_t bytes;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "num_bytes", &bytes));
    OP_REQUIRES(ctx, bytes >= 0, tensorflow::errors::InvalidArgument("num_bytes must be >= 0, got ", bytes));
    OP_REQUIRES_OK(ctx, DrawBandwidth(static_cast<uint64_t>(bytes), ctx->cancellation_manager()));
  }
};

class ReadStatsOp : public OpKernel {
 public:
  explicit ReadStatsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    Tensor* bytes;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &bytes));
    bytes->scalar<int64_t>()() = static_cast<int64_t>(ReadThrottle::Global().bytes_granted());
    Tensor* rate;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &rate));
    rate->scalar<double>()() = ReadThrottle::Global().rate();
  }
};

class Crc32cOp : public OpKernel {
 public:
  explicit Crc32cOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const tstring* data;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "data", &data));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    output->scalar<int64_t>()() = Crc32c(data->data(), data->size());
  }
};

REGISTER_KERNEL_BUILDER(Name(kReadFileOp).Device(tensorflow::DEVICE_CPU), ReadFileOp);
REGISTER_KERNEL_BUILDER(Name(kReadFileRangeOp).Device(tensorflow::DEVICE_CPU), ReadFileOp);
REGISTER_KERNEL_BUILDER(Name(kSetReadBandwidthOp).Device(tensorflow::DEVICE_CPU), SetReadBandwidthOp);
REGISTER_KERNEL_BUILDER(Name(kDrawReadBandwidthOp).Device(tensorflow::DEVICE_CPU), DrawReadBandwidthOp);
REGISTER_KERNEL_BUILDER(Name(kReadStatsOp).Device(tensorflow::DEVICE_CPU), ReadStatsOp);
REGISTER_KERNEL_BUILDER(Name(kQueuedReadFileOp).Device(tensorflow::DEVICE_CPU), ReadFileOp);
REGISTER_KERNEL_BUILDER(Name(kSetReadQueueThreadsOp).Device(tensorflow::DEVICE_CPU), SetReadQueueThreadsOp);
REGISTER_KERNEL_BUILDER(Name(kReadQueueCountsOp).Device(tensorflow::DEVICE_CPU), ReadQueueCountsOp);
REGISTER_KERNEL_BUILDER(Name(kCrc32cOp).Device(tensorflow::DEVICE_CPU), Crc32cOp);

}  // namespace
}  // namespace tfliquid
