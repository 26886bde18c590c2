// The input of Liquid>DecodeL3Batch as both of its kernels (CPU: l3_kernels.cc, GPU: l3_gpu_kernels.cc) take it:
// the rank checked, the strings viewed in place, every header validated and the shape shared, all on the host.
#ifndef TFLIQUID_OPS_L3_L3_BATCH_INPUT_H_
#define TFLIQUID_OPS_L3_L3_BATCH_INPUT_H_

#include <string_view>
#include <vector>

#include "common/kernel.h"
#include "l3/l3_launch_plan.h"

namespace tfliquid {

// InvalidArgument naming the op's input, or the first bad image ("L3 image 2: offset 0: bad magic: ...").
absl::Status ReadL3Batch(OpKernelContext* ctx, std::vector<std::string_view>* images, l3::BatchHeaders* batch);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_L3_L3_BATCH_INPUT_H_
