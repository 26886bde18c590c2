// Registration and shape functions of the L3 ops (kernels: l3_kernels.cc).
#include "l3/l3_ops.h"

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kDecodeL3Op)
    .Input("contents: string")
    .Output("image: uint8")
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      c->set_output(0, c->MakeShape({InferenceContext::kUnknownDim, InferenceContext::kUnknownDim,
                                     InferenceContext::kUnknownDim}));
      return absl::OkStatus();
    })
    .Doc("Decodes an L3 image (docs/formats/l3.md) to uint8 [H, W, C].");

REGISTER_OP(kEncodeL3Op)
    .Input("image: uint8")
    .Output("contents: string")
    .Attr(absl::StrCat(kProfileAttr, ": string = 'default'"))
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(InputHasRank(c, 0, 3));
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc("Encodes uint8 [H, W, C] (C = 1, 3, 4) as L3 with the 'default' or 'paper' profile.");

REGISTER_OP(kDecodeL3BatchOp)
    .Input("encoded: string")
    .Output("images: uint8")
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(InputHasRank(c, 0, 1));
      c->set_output(0, c->MakeShape({c->Dim(c->input(0), 0), InferenceContext::kUnknownDim,
                                     InferenceContext::kUnknownDim, InferenceContext::kUnknownDim}));
      return absl::OkStatus();
    })
    .Doc("Decodes a batch of L3 images of one shape to uint8 [B, H, W, C], on the CPU or a CUDA GPU.");

REGISTER_OP(kL3GpuSupportOp)
    .Output("reason: string")
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Empty when the CUDA driver and NVRTC load and a device exists; otherwise why DecodeL3Batch cannot run "
        "on a GPU here.");

REGISTER_OP(kCompileL3KernelsOp)
    .Output("ptx: string")
    .Attr(absl::StrCat(kArchAttr, ": string = 'compute_75'"))
    .SetShapeFn(ScalarInputsAndOutputs)
    .Doc(
        "Compiles the GPU decoder's CUDA program with NVRTC, as DecodeL3Batch's GPU kernel does, and returns the "
        "PTX: checks an NVRTC installation without a GPU.");

}  // namespace tfliquid
