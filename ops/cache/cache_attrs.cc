#include "cache/cache_attrs.h"

#include "absl/strings/str_cat.h"
#include "cache/policy.h"

namespace tfliquid {
namespace cache {

std::array<std::string, 5> AttrSpecs() {
  // The policy's allowed values are the registry's, so that Python reads them from the OpDef.
  return {
      absl::StrCat(kNameAttr, ": string = ''"),
      absl::StrCat(kCapacityBytesAttr, ": int = 0"),
      absl::StrCat(kDirectoryAttr, ": string = ''"),
      absl::StrCat(kPolicyAttr, ": {", QuotedPolicyNames(/*with_evicting=*/true), "} = '", Policies()[0].name, "'"),
      absl::StrCat(kOrderAttr, ": string = ''"),
  };
}

absl::Status ConfigFromAttrs(tensorflow::OpKernelConstruction* ctx, Config* config) {
  TF_RETURN_IF_ERROR(ctx->GetAttr(kNameAttr, &config->name));
  TF_RETURN_IF_ERROR(ctx->GetAttr(kCapacityBytesAttr, &config->capacity_bytes));
  TF_RETURN_IF_ERROR(ctx->GetAttr(kDirectoryAttr, &config->directory));
  TF_RETURN_IF_ERROR(ctx->GetAttr(kPolicyAttr, &config->policy));
  TF_RETURN_IF_ERROR(ctx->GetAttr(kOrderAttr, &config->order));
  return config->Validate();
}

void AppendAttrs(const Config& config, Attrs* attrs) {
  attrs->insert(attrs->end(), {Attr(kNameAttr, config.name), Attr(kCapacityBytesAttr, config.capacity_bytes),
                               Attr(kDirectoryAttr, config.directory), Attr(kPolicyAttr, config.policy),
                               Attr(kOrderAttr, config.order)});
}

}  // namespace cache
}  // namespace tfliquid
