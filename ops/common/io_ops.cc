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

REGISTER_OP(kCrc32cOp)
    .Input("data: string")
    .Output("crc: int64")
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc("CRC32C (Castagnoli) of a string, as stored in PCR records.");

}  // namespace tfliquid
