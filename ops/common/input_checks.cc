#include "common/input_checks.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "tensorflow/core/platform/errors.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

absl::Status InputHasRank(InferenceContext* c, int index, int rank) {
  ShapeHandle unused;
  return c->WithRank(c->input(index), rank, &unused);
}

absl::Status ScalarInputs(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) TF_RETURN_IF_ERROR(InputHasRank(c, i, 0));
  return absl::OkStatus();
}

absl::Status ScalarInputsAndOutputs(InferenceContext* c) {
  TF_RETURN_IF_ERROR(ScalarInputs(c));
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->Scalar());
  return absl::OkStatus();
}

absl::Status InputWithRank(OpKernelContext* ctx, absl::string_view name, int rank, const Tensor** input) {
  TF_RETURN_IF_ERROR(ctx->input(name, input));
  if ((*input)->dims() == rank) return absl::OkStatus();
  const std::string expected = rank == 0 ? "a scalar" : rank == 1 ? "a vector" : absl::StrCat("of rank ", rank);
  return tensorflow::errors::InvalidArgument(ctx->op_kernel().type_string(), ": ", name, " must be ", expected,
                                             ", got shape ", (*input)->shape().DebugString());
}

absl::Status ScalarInput(OpKernelContext* ctx, absl::string_view name, const tstring** value) {
  const Tensor* input;
  TF_RETURN_IF_ERROR(InputWithRank(ctx, name, 0, &input));
  *value = &input->scalar<tstring>()();
  return absl::OkStatus();
}

absl::Status ShapeOf(std::initializer_list<int64_t> dims, TensorShape* shape) {
  return TensorShape::BuildTensorShape(dims, shape);
}

absl::Status AllocateOutput(OpKernelContext* ctx, int index, std::initializer_list<int64_t> dims, Tensor** output) {
  TensorShape shape;
  TF_RETURN_IF_ERROR(ShapeOf(dims, &shape));
  return ctx->allocate_output(index, shape, output);
}

}  // namespace tfliquid
