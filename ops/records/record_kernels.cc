// Kernels of the record ops: Liquid>RecordBytesDataset reads a record's bytes (or a prefix) in one throttled,
// cancellable read; Liquid>RecordDataset validates the bytes its input yields and emits the record's items.
// Apart, so that a cache (tfliquid/cache) can sit between them: a hit never reaches the read.
// Liquid>DeclaredCardinalityDataset gives a dataset of record files the cardinality its index or manifest counts.
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/dataset_kernel.h"
#include "common/input_checks.h"
#include "common/throttled_read.h"
#include "records/item_format.h"
#include "records/record.h"
#include "records/record_ops.h"

namespace tfliquid {
namespace {

using tensorflow::mutex;
using tensorflow::mutex_lock;
using tensorflow::errors::InvalidArgument;

// ---------------------------------------------------------------------------------------------------------------
// Liquid>RecordBytesDataset

class RecordBytesDatasetOp : public DatasetOpKernel {
 public:
  explicit RecordBytesDatasetOp(OpKernelConstruction* ctx) : DatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kReadQueueAttr, &read_queue_));
  }

  void MakeDataset(OpKernelContext* ctx, DatasetBase** output) override {
    const tstring* filename;
    int64_t length;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "filename", &filename));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "length", &length));
    OP_REQUIRES(ctx, length >= 0, InvalidArgument("length must be >= 0, got ", length));
    *output = new Dataset(ctx, std::string(*filename), length, read_queue_);
  }

 private:
  std::string read_queue_;

  class Dataset : public ComputedDataset {
   public:
    Dataset(OpKernelContext* ctx, std::string filename, int64_t length, std::string read_queue)
        : ComputedDataset(ctx, "RecordBytes", tensorflow::DT_STRING, /*save_elements=*/false),
          filename_(std::move(filename)),
          length_(length),
          read_queue_(std::move(read_queue)) {}

    absl::Status Compute(IteratorContext* ctx, std::vector<Tensor>* elements) const override {
      const auto length = static_cast<uint64_t>(length_);
      uint64_t file_size;
      TF_RETURN_IF_ERROR(FileSize(ctx->env(), filename_, &file_size));
      if (file_size < length) {  // checked before allocating: the index may be stale or corrupt
        return tensorflow::errors::DataLoss(filename_, ": offset ", file_size, ": file is ", file_size,
                                            " bytes but the index says the bytes to read end at ", length,
                                            " (truncated record or stale index?)");
      }
      Tensor bytes(ctx->allocator({}), tensorflow::DT_STRING, TensorShape({}));
      tstring& buffer = bytes.scalar<tstring>()();
      buffer.resize_uninitialized(length);
      TF_RETURN_IF_ERROR(ReadRange(ctx->env(), filename_, 0, length, buffer.data(), ctx->cancellation_manager(),
                                   read_queue_.empty() ? nullptr : &read_queue_));
      elements->push_back(std::move(bytes));
      return absl::OkStatus();
    }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      return AddDatasetNode(ctx, b, this, nullptr, {Attr(kReadQueueAttr, read_queue_)}, output, tstring(filename_),
                            length_);
    }

   private:
    const std::string filename_;
    const int64_t length_;
    const std::string read_queue_;
  };
};

// ---------------------------------------------------------------------------------------------------------------
// Liquid>RecordDataset

// Deterministic on every platform (std::shuffle's distribution is implementation-defined), so a checkpoint
// restored elsewhere resumes with the same order.
std::vector<uint32_t> Permutation(uint32_t n, bool shuffle, int64_t seed) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  uint64_t state = static_cast<uint64_t>(seed) ^ 0x9E3779B97F4A7C15ull;
  auto next = [&state]() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
  return order;
}

struct RecordSettings {
  bool shuffle = false;
  bool with_keys = false;
  bool with_context = false;
  bool with_cache_hits = false;
  std::string item_format_name;
  const records::ItemFormat* item_format = nullptr;
  int64_t item_channels = 0;
};

class RecordDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit RecordDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kShuffleAttr, &settings_.shuffle));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithKeysAttr, &settings_.with_keys));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithContextAttr, &settings_.with_context));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithCacheHitsAttr, &settings_.with_cache_hits));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kItemFormatAttr, &settings_.item_format_name));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kItemChannelsAttr, &settings_.item_channels));
    OP_REQUIRES_OK(ctx, records::FindItemFormat(settings_.item_format_name, &settings_.item_format));
    OP_REQUIRES(ctx, !settings_.item_format->pixels || settings_.item_channels > 0,
                InvalidArgument("item_format '", settings_.item_format_name, "' emits pixels: give item_channels"));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    const tstring* name;
    int64_t group, seed, header_crc;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "filename", &name));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "group", &group));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "seed", &seed));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "header_crc32c", &header_crc));
    OP_REQUIRES(ctx, group >= 1, InvalidArgument("group must be >= 1, got ", group));
    OP_REQUIRES(ctx, header_crc >= -1 && header_crc <= 0xFFFFFFFFll,
                InvalidArgument("header_crc32c must be a CRC32C or -1 (unchecked), got ", header_crc));
    const DataTypeVector expected = settings_.with_cache_hits
                                        ? DataTypeVector({tensorflow::DT_BOOL, tensorflow::DT_STRING})
                                        : DataTypeVector({tensorflow::DT_STRING});
    OP_REQUIRES(ctx, input->output_dtypes() == expected,
                InvalidArgument(kRecordDatasetOp, ": the input must yield ",
                                settings_.with_cache_hits ? "(bool hit, string bytes) pairs" : "string scalars",
                                ", got ", tensorflow::DataTypeVectorString(input->output_dtypes())));
    *output = new Dataset(ctx, input, std::string(*name), group, seed, header_crc, settings_);
  }

 private:
  class Dataset : public UnaryDataset {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string name, int64_t group, int64_t seed,
            int64_t header_crc, RecordSettings settings)
        : UnaryDataset(ctx, input, "Record"),
          name_(std::move(name)),
          group_(group),
          seed_(seed),
          header_crc_(header_crc),
          settings_(std::move(settings)) {
      // In the order tf.nest flattens {"cached", "context", "item", "key", "label"}.
      if (settings_.with_cache_hits) AddOutput(tensorflow::DT_BOOL, PartialTensorShape({}));
      if (settings_.with_context) AddOutput(tensorflow::DT_STRING, PartialTensorShape({}));
      AddOutput(settings_.item_format->dtype, settings_.item_format->Shape(settings_.item_channels));
      if (settings_.with_keys) AddOutput(tensorflow::DT_STRING, PartialTensorShape({}));
      AddOutput(tensorflow::DT_INT64, PartialTensorShape({}));
    }

    std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
      return std::make_unique<Iterator>(Iterator::Params{this, IteratorPrefix(prefix)});
    }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      const Attrs attrs = {Attr(kShuffleAttr, settings_.shuffle),
                           Attr(kWithKeysAttr, settings_.with_keys),
                           Attr(kWithContextAttr, settings_.with_context),
                           Attr(kWithCacheHitsAttr, settings_.with_cache_hits),
                           Attr(kItemFormatAttr, settings_.item_format_name),
                           Attr(kItemChannelsAttr, settings_.item_channels)};
      return AddDatasetNode(ctx, b, this, input_, attrs, output, tstring(name_), group_, seed_, header_crc_);
    }

   private:
    class Iterator : public DatasetIterator<Dataset> {
     public:
      explicit Iterator(const Params& params) : DatasetIterator<Dataset>(params) {}

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        mutex_lock lock(mu_);
        if (!loaded_) TF_RETURN_IF_ERROR(Load(ctx));
        if (next_ >= order_.size()) {
          *end_of_sequence = true;
          Release();
          return absl::OkStatus();
        }
        const Dataset& d = *dataset();
        const uint32_t i = order_[next_++];
        const records::RecordHeader& header = prefix_.header;
        if (d.settings_.with_cache_hits) {
          Tensor cached(ctx->allocator({}), tensorflow::DT_BOOL, TensorShape({}));
          cached.scalar<bool>()() = cached_;
          out_tensors->push_back(std::move(cached));
        }
        if (d.settings_.with_context) {
          Tensor context(ctx->allocator({}), tensorflow::DT_STRING, TensorShape({}));
          const std::string_view key = header.keys.empty() ? std::string_view() : std::string_view(header.keys[i]);
          context.scalar<tstring>()() =
              absl::StrCat(d.name_, ": image ", key, " at scan group ", std::min<int64_t>(d.group_, header.num_groups));
          out_tensors->push_back(std::move(context));
        }
        Tensor item;
        const absl::Status emitted = d.settings_.item_format->emit(
            prefix_, buffer_.scalar<tstring>()().data(), i, d.settings_.item_channels, ctx->allocator({}), &item);
        if (!emitted.ok()) return absl::Status(emitted.code(), absl::StrCat(d.name_, ": ", emitted.message()));
        out_tensors->push_back(std::move(item));
        if (d.settings_.with_keys) {
          Tensor key(ctx->allocator({}), tensorflow::DT_STRING, TensorShape({}));
          if (!header.keys.empty()) key.scalar<tstring>()() = tstring(header.keys[i].data(), header.keys[i].size());
          out_tensors->push_back(std::move(key));
        }
        Tensor label(ctx->allocator({}), tensorflow::DT_INT64, TensorShape({}));
        label.scalar<int64_t>()() = header.labels[i];
        out_tensors->push_back(std::move(label));
        *end_of_sequence = false;
        return absl::OkStatus();
      }

     protected:
      std::shared_ptr<tensorflow::data::model::Node> CreateNode(
          IteratorContext*, tensorflow::data::model::Node::Args args) const override {
        return tensorflow::data::model::MakeUnknownRatioNode(std::move(args));
      }

      absl::Status SaveInternal(SerializationContext*, IteratorStateWriter* writer) override {
        mutex_lock lock(mu_);
        return writer->WriteScalar(prefix(), "next", static_cast<int64_t>(next_));
      }

      // The record is not checkpointed: it is read again from a new input iterator at the next GetNext, and the
      // order is a function of the seed, so `next` is all the state there is.
      absl::Status RestoreInternal(IteratorContext*, IteratorStateReader* reader) override {
        mutex_lock lock(mu_);
        int64_t next;
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "next", &next));
        if (next < 0) return tensorflow::errors::DataLoss("negative position in checkpoint");
        next_ = static_cast<size_t>(next);
        Release();
        loaded_ = false;
        return absl::OkStatus();
      }

     private:
      // Takes the record from a new iterator of the input, which must yield exactly one element, and makes it the
      // record being emitted. The input is drained only once the record's CRCs are checked: draining lets a cache
      // in the input admit what it read, and damaged bytes must never be admitted.
      absl::Status Load(IteratorContext* ctx) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        std::unique_ptr<IteratorBase> input;
        TF_RETURN_IF_ERROR(d.input_->MakeIterator(ctx, this, prefix(), &input));
        std::vector<Tensor> element, extra;
        bool end;
        TF_RETURN_IF_ERROR(input->GetNext(ctx, &element, &end));
        if (end) return tensorflow::errors::DataLoss(d.name_, ": the record's source yielded nothing");
        const Tensor& bytes = element.back();
        if (bytes.dims() != 0) return InvalidArgument(d.name_, ": a record's bytes must be a scalar string");
        cached_ = d.settings_.with_cache_hits && element.front().scalar<bool>()();
        const tstring& data = bytes.scalar<tstring>()();
        std::string error;
        const auto group = static_cast<uint32_t>(std::min<int64_t>(d.group_, records::kMaxGroups));
        if (!records::ParseRecordPrefix(data.data(), data.size(), group, &prefix_, &error, d.header_crc_)) {
          Release();
          return tensorflow::errors::DataLoss(d.name_, ": ", error);
        }
        TF_RETURN_IF_ERROR(input->GetNext(ctx, &extra, &end));
        if (!end) {
          Release();
          return InvalidArgument(d.name_, ": a record's source must yield one element, got more");
        }
        if (next_ > prefix_.num_items()) {
          Release();
          return tensorflow::errors::DataLoss(d.name_, ": checkpoint position ", next_, " is past the ",
                                              prefix_.num_items(), " items of the record");
        }
        buffer_ = bytes;
        order_ = Permutation(prefix_.num_items(), d.settings_.shuffle, d.seed_);
        loaded_ = true;
        return absl::OkStatus();
      }

      // Frees the record; an iterator at its end stays there.
      void Release() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        buffer_ = Tensor();
        prefix_ = records::RecordPrefix();
        order_.clear();
      }

      mutex mu_;
      bool loaded_ TF_GUARDED_BY(mu_) = false;
      bool cached_ TF_GUARDED_BY(mu_) = false;  // the record being emitted was a cache hit
      size_t next_ TF_GUARDED_BY(mu_) = 0;
      Tensor buffer_ TF_GUARDED_BY(mu_);  // the record's bytes: a scalar string, shared with a cache
      records::RecordPrefix prefix_ TF_GUARDED_BY(mu_);
      std::vector<uint32_t> order_ TF_GUARDED_BY(mu_);
    };

    const std::string name_;
    const int64_t group_;
    const int64_t seed_;
    const int64_t header_crc_;  // -1: unchecked
    const RecordSettings settings_;
  };

  RecordSettings settings_;
};

