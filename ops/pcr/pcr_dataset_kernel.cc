// Liquid>PCRRecordDataset: a source dataset over ONE record file. It reads the record's prefix up to the
// requested scan group with one read, validates it (ops/pcr/record.h) and emits every image as a progressive
// JPEG cut at that scan group (a record of whole items: each item as stored), with its (key and) label. Python
// interleaves one of these per record (tfliquid/data/pcr_dataset.py); the scan group is an input so that a tf.Variable
// read in the interleave function applies from the next record opened. With a MinIO cache (cache_* attributes), the
// prefix is looked up there first and offered to it after a read.
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/cache_attrs.h"
#include "common/input_checks.h"
#include "common/throttled_read.h"
#include "liquid/raw_item.h"
#include "pcr/pcr_ops.h"
#include "pcr/record.h"
#include "pcr/scan_group_variable.h"
#include "tensorflow/core/data/name_utils.h"
#include "tensorflow/core/framework/dataset.h"
#include "tensorflow/core/framework/model.h"
#include "tensorflow/core/framework/tensor.h"

namespace tfliquid {
namespace {

using tensorflow::DataTypeVector;
using tensorflow::mutex;
using tensorflow::mutex_lock;
using tensorflow::Node;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::PartialTensorShape;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::tstring;
using tensorflow::data::DatasetBase;
using tensorflow::data::DatasetContext;
using tensorflow::data::DatasetIterator;
using tensorflow::data::DatasetOpKernel;
using tensorflow::data::IteratorBase;
using tensorflow::data::IteratorContext;
using tensorflow::data::IteratorStateReader;
using tensorflow::data::IteratorStateWriter;
using tensorflow::data::SerializationContext;
using tensorflow::data::model::MakeSourceNode;
using tensorflow::errors::InvalidArgument;

constexpr char kDatasetType[] = "PCRRecord";

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

// Output dtypes in the order tf.nest flattens {"cached", "image", "key", "label"}.
DataTypeVector OutputDtypes(bool with_keys, bool with_cache_hits, bool raw_items) {
  DataTypeVector dtypes;
  if (with_cache_hits) dtypes.push_back(tensorflow::DT_BOOL);
  dtypes.push_back(raw_items ? tensorflow::DT_UINT8 : tensorflow::DT_STRING);
  if (with_keys) dtypes.push_back(tensorflow::DT_STRING);
  dtypes.push_back(tensorflow::DT_INT64);
  return dtypes;
}

// Output shapes, in the same order: scalars, but the pixels of raw items, [H, W, C].
std::vector<PartialTensorShape> OutputShapes(size_t num_outputs, bool with_cache_hits, int64_t raw_item_channels) {
  std::vector<PartialTensorShape> shapes(num_outputs, PartialTensorShape({}));
  if (raw_item_channels > 0) shapes[with_cache_hits ? 1 : 0] = PartialTensorShape({-1, -1, raw_item_channels});
  return shapes;
}

// Inputs: filename, prefix_ends, scan_group, then 0 or 1 variable handles, then seed, cache_pass and item.
constexpr int kVariableInput = 3;
constexpr int kInputsWithoutVariable = 6;

class PCRRecordDatasetOp : public DatasetOpKernel {
 public:
  explicit PCRRecordDatasetOp(OpKernelConstruction* ctx) : DatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kShuffleAttr, &shuffle_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithKeysAttr, &with_keys_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithCacheHitsAttr, &with_cache_hits_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kRawItemChannelsAttr, &raw_item_channels_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kScanGroupVariableTokenAttr, &variable_token_));
    OP_REQUIRES_OK(ctx, cache::ConfigFromAttrs(ctx, &cache_config_));
  }

  void MakeDataset(OpKernelContext* ctx, DatasetBase** output) override {
    const tstring* filename;
    const Tensor* prefix_ends;
    int64_t scan_group, seed, cache_pass, item;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "filename", &filename));
    OP_REQUIRES_OK(ctx, InputWithRank(ctx, "prefix_ends", 1, &prefix_ends));
    OP_REQUIRES(ctx, prefix_ends->NumElements() >= 1, InvalidArgument("prefix_ends must be a non-empty vector"));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "scan_group", &scan_group));
    if (ctx->num_inputs() > kInputsWithoutVariable) {  // a scan group variable: its value now, checked
      OP_REQUIRES_OK(
          ctx, ReadScanGroupVariable(ctx, kVariableInput, variable_token_, prefix_ends->NumElements(), &scan_group));
    }
    OP_REQUIRES(ctx, scan_group >= 1, InvalidArgument("scan_group must be >= 1, got ", scan_group));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "seed", &seed));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "cache_pass", &cache_pass));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "item", &item));
    OP_REQUIRES(ctx, item >= -1, InvalidArgument("item must be >= 0, or -1 for none, got ", item));
    const auto ends = prefix_ends->vec<int64_t>();
    *output = new Dataset(ctx, std::string(*filename), std::vector<int64_t>(ends.data(), ends.data() + ends.size()),
                          scan_group, seed, shuffle_, with_keys_, with_cache_hits_, raw_item_channels_, cache_config_,
                          cache_pass, item);
  }

 private:
  class Dataset : public DatasetBase {
   public:
    Dataset(OpKernelContext* ctx, std::string filename, std::vector<int64_t> prefix_ends, int64_t scan_group,
            int64_t seed, bool shuffle, bool with_keys, bool with_cache_hits, int64_t raw_item_channels,
            cache::Config cache_config, int64_t cache_pass, int64_t item)
        : DatasetBase(DatasetContext(ctx)),
          filename_(std::move(filename)),
          prefix_ends_(std::move(prefix_ends)),
          scan_group_(scan_group),
          seed_(seed),
          shuffle_(shuffle),
          with_keys_(with_keys),
          with_cache_hits_(with_cache_hits),
          raw_item_channels_(raw_item_channels),
          cache_config_(std::move(cache_config)),
          cache_pass_(cache_pass),
          item_(item),
          dtypes_(OutputDtypes(with_keys, with_cache_hits, raw_item_channels > 0)),
          shapes_(OutputShapes(dtypes_.size(), with_cache_hits, raw_item_channels)) {}

    std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
      return std::make_unique<Iterator>(
          Iterator::Params{this, tensorflow::data::name_utils::IteratorPrefix(kDatasetType, prefix)});
    }

    const DataTypeVector& output_dtypes() const override { return dtypes_; }
    const std::vector<PartialTensorShape>& output_shapes() const override { return shapes_; }

    std::string DebugString() const override { return "PCRRecordDatasetOp::Dataset(" + filename_ + ")"; }

    absl::Status InputDatasets(std::vector<const DatasetBase*>*) const override { return absl::OkStatus(); }
    absl::Status CheckExternalState() const override { return absl::OkStatus(); }

    // The read length for the requested fidelity: records with fewer groups are read whole.
    uint64_t PrefixLength() const {
      const size_t groups = std::min<size_t>(static_cast<size_t>(scan_group_), prefix_ends_.size());
      return static_cast<uint64_t>(prefix_ends_[groups - 1]);
    }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      Node *filename, *prefix_ends, *scan_group, *seed, *cache_pass, *item;
      TF_RETURN_IF_ERROR(b->AddScalar(tstring(filename_), &filename));
      TF_RETURN_IF_ERROR(b->AddVector(prefix_ends_, &prefix_ends));
      TF_RETURN_IF_ERROR(b->AddScalar(scan_group_, &scan_group));
      TF_RETURN_IF_ERROR(b->AddScalar(seed_, &seed));
      TF_RETURN_IF_ERROR(b->AddScalar(cache_pass_, &cache_pass));
      TF_RETURN_IF_ERROR(b->AddScalar(item_, &item));
      tensorflow::AttrValue num_variables, shuffle, with_keys, with_cache_hits, raw_item_channels;
      b->BuildAttrValue(0, &num_variables);  // the scan group read from a variable, if any, is saved as a value
      b->BuildAttrValue(shuffle_, &shuffle);
      b->BuildAttrValue(with_keys_, &with_keys);
      b->BuildAttrValue(with_cache_hits_, &with_cache_hits);
      b->BuildAttrValue(raw_item_channels_, &raw_item_channels);
      std::vector<std::pair<absl::string_view, tensorflow::AttrValue>> attrs = {
          {kNumScanGroupVariablesAttr, num_variables},
          {kShuffleAttr, shuffle},
          {kWithKeysAttr, with_keys},
          {kWithCacheHitsAttr, with_cache_hits},
          {kRawItemChannelsAttr, raw_item_channels}};
      cache::AppendAttrs(cache_config_, &attrs);
      return b->AddDataset(this,
                           {{0, filename}, {1, prefix_ends}, {2, scan_group}, {4, seed}, {5, cache_pass}, {6, item}},
                           {{kVariableInput, {}}}, attrs, output);
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
        const uint32_t i = order_[next_++];
        const pcr::RecordHeader& header = prefix_.header;
        if (dataset()->with_cache_hits_) {
          Tensor cached(ctx->allocator({}), tensorflow::DT_BOOL, TensorShape({}));
          cached.scalar<bool>()() = from_cache_;
          out_tensors->push_back(std::move(cached));
        }
        if (dataset()->raw_item_channels_ > 0) {
          Tensor pixels;
          TF_RETURN_IF_ERROR(RawPixels(ctx, i, &pixels));
          out_tensors->push_back(std::move(pixels));
        } else {
          Tensor jpeg(ctx->allocator({}), tensorflow::DT_STRING, TensorShape({}));
          tstring& bytes = jpeg.scalar<tstring>()();
          bytes.resize_uninitialized(prefix_.ImageSize(i));
          prefix_.AssembleImage(buffer_.scalar<tstring>()().data(), i, bytes.data());
          out_tensors->push_back(std::move(jpeg));
        }
        if (dataset()->with_keys_) {
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
          IteratorContext* ctx, tensorflow::data::model::Node::Args args) const override {
        return MakeSourceNode(std::move(args));
      }

      absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
        mutex_lock lock(mu_);
        return writer->WriteScalar(prefix(), "next", static_cast<int64_t>(next_));
      }

      // The buffer is not checkpointed: it is re-read on the next GetNext, and the order is a function of the
      // seed, so `next` is all the state there is.
      absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
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
      absl::Status Load(IteratorContext* ctx) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        const uint32_t scan_group = static_cast<uint32_t>(std::min<int64_t>(d.scan_group_, pcr::kMaxScanGroups));
        std::shared_ptr<cache::Cache> cache;
        std::string cache_key;
        if (!d.cache_config_.name.empty()) {
          TF_RETURN_IF_ERROR(cache::Cache::Get(d.cache_config_, &cache));
          // "pcr-prefix:" is a prefix no minio_cache key has (they are "DTYPE:VALUE"), so a cache shared with a
          // minio_cache pipeline never hands either one the other's items (docs/formats/cache.md, Keys).
          cache_key = "pcr-prefix:" + d.filename_ + "#group=" + std::to_string(scan_group) +
                      "#bytes=" + std::to_string(d.PrefixLength());
          // The record's item in a seeded order, for the clairvoyant policy (policy.cc, ItemOf).
          if (d.item_ >= 0) cache_key += "#item=" + std::to_string(d.item_);
          std::vector<Tensor> cached;
          bool hit;
          TF_RETURN_IF_ERROR(cache->Lookup(cache_key, d.cache_pass_, &cached, &hit));
          // A cached prefix went through ParsePrefix before it was admitted; parsing it again is cheap.
          if (hit && cached.size() == 1 && cached[0].dtype() == tensorflow::DT_STRING && cached[0].dims() == 0 &&
              ParsePrefix(cached[0], scan_group).ok()) {
            from_cache_ = true;
            return absl::OkStatus();
          }
        }
        from_cache_ = false;
        TF_RETURN_IF_ERROR(ReadPrefix(ctx));
        TF_RETURN_IF_ERROR(ParsePrefix(buffer_, scan_group));
        if (cache) {
          bool admitted;
          TF_RETURN_IF_ERROR(cache->Insert(cache_key, d.cache_pass_, {buffer_}, /*prefetched=*/false, &admitted));
        }
        return absl::OkStatus();
      }

      absl::Status ReadPrefix(IteratorContext* ctx) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        const uint64_t length = d.PrefixLength();
        uint64_t file_size;
        TF_RETURN_IF_ERROR(FileSize(ctx->env(), d.filename_, &file_size));
        if (file_size < length) {  // checked before allocating: the index may be stale or corrupt
          return tensorflow::errors::DataLoss(d.filename_, ": offset ", file_size, ": file is ", file_size,
                                              " bytes but the index says scan group ", d.scan_group_, " ends at ",
                                              length, " (truncated record or stale index?)");
        }
        buffer_ = Tensor(ctx->allocator({}), tensorflow::DT_STRING, TensorShape({}));
        tstring& bytes = buffer_.scalar<tstring>()();
        bytes.resize_uninitialized(length);
        return ReadRange(ctx->env(), d.filename_, 0, length, bytes.data(), ctx->cancellation_manager());
      }

      // Validates `prefix` (a scalar string) and makes it the record being emitted.
      absl::Status ParsePrefix(const Tensor& prefix, uint32_t scan_group) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        const tstring& bytes = prefix.scalar<tstring>()();
        std::string error;
        if (!pcr::ParseRecordPrefix(bytes.data(), bytes.size(), scan_group, &prefix_, &error)) {
          Release();
          return tensorflow::errors::DataLoss(d.filename_, ": ", error);
        }
        if (next_ > prefix_.num_images()) {
          Release();
          return tensorflow::errors::DataLoss(d.filename_, ": checkpoint position ", next_, " is past the ",
                                              prefix_.num_images(), " images of the record");
        }
        buffer_ = prefix;
        order_ = Permutation(prefix_.num_images(), d.shuffle_, d.seed_);
        loaded_ = true;
        return absl::OkStatus();
      }

      // Image i as the pixels of a Liquid raw item, checked and copied once from the record.
      absl::Status RawPixels(IteratorContext* ctx, uint32_t i, Tensor* pixels) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        if (!prefix_.whole_items) {
          return tensorflow::errors::InvalidArgument(d.filename_, ": offset 0: raw_item_channels reads records of ",
                                                     "whole items (Liquid's); this is a PCR record of scan groups");
        }
        const uint64_t offset = prefix_.partial_offsets[i];
        const char* item = buffer_.scalar<tstring>()().data() + offset;
        liquid::RawItemShape shape;
        const absl::Status parsed = liquid::ParseRawItem(item, prefix_.header.partial_sizes[i],
                                                         static_cast<uint32_t>(d.raw_item_channels_), offset, &shape);
        if (!parsed.ok()) return tensorflow::errors::DataLoss(d.filename_, ": ", parsed.message());
        *pixels =
            Tensor(ctx->allocator({}), tensorflow::DT_UINT8, TensorShape({shape.height, shape.width, shape.channels}));
        std::memcpy(pixels->flat<uint8_t>().data(), item + liquid::kRawItemHeaderSize, shape.pixel_bytes());
        return absl::OkStatus();
      }

      void Release() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        buffer_ = Tensor();
        prefix_ = pcr::RecordPrefix();
      }

      mutex mu_;
      bool loaded_ TF_GUARDED_BY(mu_) = false;
      bool from_cache_ TF_GUARDED_BY(mu_) = false;  // the record being emitted was a cache hit
      size_t next_ TF_GUARDED_BY(mu_) = 0;
      Tensor buffer_ TF_GUARDED_BY(mu_);  // the prefix: a scalar string, shared with the cache when cached
      pcr::RecordPrefix prefix_ TF_GUARDED_BY(mu_);
      std::vector<uint32_t> order_ TF_GUARDED_BY(mu_);
    };

    const std::string filename_;
    const std::vector<int64_t> prefix_ends_;
    const int64_t scan_group_;
    const int64_t seed_;
    const bool shuffle_;
    const bool with_keys_;
    const bool with_cache_hits_;
    const int64_t raw_item_channels_;  // > 0: images are raw items' pixels, uint8 [H, W, C]
    const cache::Config cache_config_;
    const int64_t cache_pass_;
    const int64_t item_;  // the record's item in a seeded order, or -1
    const DataTypeVector dtypes_;
    const std::vector<PartialTensorShape> shapes_;
  };

  bool shuffle_;
  bool with_keys_;
  bool with_cache_hits_;
  int64_t raw_item_channels_;
  int64_t variable_token_;
  cache::Config cache_config_;
};

REGISTER_KERNEL_BUILDER(Name(kPCRRecordDatasetOp).Device(tensorflow::DEVICE_CPU), PCRRecordDatasetOp);

}  // namespace
}  // namespace tfliquid
