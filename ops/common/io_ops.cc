// Registration and shape functions of the throttled I/O ops (kernels: io_kernels.cc).
#include "common/io_ops.h"

#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"

namespace tfliquid {

REGISTER_OP(kReadFileOp)
    .Input("filename: string")
    .Output("contents: string")
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Reads a whole file like tf.io.read_file, drawing from the process-wide read throttle.");

REGISTER_OP(kReadFileRangeOp)
    .Input("filename: string")
    .Input("offset: int64")
    .Input("length: int64")
    .Output("contents: string")
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Reads `length` bytes at `offset` (length < 0: to the end), drawing from the read throttle.");

REGISTER_OP(kSetReadBandwidthOp)
    .Input("bytes_per_second: float64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Sets the process-wide read bandwidth of every tfliquid reader; <= 0 removes the limit.");

REGISTER_OP(kDrawReadBandwidthOp)
    .Input("num_bytes: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Blocks until the read throttle grants num_bytes: puts a reader outside tfliquid on the same budget.");

REGISTER_OP(kReadStatsOp)
    .Output("bytes_read: int64")
    .Output("bytes_per_second: float64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Bytes read by tfliquid readers in this process, and the current bandwidth limit (0 = none).");

REGISTER_OP(kQueuedReadFileOp)
    .Input("filename: string")
    .Input("queue: string")
    .Output("contents: string")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(R"doc(
Liquid>ReadFile once the read queue `queue` admits the read: a queue admits at most its threads' reads at a time
(Liquid>SetReadQueueThreads; a queue never set admits every read), the others wait in it.
)doc");

REGISTER_OP(kSetReadQueueThreadsOp)
    .Input("queue: string")
    .Input("threads: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("Sets how many reads the read queue `queue` of this process admits at a time (>= 1).");

REGISTER_OP(kReadQueueCountsOp)
    .Input("queues: string")
    .Output("admitted: int64")
    .Output("waiting: int64")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      TF_RETURN_IF_ERROR(InputHasRank(c, 0, 1));
      c->set_output(0, c->input(0));
      c->set_output(1, c->input(0));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Per queue of `queues`: the reads it admitted that have not ended, and those waiting in it (together, the worker's
measured load).
)doc");

REGISTER_OP(kCrc32cOp)
    .Input("data: string")
    .Output("crc: int64")
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("CRC32C (Castagnoli) of a string, as stored in PCR records.");

}  // namespace tfliquid
