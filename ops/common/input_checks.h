// Rank checks of op inputs, made twice: in shape functions, for graphs built here, and in kernels, because a
// shape function does not run for eager calls or for graphs built elsewhere, and scalar<>() or vec<>() on a
// tensor of another rank is a CHECK failure that kills the process.
#ifndef TFLIQUID_OPS_COMMON_INPUT_CHECKS_H_
#define TFLIQUID_OPS_COMMON_INPUT_CHECKS_H_

#include <cstdint>
#include <initializer_list>

#include "absl/strings/string_view.h"
#include "common/kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

// Shape functions: InvalidArgument unless input `index` has `rank` dimensions, when its rank is known.
absl::Status InputHasRank(tensorflow::shape_inference::InferenceContext* c, int index, int rank);
// Every input is a scalar.
absl::Status ScalarInputs(tensorflow::shape_inference::InferenceContext* c);
// Every input and every output is a scalar.
absl::Status ScalarInputsAndOutputs(tensorflow::shape_inference::InferenceContext* c);

// Kernels: the input called `name` of the running op, or InvalidArgument naming the op, the input and its shape
// ("Liquid>Crc32c: data must be a scalar, got shape [2]") unless it has `rank` dimensions.
absl::Status InputWithRank(OpKernelContext* ctx, absl::string_view name, int rank, const Tensor** input);

// The value of the scalar input `name`.
template <typename T>
absl::Status ScalarInput(OpKernelContext* ctx, absl::string_view name, T* value) {
  const Tensor* input;
  TF_RETURN_IF_ERROR(InputWithRank(ctx, name, 0, &input));
  *value = input->scalar<T>()();
  return absl::OkStatus();
}

// A string is not copied: *value points into the input.
absl::Status ScalarInput(OpKernelContext* ctx, absl::string_view name, const tstring** value);

// Kernels: the shape of dimensions computed from inputs or data, or InvalidArgument when one is negative or their
// product overflows (TensorShape's constructor CHECK-fails on them, which kills the process).
absl::Status ShapeOf(std::initializer_list<int64_t> dims, TensorShape* shape);
// Allocates output `index` with the shape ShapeOf(dims).
absl::Status AllocateOutput(OpKernelContext* ctx, int index, std::initializer_list<int64_t> dims, Tensor** output);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_INPUT_CHECKS_H_
