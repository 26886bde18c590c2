// A PCR dataset's scan group, read by Liquid>ScanGroupDataset from a tf.Variable, and only from that variable.
//
// Why a dataset op, not a ReadVariableOp in PCRDataset's interleave function: a plain op that reads a variable
// is stateful, and tf.data refuses to checkpoint a pipeline with stateful ops in its functions ("ReadVariableOp
// is stateful"); it allows dataset ops there. The variable is the caller's state, which a checkpoint does not
// hold by design. Why a token: tf.data service serializes a captured variable as a copy of its value at distribute()
// time, so workers would read a frozen scan group while the autotuner assigns the real one.
// Liquid>ScanGroupVariableToken registers the variable (its resource handle's identity) in this process; the dataset op
// reads a variable only if the token names that very handle, and fails otherwise.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/dataset_kernel.h"
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

// The value of the int32 or int64 scalar variable whose handle is input `input`, if it is the variable registered
// under `token` in this process; it must be in 1..num_groups. FailedPrecondition for another variable or process.
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

// One element: the scan group variable's value, read when the dataset is made.
class ScanGroupDatasetOp : public DatasetOpKernel {
 public:
  explicit ScanGroupDatasetOp(OpKernelConstruction* ctx) : DatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kScanGroupVariableTokenAttr, &token_));
  }

  void MakeDataset(OpKernelContext* ctx, DatasetBase** output) override {
    const Tensor* handle;
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "scan_group_variable", 0, &handle));
    int64_t num_groups, scan_group;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "num_scan_groups", &num_groups));
    OP_REQUIRES_OK(ctx, ReadScanGroupVariable(ctx, 0, token_, num_groups, &scan_group));
    *output = new Dataset(ctx, scan_group);
  }

 private:
  class Dataset : public ComputedDataset {
   public:
    Dataset(OpKernelContext* ctx, int64_t scan_group)
        : ComputedDataset(ctx, "ScanGroup", tensorflow::DT_INT64, /*save_elements=*/true), scan_group_(scan_group) {}

    absl::Status Compute(IteratorContext* ctx, std::vector<Tensor>* elements) const override {
      elements->emplace_back(ctx->allocator({}), tensorflow::DT_INT64, TensorShape({}));
      elements->back().scalar<int64_t>()() = scan_group_;
      return absl::OkStatus();
    }

   protected:
    // A graph cannot carry this process's variable; PCRDataset makes this dataset in its interleave function, so
    // only a graph of the dataset itself would need it.
    absl::Status AsGraphDefInternal(SerializationContext*, DatasetGraphDefBuilder*, Node**) const override {
      return tensorflow::errors::Unimplemented("a scan group read from a tf.Variable cannot be serialized: use an int");
    }

   private:
    const int64_t scan_group_;
  };

  int64_t token_;
};

REGISTER_KERNEL_BUILDER(Name(kScanGroupDatasetOp).Device(tensorflow::DEVICE_CPU), ScanGroupDatasetOp);

}  // namespace
}  // namespace tfliquid
