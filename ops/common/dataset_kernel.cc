#include "common/dataset_kernel.h"

#include "absl/strings/str_cat.h"
#include "tensorflow/core/data/name_utils.h"

namespace tfliquid {

class ComputedDataset::Iterator : public DatasetIterator<ComputedDataset> {
 public:
  explicit Iterator(const Params& params) : DatasetIterator<ComputedDataset>(params) {}

  absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors, bool* end_of_sequence) override {
    tensorflow::mutex_lock lock(mu_);
    if (!computed_) {
      std::vector<Tensor> elements;
      TF_RETURN_IF_ERROR(dataset()->Compute(ctx, &elements));
      elements_ = std::move(elements);
      computed_ = true;
    }
    *end_of_sequence = next_ >= elements_.size();
    if (*end_of_sequence) return absl::OkStatus();
    out_tensors->push_back(elements_[next_]);
    if (!dataset()->save_elements_) elements_[next_] = Tensor();  // not kept once yielded: it may be large
    ++next_;
    return absl::OkStatus();
  }

 protected:
  std::shared_ptr<tensorflow::data::model::Node> CreateNode(IteratorContext*,
                                                            tensorflow::data::model::Node::Args args) const override {
    return tensorflow::data::model::MakeSourceNode(std::move(args));
  }

  absl::Status SaveInternal(SerializationContext*, IteratorStateWriter* writer) override {
    tensorflow::mutex_lock lock(mu_);
    TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "next", static_cast<int64_t>(next_)));
    const bool saved = computed_ && dataset()->save_elements_;
    TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "saved", static_cast<int64_t>(saved)));
    for (size_t i = 0; saved && i < elements_.size(); ++i) {
      TF_RETURN_IF_ERROR(writer->WriteTensor(prefix(), absl::StrCat("element_", i), elements_[i]));
    }
    return saved ? writer->WriteScalar(prefix(), "count", static_cast<int64_t>(elements_.size())) : absl::OkStatus();
  }

  // Without saved elements, a restored iterator computes them again when next read.
  absl::Status RestoreInternal(IteratorContext*, IteratorStateReader* reader) override {
    tensorflow::mutex_lock lock(mu_);
    int64_t next, saved, count = 0;
    TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "next", &next));
    TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "saved", &saved));
    if (saved) TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "count", &count));
    if (next < 0 || count < 0) return tensorflow::errors::DataLoss("negative position in checkpoint");
    elements_.assign(static_cast<size_t>(count), Tensor());
    for (int64_t i = 0; i < count; ++i) {
      TF_RETURN_IF_ERROR(reader->ReadTensor(prefix(), absl::StrCat("element_", i), &elements_[i]));
    }
    next_ = static_cast<size_t>(next);
    computed_ = saved != 0;
    return computed_ ? dataset()->Restored(elements_) : absl::OkStatus();
  }

 private:
  tensorflow::mutex mu_;
  bool computed_ TF_GUARDED_BY(mu_) = false;
  size_t next_ TF_GUARDED_BY(mu_) = 0;
  std::vector<Tensor> elements_ TF_GUARDED_BY(mu_);
};

std::string UnaryDataset::IteratorPrefix(const std::string& prefix) const {
  return tensorflow::data::name_utils::IteratorPrefix(type_, prefix);
}

ComputedDataset::ComputedDataset(OpKernelContext* ctx, std::string type, tensorflow::DataType dtype, bool save_elements)
    : DatasetBase(DatasetContext(ctx)),
      type_(std::move(type)),
      save_elements_(save_elements),
      dtypes_({dtype}),
      shapes_({PartialTensorShape({})}) {}

std::unique_ptr<IteratorBase> ComputedDataset::MakeIteratorInternal(const std::string& prefix) const {
  return std::make_unique<Iterator>(
      Iterator::Params{this, tensorflow::data::name_utils::IteratorPrefix(type_, prefix)});
}

}  // namespace tfliquid
