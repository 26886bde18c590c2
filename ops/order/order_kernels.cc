// Kernels of Liquid>SeededOrderKeys (a worker's slice of one epoch of the seeded order), of
// Liquid>IterationDataset and Liquid>SeededShuffleDataset (a shuffle per iteration that checkpoints replay), and of
// Liquid>UnsplittableDataset (a pass that tf.data service must not shard dynamically).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/dataset_kernel.h"
#include "common/input_checks.h"
#include "common/kernel.h"
#include "order/order_ops.h"
#include "order/seeded_order.h"

namespace tfliquid {
namespace {

using tensorflow::mutex;
using tensorflow::mutex_lock;

class SeededOrderKeysOp : public OpKernel {
 public:
  explicit SeededOrderKeysOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string text;
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kOrderAttr, &text));
    OP_REQUIRES_OK(ctx, order::SeededOrder::Parse(text, &order_));
  }

  void Compute(OpKernelContext* ctx) override {
    int64_t epoch;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "epoch", &epoch));
    OP_REQUIRES(ctx, epoch >= 0, tensorflow::errors::InvalidArgument("epoch must be >= 0, got ", epoch));
    const uint64_t start = order_.SliceStart(order_.worker_index());
    const auto length = static_cast<int64_t>(order_.slice_length());
    Tensor* keys;
    OP_REQUIRES_OK(ctx, AllocateOutput(ctx, 0, {length}, &keys));
    auto values = keys->vec<int64_t>();
    for (int64_t i = 0; i < length; ++i) {
      values(i) = static_cast<int64_t>(order_.ItemAt(static_cast<uint64_t>(epoch), start + static_cast<uint64_t>(i)));
    }
  }

 private:
  order::SeededOrder order_;
};

class UnsplittableDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit UnsplittableDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kReasonAttr, &reason_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    *output = new Dataset(ctx, input, reason_);
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string reason)
        : ForwardingDataset(ctx, input, "Unsplittable"), reason_(std::move(reason)) {
      AddInputOutputs();
    }

    absl::Status MakeSplitProviders(std::vector<std::unique_ptr<tensorflow::data::SplitProvider>>*) const override {
      return tensorflow::errors::FailedPrecondition(reason_);
    }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      return AddDatasetNode(ctx, b, this, input_, {Attr(kReasonAttr, reason_)}, output);
    }

   private:
    const std::string reason_;
  };

  std::string reason_;
};

// The iterations of the datasets that share an `iterations` name, process-wide: made in order, so that the n-th
// iteration of a pipeline (a repeat's, or Keras' n-th epoch's iterator) is numbered n wherever tf.data rebuilt its
// datasets (a graph rewrite, a restore). A few bytes per name, kept for the process's life.
struct Iterations {
  mutex mu;
  int64_t next TF_GUARDED_BY(mu) = 0;     // the number of the next iteration made
  int64_t current TF_GUARDED_BY(mu) = 0;  // the iteration whose iterators are being made
};

Iterations& IterationsNamed(const std::string& name) {
  static mutex* registry_mu = new mutex;
  static auto* registry = new std::map<std::string, std::unique_ptr<Iterations>>;  // never destroyed
  mutex_lock lock(*registry_mu);
  std::unique_ptr<Iterations>& iterations = (*registry)[name];
  if (iterations == nullptr) iterations = std::make_unique<Iterations>();
  return *iterations;
}

class IterationDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit IterationDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kIterationsAttr, &name_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    *output = new Dataset(ctx, input, name_);
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string name)
        : ForwardingDataset(ctx, input, "Iteration"), name_(std::move(name)), iterations_(IterationsNamed(name_)) {
      AddInputOutputs();
    }

    class Iterator : public ForwardingDataset::Iterator {
     public:
      using ForwardingDataset::Iterator::Iterator;

      // Numbers this iteration, then makes the input's iterators, which read the number.
      absl::Status Initialize(IteratorContext* ctx) override {
        Iterations& iterations = dataset()->iterations_;
        {
          mutex_lock lock(iterations.mu);
          iteration_ = iterations.next++;
          iterations.current = iteration_;
        }
        return ForwardingDataset::Iterator::Initialize(ctx);
      }

     protected:
      absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
        TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "iteration", iteration_));
        return ForwardingDataset::Iterator::SaveInternal(ctx, writer);
      }
      // The input's iterators restore their own number; the iteration after this one is numbered next.
      absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "iteration", &iteration_));
        if (iteration_ < 0) return tensorflow::errors::DataLoss("negative iteration in checkpoint");
        Iterations& iterations = dataset()->iterations_;
        {
          mutex_lock lock(iterations.mu);
          iterations.current = iteration_;
          iterations.next = iteration_ + 1;
        }
        return ForwardingDataset::Iterator::RestoreInternal(ctx, reader);
      }

     private:
      int64_t iteration_ = 0;
    };

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      return AddDatasetNode(ctx, b, this, input_, {Attr(kIterationsAttr, name_)}, output);
    }

   private:
    const std::string name_;
    Iterations& iterations_;
  };

  std::string name_;
};

class SeededShuffleDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit SeededShuffleDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kIterationsAttr, &name_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kSeedAttr, &seed_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    const DataTypeVector& dtypes = input->output_dtypes();
    OP_REQUIRES(ctx,
                dtypes.size() == 1 && dtypes[0] == tensorflow::DT_INT64 &&
                    input->output_shapes()[0].IsCompatibleWith(PartialTensorShape({})),
                tensorflow::errors::InvalidArgument(kSeededShuffleDatasetOp, " shuffles int64 scalars, got ",
                                                    tensorflow::DataTypeVectorString(dtypes)));
    *output = new Dataset(ctx, input, name_, seed_);
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string name, int64_t seed)
        : ForwardingDataset(ctx, input, "SeededShuffle"),
          name_(std::move(name)),
          seed_(seed),
          iterations_(IterationsNamed(name_)) {
      AddOutput(tensorflow::DT_INT64, PartialTensorShape({}));
      AddOutput(tensorflow::DT_INT64, PartialTensorShape({}));
    }

    // Reads the whole input at its first element, then yields it in this iteration's order.
    class Iterator : public DatasetIterator<Dataset> {
     public:
      explicit Iterator(const Params& params) : DatasetIterator<Dataset>(params) {}

      absl::Status Initialize(IteratorContext* ctx) override {
        Iterations& iterations = dataset()->iterations_;
        {
          mutex_lock lock(iterations.mu);
          iteration_ = iterations.current;
        }
        return dataset()->input_->MakeIterator(ctx, this, prefix(), &input_impl_);
      }

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        mutex_lock lock(mu_);
        if (input_impl_ != nullptr) TF_RETURN_IF_ERROR(ReadInput(ctx));
        *end_of_sequence = next_ >= elements_.size();
        if (*end_of_sequence) return absl::OkStatus();
        const uint64_t epoch = static_cast<uint64_t>(iteration_);
        const int64_t element = elements_[order_.ItemAt(epoch, next_++)];
        const uint64_t seed = order::SplitMix(order::SplitMix(static_cast<uint64_t>(dataset()->seed_) ^ epoch) ^
                                              static_cast<uint64_t>(element));
        for (const int64_t value : {element, static_cast<int64_t>(seed >> 1)}) {
          out_tensors->emplace_back(ctx->allocator({}), tensorflow::DT_INT64, TensorShape({}));
          out_tensors->back().scalar<int64_t>()() = value;
        }
        return absl::OkStatus();
      }

     protected:
      std::shared_ptr<tensorflow::data::model::Node> CreateNode(
          IteratorContext*, tensorflow::data::model::Node::Args args) const override {
        return tensorflow::data::model::MakeUnknownRatioNode(std::move(args));
      }
      absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
        mutex_lock lock(mu_);
        TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "iteration", iteration_));
        TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "read", static_cast<int64_t>(input_impl_ == nullptr)));
        if (input_impl_ != nullptr) return SaveInput(ctx, writer, input_impl_);
        Tensor elements(tensorflow::DT_INT64, TensorShape({static_cast<int64_t>(elements_.size())}));
        std::copy(elements_.begin(), elements_.end(), elements.vec<int64_t>().data());
        TF_RETURN_IF_ERROR(writer->WriteTensor(prefix(), "elements", elements));
        return writer->WriteScalar(prefix(), "next", static_cast<int64_t>(next_));
      }
      absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
        mutex_lock lock(mu_);
        int64_t read, next = 0;
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "iteration", &iteration_));
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "read", &read));
        elements_.clear();
        next_ = 0;
        if (!read) return RestoreInput(ctx, reader, input_impl_);
        Tensor elements;
        TF_RETURN_IF_ERROR(reader->ReadTensor(prefix(), "elements", &elements));
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "next", &next));
        if (iteration_ < 0 || elements.dtype() != tensorflow::DT_INT64 || elements.dims() != 1 || next < 0 ||
            next > elements.NumElements()) {
          return tensorflow::errors::DataLoss(kSeededShuffleDatasetOp, ": inconsistent checkpoint");
        }
        const auto values = elements.vec<int64_t>();
        elements_.assign(values.data(), values.data() + values.size());
        next_ = static_cast<uint64_t>(next);
        input_impl_.reset();
        return MakeOrder();
      }

     private:
      // Reads every element of the input, which then ends.
      absl::Status ReadInput(IteratorContext* ctx) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (bool end = false; !end;) {
          std::vector<Tensor> element;
          TF_RETURN_IF_ERROR(input_impl_->GetNext(ctx, &element, &end));
          if (!end) elements_.push_back(element[0].scalar<int64_t>()());
        }
        input_impl_.reset();
        return MakeOrder();
      }

      absl::Status MakeOrder() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (elements_.empty()) return absl::OkStatus();
        return order::SeededOrder::Make(elements_.size(), static_cast<uint64_t>(dataset()->seed_), 1, 0, &order_);
      }

      mutex mu_;
      int64_t iteration_ = 0;
      std::unique_ptr<IteratorBase> input_impl_ TF_GUARDED_BY(mu_);
      std::vector<int64_t> elements_ TF_GUARDED_BY(mu_);  // the input's, once read
      uint64_t next_ TF_GUARDED_BY(mu_) = 0;
      order::SeededOrder order_ TF_GUARDED_BY(mu_);  // a permutation of the elements' indices, per iteration
    };

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      return AddDatasetNode(ctx, b, this, input_, {Attr(kIterationsAttr, name_), Attr(kSeedAttr, seed_)}, output);
    }

   private:
    const std::string name_;
    const int64_t seed_;
    Iterations& iterations_;
  };

  std::string name_;
  int64_t seed_;
};

REGISTER_KERNEL_BUILDER(Name(kIterationDatasetOp).Device(tensorflow::DEVICE_CPU), IterationDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kSeededShuffleDatasetOp).Device(tensorflow::DEVICE_CPU), SeededShuffleDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kSeededOrderKeysOp).Device(tensorflow::DEVICE_CPU), SeededOrderKeysOp);
REGISTER_KERNEL_BUILDER(Name(kUnsplittableDatasetOp).Device(tensorflow::DEVICE_CPU), UnsplittableDatasetOp);

}  // namespace
}  // namespace tfliquid
