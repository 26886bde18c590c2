// Kernels of the StallMonitor's ops (tfliquid/keras/stall_monitor.py): a dataset that stamps each element as
// it leaves, and the read of its stamps. In C++ rather than a tf.data map: the stamp sits on the train step's
// path to its batch, and a map's function call cost more there than the step can spare (about 125 us a batch).
#include <memory>
#include <string>
#include <vector>

#include "common/kernel.h"
#include "data/data_ops.h"
#include "data/stall_ring.h"
#include "tensorflow/core/data/name_utils.h"
#include "tensorflow/core/framework/dataset.h"
#include "tensorflow/core/framework/model.h"

namespace tfliquid {
namespace {

using tensorflow::DataTypeVector;
using tensorflow::PartialTensorShape;
using tensorflow::data::DatasetBase;
using tensorflow::data::DatasetIterator;
using tensorflow::data::IteratorBase;
using tensorflow::data::IteratorContext;
using tensorflow::data::IteratorStateReader;
using tensorflow::data::IteratorStateWriter;
using tensorflow::data::SerializationContext;
using tensorflow::data::UnaryDatasetOpKernel;

constexpr char kDatasetType[] = "StallStamp";

class StallStampDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit StallStampDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallRingAttr, &ring_name_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallCapacityAttr, &capacity_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    std::shared_ptr<stall::Ring> ring;
    OP_REQUIRES_OK(ctx, stall::Ring::Get(ring_name_, capacity_, &ring));
    *output = new Dataset(ctx, input, ring_name_, std::move(ring));
  }

 private:
  class Dataset : public DatasetBase {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string ring_name, std::shared_ptr<stall::Ring> ring)
        : DatasetBase(tensorflow::data::DatasetContext(ctx)),
          input_(input),
          ring_name_(std::move(ring_name)),
          ring_(std::move(ring)) {
      input_->Ref();
    }
    ~Dataset() override { input_->Unref(); }

    std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
      return std::make_unique<Iterator>(
          Iterator::Params{this, tensorflow::data::name_utils::IteratorPrefix(kDatasetType, prefix)});
    }

    const DataTypeVector& output_dtypes() const override { return input_->output_dtypes(); }
    const std::vector<PartialTensorShape>& output_shapes() const override { return input_->output_shapes(); }
    std::string DebugString() const override { return "StallStampDatasetOp::Dataset(" + ring_name_ + ")"; }

    int64_t CardinalityInternal(tensorflow::data::CardinalityOptions options) const override {
      return input_->Cardinality(options);
    }
    absl::Status InputDatasets(std::vector<const DatasetBase*>* inputs) const override {
      inputs->push_back(input_);
      return absl::OkStatus();
    }
    absl::Status CheckExternalState() const override { return input_->CheckExternalState(); }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    tensorflow::Node** output) const override {
      tensorflow::Node* input;
      TF_RETURN_IF_ERROR(b->AddInputDataset(ctx, input_, &input));
      tensorflow::AttrValue ring, capacity;
      b->BuildAttrValue(ring_name_, &ring);
      b->BuildAttrValue(ring_->capacity(), &capacity);
      return b->AddDataset(this, {input}, {{kStallRingAttr, ring}, {kStallCapacityAttr, capacity}}, output);
    }

   private:
    class Iterator : public DatasetIterator<Dataset> {
     public:
      explicit Iterator(const Params& params) : DatasetIterator<Dataset>(params) {}

      absl::Status Initialize(IteratorContext* ctx) override {
        return dataset()->input_->MakeIterator(ctx, this, prefix(), &input_impl_);
      }

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        TF_RETURN_IF_ERROR(input_impl_->GetNext(ctx, out_tensors, end_of_sequence));
        if (*end_of_sequence || out_tensors->empty()) return absl::OkStatus();
        const Tensor& first = out_tensors->front();
        dataset()->ring_->Stamp(first.dims() > 0 ? first.dim_size(0) : 1);
        return absl::OkStatus();
      }

     protected:
      std::shared_ptr<tensorflow::data::model::Node> CreateNode(
          IteratorContext* ctx, tensorflow::data::model::Node::Args args) const override {
        return tensorflow::data::model::MakeKnownRatioNode(std::move(args), /*ratio=*/1);
      }

      absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
        return SaveInput(ctx, writer, input_impl_);
      }

      absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
        return RestoreInput(ctx, reader, input_impl_);
      }

     private:
      std::unique_ptr<IteratorBase> input_impl_;
    };

    const DatasetBase* const input_;
    const std::string ring_name_;
    const std::shared_ptr<stall::Ring> ring_;
  };

  std::string ring_name_;
  int64_t capacity_;
};

class StallRingReadOp : public OpKernel {
 public:
  explicit StallRingReadOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallRingAttr, &ring_name_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kStallCapacityAttr, &capacity_));
  }

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<stall::Ring> ring;
    OP_REQUIRES_OK(ctx, stall::Ring::Get(ring_name_, capacity_, &ring));
    Tensor *stamps, *batches, *items;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({capacity_}), &stamps));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &batches));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({}), &items));
    ring->Read(stamps->flat<double>().data(), &batches->scalar<int64_t>()(), &items->scalar<int64_t>()());
  }

 private:
  std::string ring_name_;
  int64_t capacity_;
};

REGISTER_KERNEL_BUILDER(Name(kStallStampDatasetOp).Device(tensorflow::DEVICE_CPU), StallStampDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kStallRingReadOp).Device(tensorflow::DEVICE_CPU), StallRingReadOp);

}  // namespace
}  // namespace tfliquid
