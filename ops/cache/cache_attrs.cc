#include "cache/cache_attrs.h"

namespace tfliquid {
namespace cache {

absl::Status ConfigFromAttrs(tensorflow::OpKernelConstruction* ctx, Config* config) {
  TF_RETURN_IF_ERROR(ctx->GetAttr("cache_name", &config->name));
  TF_RETURN_IF_ERROR(ctx->GetAttr("cache_capacity_bytes", &config->capacity_bytes));
  TF_RETURN_IF_ERROR(ctx->GetAttr("cache_directory", &config->directory));
  TF_RETURN_IF_ERROR(ctx->GetAttr("cache_policy", &config->policy));
  return config->Validate();
}

}  // namespace cache
}  // namespace tfliquid
