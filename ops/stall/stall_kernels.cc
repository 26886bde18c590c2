// Kernels of the StallMonitor's ops (tfliquid/keras/stall_monitor.py): a dataset that times how long each request
// for an element waits on its input, and the read of those times. The wait is timed where the consumer asks, so
// it holds however the consumer calls (one batch per train step or several, training or validation) and counts
// nothing the consumer did before asking (tracing its step). In C++ rather than a tf.data map: the op sits on the
// train step's path to its batch, where a map's function call costs more than a step can spare.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/dataset_kernel.h"
#include "stall/stall_counters.h"
#include "stall/stall_ops.h"

namespace tfliquid {
namespace {

class StallStampDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit StallStampDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallRingAttr, &ring_name_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    std::shared_ptr<stall::Counters> counters;
    OP_REQUIRES_OK(ctx, stall::Counters::Get(ring_name_, &counters));
    *output = new Dataset(ctx, input, ring_name_, std::move(counters));
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string ring_name,
            std::shared_ptr<stall::Counters> counters)
        : ForwardingDataset(ctx, input, "StallStamp"),
          ring_name_(std::move(ring_name)),
          counters_(std::move(counters)) {
      AddInputOutputs();
    }

    class Iterator : public ForwardingDataset::Iterator {
     public:
      using ForwardingDataset::Iterator::Iterator;

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        const auto asked = std::chrono::steady_clock::now();
        TF_RETURN_IF_ERROR(ForwardingDataset::Iterator::GetNextInternal(ctx, out_tensors, end_of_sequence));
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
        if (*end_of_sequence || out_tensors->empty()) {
          dataset()->counters_->Add(waited, 0, 0);
          return absl::OkStatus();
        }
        const Tensor& first = out_tensors->front();
        dataset()->counters_->Add(waited, 1, first.dims() > 0 ? first.dim_size(0) : 1);
        return absl::OkStatus();
      }
    };

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    tensorflow::Node** output) const override {
      return AddDatasetNode(ctx, b, this, input_, {Attr(kStallRingAttr, ring_name_)}, output);
    }

   private:
    const std::string ring_name_;
    const std::shared_ptr<stall::Counters> counters_;
  };

  std::string ring_name_;
};

class StallRingReadOp : public OpKernel {
 public:
  explicit StallRingReadOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallRingAttr, &ring_name_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<stall::Counters> counters;
    OP_REQUIRES_OK(ctx, stall::Counters::Get(ring_name_, &counters));
    Tensor *waited, *batches, *items;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &waited));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &batches));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({}), &items));
    counters->Read(&waited->scalar<double>()(), &batches->scalar<int64_t>()(), &items->scalar<int64_t>()());
  }

 private:
  std::string ring_name_;
};

REGISTER_KERNEL_BUILDER(Name(kStallStampDatasetOp).Device(tensorflow::DEVICE_CPU), StallStampDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kStallRingReadOp).Device(tensorflow::DEVICE_CPU), StallRingReadOp);

}  // namespace
}  // namespace tfliquid
