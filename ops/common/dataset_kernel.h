// What tfliquid's dataset kernels share: tf.data's names, a base for datasets of one input dataset (and one for those
// that yield an element per input element), and a base for source datasets whose elements are computed when first
// read.
#ifndef TFLIQUID_OPS_COMMON_DATASET_KERNEL_H_
#define TFLIQUID_OPS_COMMON_DATASET_KERNEL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/kernel.h"
#include "tensorflow/core/framework/attr_value_util.h"
#include "tensorflow/core/framework/dataset.h"
#include "tensorflow/core/framework/model.h"

namespace tfliquid {

using tensorflow::DataTypeVector;
using tensorflow::Node;
using tensorflow::PartialTensorShape;
using tensorflow::data::DatasetBase;
using tensorflow::data::DatasetContext;
using tensorflow::data::DatasetIterator;
using tensorflow::data::DatasetOpKernel;
using tensorflow::data::IteratorBase;
using tensorflow::data::IteratorContext;
using tensorflow::data::IteratorStateReader;
using tensorflow::data::IteratorStateWriter;
using tensorflow::data::SerializationContext;
using tensorflow::data::UnaryDatasetOpKernel;

using Attrs = std::vector<std::pair<absl::string_view, tensorflow::AttrValue>>;

// The attribute `name` = `value` of a dataset's node, as AsGraphDefInternal writes it.
template <typename T>
std::pair<absl::string_view, tensorflow::AttrValue> Attr(absl::string_view name, const T& value) {
  tensorflow::AttrValue attr;
  tensorflow::SetAttrValue(value, &attr);
  return {name, std::move(attr)};
}

// Writes `dataset` as its op's node (DatasetBase::AsGraphDefInternal): its input dataset when it has one, then a
// constant for each of `scalars` (the op's other inputs, in order), then `attrs`.
template <typename... Scalars>
absl::Status AddDatasetNode(SerializationContext* ctx, DatasetBase::DatasetGraphDefBuilder* b,
                            const DatasetBase* dataset, const DatasetBase* input, const Attrs& attrs, Node** output,
                            const Scalars&... scalars) {
  std::vector<Node*> inputs;
  if (input != nullptr) {
    inputs.emplace_back();
    TF_RETURN_IF_ERROR(b->AddInputDataset(ctx, input, &inputs.back()));
  }
  absl::Status status;
  const auto add = [&](const auto& scalar) {
    if (!status.ok()) return;
    inputs.emplace_back();
    status = b->AddScalar(scalar, &inputs.back());
  };
  (add(scalars), ...);
  TF_RETURN_IF_ERROR(status);
  return b->AddDataset(dataset, inputs, attrs, output);
}

// A dataset of one input dataset, which it holds a reference to and whose external state is its own. `type`
// names it in debug strings and its iterators' prefixes; its elements' components are declared by AddOutput.
class UnaryDataset : public DatasetBase {
 public:
  UnaryDataset(OpKernelContext* ctx, const DatasetBase* input, std::string type)
      : DatasetBase(DatasetContext(ctx)), input_(input), type_(std::move(type)) {
    input_->Ref();
  }
  ~UnaryDataset() override { input_->Unref(); }

  const DataTypeVector& output_dtypes() const override { return dtypes_; }
  const std::vector<PartialTensorShape>& output_shapes() const override { return shapes_; }
  std::string DebugString() const override { return type_ + "DatasetOp::Dataset"; }
  absl::Status InputDatasets(std::vector<const DatasetBase*>* inputs) const override {
    inputs->push_back(input_);
    return absl::OkStatus();
  }
  absl::Status CheckExternalState() const override { return input_->CheckExternalState(); }

 protected:
  // The next component of its elements.
  void AddOutput(tensorflow::DataType dtype, PartialTensorShape shape) {
    dtypes_.push_back(dtype);
    shapes_.push_back(std::move(shape));
  }
  // The input's components, next.
  void AddInputOutputs() {
    for (size_t i = 0; i < input_->output_dtypes().size(); ++i) {
      AddOutput(input_->output_dtypes()[i], input_->output_shapes()[i]);
    }
  }
  // The prefix of its iterator, under its parent's `prefix`.
  std::string IteratorPrefix(const std::string& prefix) const;

