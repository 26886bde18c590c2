#include "l3/l3_batch_input.h"

#include <string>

#include "common/input_checks.h"

namespace tfliquid {

absl::Status ReadL3Batch(OpKernelContext* ctx, std::vector<std::string_view>* images, l3::BatchHeaders* batch) {
  const Tensor* encoded;
  TF_RETURN_IF_ERROR(InputWithRank(ctx, "encoded", 1, &encoded));
  const auto contents = encoded->vec<tstring>();
  images->resize(contents.size());
  for (int64_t i = 0; i < contents.size(); ++i) (*images)[i] = std::string_view(contents(i).data(), contents(i).size());
  std::string error;
  if (!l3::ParseBatchHeaders(*images, batch, &error)) return absl::InvalidArgumentError("L3 " + error);
  return absl::OkStatus();
}

}  // namespace tfliquid
