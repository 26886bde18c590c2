// Registration and shape function of the Liquid ops (kernels: liquid_kernels.cc).
#include "liquid/liquid_ops.h"

#include "absl/strings/str_cat.h"
#include "common/input_checks.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tfliquid {

using tensorflow::shape_inference::InferenceContext;

REGISTER_OP(kDecodeRawItemOp)
    .Input("contents: string")
    .Output("image: uint8")
    .Attr(absl::StrCat(kChannelsAttr, ": int >= 1"))
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(ScalarInputs(c));
      int64_t channels;
      TF_RETURN_IF_ERROR(c->GetAttr(kChannelsAttr, &channels));
      c->set_output(0, c->MakeShape({InferenceContext::kUnknownDim, InferenceContext::kUnknownDim, channels}));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Decodes a Liquid raw item (docs/formats/liquid.md, Items: magic, height, width, channels, pixels) to uint8
[H, W, channels] with one copy. An item of another channel count, or whose size is not its header's, is an
InvalidArgument error naming the offset.
)doc");

}  // namespace tfliquid
