#include "pcr/scan_group_variable.h"

#include <map>
#include <random>
#include <string>

#include "common/input_checks.h"
#include "pcr/pcr_ops.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/platform/mutex.h"

namespace tfliquid {
namespace {

// The variables this process registered: token -> the identity of their resource handle.
struct Registry {
  tensorflow::mutex mu;
  std::map<int64_t, std::string> identities TF_GUARDED_BY(mu);
  std::mt19937_64 random TF_GUARDED_BY(mu){std::random_device{}()};
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: ops may run during static destruction
  return *registry;
}

// What tells two variables apart within a process: a copy that tf.data service makes has another name.
std::string Identity(const tensorflow::ResourceHandle& handle) {
  return handle.device() + "|" + handle.container() + "|" + handle.name();
}

class ScanGroupVariableTokenOp : public OpKernel {
 public:
  explicit ScanGroupVariableTokenOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor* handle;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "variable", 0, &handle));
    Registry& registry = TheRegistry();
    int64_t token;
    {
      tensorflow::mutex_lock lock(registry.mu);
      do {
        token = static_cast<int64_t>(registry.random() >> 1);
      } while (token == 0 || registry.identities.count(token));  // 0: the attribute's "no variable"
      registry.identities[token] = Identity(tensorflow::HandleFromInput(ctx, 0));
    }
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &output));
    output->scalar<int64_t>()() = token;
  }
};

REGISTER_KERNEL_BUILDER(Name(kScanGroupVariableTokenOp).Device(tensorflow::DEVICE_CPU), ScanGroupVariableTokenOp);

bool IsRegistered(int64_t token, const tensorflow::ResourceHandle& handle) {
  Registry& registry = TheRegistry();
  tensorflow::mutex_lock lock(registry.mu);
  const auto it = registry.identities.find(token);
  return it != registry.identities.end() && it->second == Identity(handle);
}

}  // namespace

absl::Status ReadScanGroupVariable(OpKernelContext* ctx, int input, int64_t token, int64_t num_groups,
                                   int64_t* scan_group) {
  const tensorflow::ResourceHandle& handle = tensorflow::HandleFromInput(ctx, input);
  tensorflow::core::RefCountPtr<tensorflow::Var> variable;
  if (!IsRegistered(token, handle) || !tensorflow::LookupResource(ctx, handle, &variable).ok()) {
    return tensorflow::errors::FailedPrecondition(
        "this PCRDataset reads its scan group from a tf.Variable, which only the process that built the dataset "
        "can read: tf.data service ships a copy of the variable's value, which assigning the variable would not "
        "change. On tf.data service, build the PCRDataset with an int scan group");
  }
  tensorflow::tf_shared_lock lock(*variable->mu());
  const Tensor& value = *variable->tensor();
  if (value.dims() != 0 || (value.dtype() != tensorflow::DT_INT64 && value.dtype() != tensorflow::DT_INT32)) {
    return tensorflow::errors::InvalidArgument("the scan group variable must be an int32 or int64 scalar, got ",
                                               tensorflow::DataTypeString(value.dtype()), " ",
                                               value.shape().DebugString());
  }
  *scan_group = value.dtype() == tensorflow::DT_INT64 ? value.scalar<int64_t>()() : value.scalar<int32_t>()();
  if (*scan_group < 1 || *scan_group > num_groups) {
    return tensorflow::errors::InvalidArgument("the scan group variable holds ", *scan_group,
                                               "; this dataset has scan groups 1..", num_groups,
                                               " (the last is full fidelity)");
  }
  return absl::OkStatus();
}

}  // namespace tfliquid