// ---------------------------------------------------------------------------------------------------------------
// Liquid>DeclaredCardinalityDataset

class DeclaredCardinalityDatasetOp : public UnaryDatasetOpKernel {
 public:
  using UnaryDatasetOpKernel::UnaryDatasetOpKernel;

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    int64_t cardinality;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "cardinality", &cardinality));
    OP_REQUIRES(ctx, cardinality >= 0 || cardinality == tensorflow::data::kInfiniteCardinality,
                InvalidArgument("cardinality must be >= 0 or -1 (infinite), got ", cardinality));
    *output = new Dataset(ctx, input, cardinality);
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, int64_t cardinality)
        : ForwardingDataset(ctx, input, "DeclaredCardinality"), cardinality_(cardinality) {
      AddInputOutputs();
    }

    int64_t CardinalityInternal(tensorflow::data::CardinalityOptions) const override { return cardinality_; }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      return AddDatasetNode(ctx, b, this, input_, {}, output, cardinality_);
    }

   private:
    const int64_t cardinality_;
  };
};

REGISTER_KERNEL_BUILDER(Name(kRecordBytesDatasetOp).Device(tensorflow::DEVICE_CPU), RecordBytesDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kRecordDatasetOp).Device(tensorflow::DEVICE_CPU), RecordDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kDeclaredCardinalityDatasetOp).Device(tensorflow::DEVICE_CPU),
                        DeclaredCardinalityDatasetOp);

}  // namespace
}  // namespace tfliquid
