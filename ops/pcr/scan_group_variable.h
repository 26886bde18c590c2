// A PCR dataset's scan group read from a tf.Variable by the dataset op itself, and only from that variable.
//
// Why the op reads it, not a ReadVariableOp in the interleave function: that op is stateful, so checkpointing an
// iterator would fail ("ReadVariableOp is stateful"). Why a token: tf.data service serializes a captured variable
// as a copy of its value at distribute() time, so workers would read a frozen scan group while the autotuner
// assigns the real one. Liquid>ScanGroupVariableToken registers the variable (its resource handle's identity) in
// this process; the dataset op reads a variable only if the token names that very handle, and fails otherwise.
#ifndef TFLIQUID_OPS_PCR_SCAN_GROUP_VARIABLE_H_
#define TFLIQUID_OPS_PCR_SCAN_GROUP_VARIABLE_H_

#include <cstdint>

#include "common/kernel.h"

namespace tfliquid {

// The value of the int32 or int64 scalar variable whose handle is input `input`, if it is the variable registered
// under `token` in this process; it must be in 1..num_groups. FailedPrecondition for another variable or process.
absl::Status ReadScanGroupVariable(OpKernelContext* ctx, int input, int64_t token, int64_t num_groups,
                                   int64_t* scan_group);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_PCR_SCAN_GROUP_VARIABLE_H_