  const DatasetBase* const input_;

 private:
  const std::string type_;
  DataTypeVector dtypes_;
  std::vector<PartialTensorShape> shapes_;
};

// A UnaryDataset with an element for each of its input's (so as many), made by `Self::Iterator`: this class's
// Iterator, which yields the input's elements unchanged, or Self's own, usually derived from it (public, so that this
// class can make it). Self derives from ForwardingDataset<Self>.
template <typename Self>
class ForwardingDataset : public UnaryDataset {
 public:
  using UnaryDataset::UnaryDataset;

  std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
    using SelfIterator = typename Self::Iterator;
    return std::make_unique<SelfIterator>(
        typename SelfIterator::Params{static_cast<const Self*>(this), IteratorPrefix(prefix)});
  }
  int64_t CardinalityInternal(tensorflow::data::CardinalityOptions options) const override {
    return input_->Cardinality(options);
  }

  // Makes the input's iterator when initialized, yields its elements, and saves and restores it. An iterator that
  // does more derives from it and overrides a method, calling this one's in it (its own state saved and restored
  // before the input's, under its prefix).
  class Iterator : public DatasetIterator<Self> {
   public:
    explicit Iterator(const typename DatasetIterator<Self>::Params& params) : DatasetIterator<Self>(params) {}

    absl::Status Initialize(IteratorContext* ctx) override {
      return this->dataset()->input_->MakeIterator(ctx, this, this->prefix(), &input_impl_);
    }
    absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                 bool* end_of_sequence) override {
      return input_impl_->GetNext(ctx, out_tensors, end_of_sequence);
    }

   protected:
    std::shared_ptr<tensorflow::data::model::Node> CreateNode(IteratorContext*,
                                                              tensorflow::data::model::Node::Args args) const override {
      return tensorflow::data::model::MakeKnownRatioNode(std::move(args), /*ratio=*/1);
    }
    absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
      return this->SaveInput(ctx, writer, input_impl_);
    }
    absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
      return this->RestoreInput(ctx, reader, input_impl_);
    }

   private:
    std::unique_ptr<IteratorBase> input_impl_;
  };
};

// A source dataset of scalars computed when it is first read (a file's bytes, a variable's value, a cache's pass).
// Its iterator saves its position and, with `save_elements`, the elements themselves, so that a restored iterator
// yields what the first one computed (small values only: a pass id, planned items).
class ComputedDataset : public DatasetBase {
 public:
  ComputedDataset(OpKernelContext* ctx, std::string type, tensorflow::DataType dtype, bool save_elements);

  // The elements, each a scalar of the dataset's dtype; errors end the iteration as errors.
  virtual absl::Status Compute(IteratorContext* ctx, std::vector<Tensor>* elements) const = 0;
  // Called when an iterator is restored with saved elements (computed by the process that saved them, maybe
  // another), so that state kept beside them outside the checkpoint (a cache's pass) can be set up again.
  virtual absl::Status Restored(const std::vector<Tensor>& elements) const { return absl::OkStatus(); }

  std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override;
  const DataTypeVector& output_dtypes() const override { return dtypes_; }
  const std::vector<PartialTensorShape>& output_shapes() const override { return shapes_; }
  std::string DebugString() const override { return type_ + "DatasetOp::Dataset"; }
  absl::Status InputDatasets(std::vector<const DatasetBase*>*) const override { return absl::OkStatus(); }
  absl::Status CheckExternalState() const override { return absl::OkStatus(); }

 private:
  class Iterator;

  const std::string type_;
  const bool save_elements_;
  const DataTypeVector dtypes_;
  const std::vector<PartialTensorShape> shapes_;
};

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_DATASET_KERNEL_H_
