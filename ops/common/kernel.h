// What every tfliquid OpKernel file needs from TensorFlow, under short names.
#ifndef TFLIQUID_OPS_COMMON_KERNEL_H_
#define TFLIQUID_OPS_COMMON_KERNEL_H_

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"

namespace tfliquid {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::tstring;

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_KERNEL_H_
