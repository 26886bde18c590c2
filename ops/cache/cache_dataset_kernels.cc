// Kernels of the MinIO cache's datasets. Python builds its one transform from them (tfliquid/cache/transform.py):
// Liquid>CachePassDataset starts each pass (epoch), Liquid>CacheDataset wraps the dataset that fetches one item,
// and Liquid>CachePrefetchDataset plans Lobster's prefetches. Datasets rather than plain ops, so that pipelines
// through the cache checkpoint: tf.data refuses stateful plain ops in the functions of a dataset it saves.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/cache_attrs.h"
#include "cache/cache_ops.h"
#include "common/dataset_kernel.h"
#include "common/input_checks.h"

namespace tfliquid {
namespace {

using cache::Cache;
using cache::Config;
using tensorflow::mutex;
using tensorflow::mutex_lock;
using tensorflow::errors::InvalidArgument;

// ---------------------------------------------------------------------------------------------------------------
// Liquid>CacheDataset

struct CacheSettings {
  Config config;
  bool with_hit = false;
  bool prefetch = false;
};

class CacheDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit CacheDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, cache::ConfigFromAttrs(ctx, &settings_.config));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kWithHitAttr, &settings_.with_hit));
    OP_REQUIRES_OK(ctx, ctx->GetAttr(kPrefetchAttr, &settings_.prefetch));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    const tstring* name;
    int64_t item, pass;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "key", &name));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "item", &item));
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "pass", &pass));
    OP_REQUIRES(ctx, item >= -1, InvalidArgument("item must be >= 0, or -1 for none, got ", item));
    *output = new Dataset(ctx, input, std::string(*name), item, pass, settings_);
  }

 private:
  class Dataset : public UnaryDataset {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, std::string name, int64_t item, int64_t pass,
            CacheSettings settings)
        : UnaryDataset(ctx, input, "Cache"),
          name_(std::move(name)),
          item_(item),
          pass_(pass),
          settings_(std::move(settings)) {
      if (settings_.with_hit) AddOutput(tensorflow::DT_BOOL, PartialTensorShape({}));
      AddInputOutputs();
    }

    std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
      return std::make_unique<Iterator>(Iterator::Params{this, IteratorPrefix(prefix)});
    }
    // The cache's contents never change the elements (a key always names the same ones): the only external state
    // is the input's (UnaryDataset::CheckExternalState).

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      Attrs attrs = {Attr(kWithHitAttr, settings_.with_hit), Attr(kPrefetchAttr, settings_.prefetch)};
      cache::AppendAttrs(settings_.config, &attrs);
      return AddDatasetNode(ctx, b, this, input_, attrs, output, tstring(name_), item_, pass_);
    }

   private:
    class Iterator : public DatasetIterator<Dataset> {
     public:
      explicit Iterator(const Params& params) : DatasetIterator<Dataset>(params) {}

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        mutex_lock lock(mu_);
        if (state_ == State::kUnstarted) TF_RETURN_IF_ERROR(Start(ctx));
        *end_of_sequence = false;
        if (state_ == State::kHit) {
          const size_t n = dataset()->input_->output_dtypes().size();
          if (emitted_ * n >= cached_.size()) return Finish(end_of_sequence);
          Emit(/*hit=*/true, cached_.begin() + emitted_ * n, cached_.begin() + (emitted_ + 1) * n, out_tensors);
          ++emitted_;
          return absl::OkStatus();
        }
        while (state_ == State::kMiss) {
          std::vector<Tensor> element;
          bool end;
          TF_RETURN_IF_ERROR(input_impl_->GetNext(ctx, &element, &end));
          if (end) {
            TF_RETURN_IF_ERROR(Offer());
            return Finish(end_of_sequence);
          }
          fetched_.insert(fetched_.end(), element.begin(), element.end());
          ++emitted_;
          if (!dataset()->settings_.prefetch) {
            Emit(/*hit=*/false, element.begin(), element.end(), out_tensors);
            return absl::OkStatus();
          }
        }
        return Finish(end_of_sequence);
      }

     protected:
      std::shared_ptr<tensorflow::data::model::Node> CreateNode(
          IteratorContext*, tensorflow::data::model::Node::Args args) const override {
        return tensorflow::data::model::MakeKnownRatioNode(std::move(args), /*ratio=*/1);
      }

      absl::Status SaveInternal(SerializationContext*, IteratorStateWriter* writer) override {
        mutex_lock lock(mu_);
        TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "emitted", static_cast<int64_t>(emitted_)));
        return writer->WriteScalar(prefix(), "done", static_cast<int64_t>(state_ == State::kDone));
      }

      // The item is looked up (or fetched) again at the next GetNext, and its first `emitted` elements skipped.
      absl::Status RestoreInternal(IteratorContext*, IteratorStateReader* reader) override {
        mutex_lock lock(mu_);
        int64_t emitted, done;
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "emitted", &emitted));
        TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "done", &done));
        if (emitted < 0) return tensorflow::errors::DataLoss("negative position in checkpoint");
        skip_ = static_cast<size_t>(emitted);
        emitted_ = 0;
        state_ = done ? State::kDone : State::kUnstarted;
        cached_.clear();
        fetched_.clear();
        input_impl_.reset();
        return absl::OkStatus();
      }

     private:
      enum class State { kUnstarted, kHit, kMiss, kDone };

      // Looks the item up; on a miss, starts the input. Skips the elements a restored iterator had emitted.
      absl::Status Start(IteratorContext* ctx) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        TF_RETURN_IF_ERROR(Cache::Get(d.settings_.config, &cache_));
        bool hit = false;
        if (!d.settings_.prefetch) {
          TF_RETURN_IF_ERROR(cache_->Lookup(d.name_, d.item_, d.pass_, &cached_, &hit));
          if (hit) TF_RETURN_IF_ERROR(CheckCached());
        }
        if (hit) {
          state_ = State::kHit;
          emitted_ = skip_;
          return absl::OkStatus();
        }
        cached_.clear();
        state_ = State::kMiss;
        TF_RETURN_IF_ERROR(d.input_->MakeIterator(ctx, this, prefix(), &input_impl_));
        for (; emitted_ < skip_; ++emitted_) {
          std::vector<Tensor> element;
          bool end;
          TF_RETURN_IF_ERROR(input_impl_->GetNext(ctx, &element, &end));
          if (end) return tensorflow::errors::DataLoss("cached item '", d.name_, "' has fewer elements than restored");
          fetched_.insert(fetched_.end(), element.begin(), element.end());
        }
        return absl::OkStatus();
      }

      // A hit must hold whole elements of the input's types and shapes: another fetch under the same name is a
      // programming error, said as such.
      absl::Status CheckCached() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        const DataTypeVector& dtypes = d.input_->output_dtypes();
        const std::vector<PartialTensorShape>& shapes = d.input_->output_shapes();
        bool same = cached_.size() % dtypes.size() == 0;
        for (size_t k = 0; same && k < cached_.size(); ++k) {
          same = cached_[k].dtype() == dtypes[k % dtypes.size()] &&
                 shapes[k % dtypes.size()].IsCompatibleWith(cached_[k].shape());
        }
        if (same) return absl::OkStatus();
        return InvalidArgument("MinIO cache '", d.settings_.config.name, "': the item '", d.name_,
                               "' holds other tensors than the dataset it caches yields (", cached_.size(),
                               " tensors for elements of ", tensorflow::DataTypeVectorString(dtypes),
                               "): is the cache shared by datasets that fetch different things under one name?");
      }

      // The elements fetched, offered to the cache as one item.
      absl::Status Offer() TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const Dataset& d = *dataset();
        bool admitted;
        const absl::Status offered =
            cache_->Insert(d.name_, d.item_, d.pass_, fetched_, d.settings_.prefetch, &admitted);
        fetched_.clear();
        return offered;
      }

      template <typename It>
      void Emit(bool hit, It begin, It end, std::vector<Tensor>* out) const {
        if (dataset()->settings_.with_hit) {
          Tensor flag(tensorflow::DT_BOOL, TensorShape({}));
          flag.scalar<bool>()() = hit;
          out->push_back(std::move(flag));
        }
        out->insert(out->end(), begin, end);
      }

      absl::Status Finish(bool* end_of_sequence) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        state_ = State::kDone;
        cached_.clear();
        input_impl_.reset();
        cache_.reset();
        *end_of_sequence = true;
        return absl::OkStatus();
      }

      mutex mu_;
      State state_ TF_GUARDED_BY(mu_) = State::kUnstarted;
      size_t emitted_ TF_GUARDED_BY(mu_) = 0;  // elements emitted (or, for a prefetch, fetched)
      size_t skip_ TF_GUARDED_BY(mu_) = 0;     // elements a restored iterator had emitted
      std::shared_ptr<Cache> cache_ TF_GUARDED_BY(mu_);
      std::vector<Tensor> cached_ TF_GUARDED_BY(mu_);   // a hit's elements' tensors, one after the other
      std::vector<Tensor> fetched_ TF_GUARDED_BY(mu_);  // a miss's, gathered for the cache
      std::unique_ptr<IteratorBase> input_impl_ TF_GUARDED_BY(mu_);
    };

    const std::string name_;
    const int64_t item_;
    const int64_t pass_;
    const CacheSettings settings_;
  };

  CacheSettings settings_;
};

// ---------------------------------------------------------------------------------------------------------------
// Liquid>CacheWithPassDataset

class CacheWithPassDatasetOp : public UnaryDatasetOpKernel {
 public:
  explicit CacheWithPassDatasetOp(OpKernelConstruction* ctx) : UnaryDatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, cache::ConfigFromAttrs(ctx, &config_));
  }

 protected:
  void MakeDataset(OpKernelContext* ctx, DatasetBase* input, DatasetBase** output) override {
    int64_t epoch;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "epoch", &epoch));
    *output = new Dataset(ctx, input, config_, epoch);
  }

 private:
  class Dataset : public ForwardingDataset<Dataset> {
   public:
    Dataset(OpKernelContext* ctx, const DatasetBase* input, Config config, int64_t epoch)
        : ForwardingDataset(ctx, input, "CacheWithPass"), config_(std::move(config)), epoch_(epoch) {
      AddOutput(tensorflow::DT_INT64, PartialTensorShape({}));
      AddInputOutputs();
    }

    // Yields the input's elements, each after the id of the pass it belongs to.
    class Iterator : public ForwardingDataset::Iterator {
     public:
      using ForwardingDataset::Iterator::Iterator;

      absl::Status GetNextInternal(IteratorContext* ctx, std::vector<Tensor>* out_tensors,
                                   bool* end_of_sequence) override {
        int64_t pass;
        {
          mutex_lock lock(mu_);
          if (pass_ < 0) {
            std::shared_ptr<Cache> cache;
            TF_RETURN_IF_ERROR(Cache::Get(dataset()->config_, &cache));
            pass_ = cache->BeginPass(dataset()->epoch_);
          }
          pass = pass_;
        }
        std::vector<Tensor> element;
        TF_RETURN_IF_ERROR(ForwardingDataset::Iterator::GetNextInternal(ctx, &element, end_of_sequence));
        if (*end_of_sequence) return absl::OkStatus();
        out_tensors->emplace_back(ctx->allocator({}), tensorflow::DT_INT64, TensorShape({}));
        out_tensors->back().scalar<int64_t>()() = pass;
        out_tensors->insert(out_tensors->end(), element.begin(), element.end());
        return absl::OkStatus();
      }

     protected:
      absl::Status SaveInternal(SerializationContext* ctx, IteratorStateWriter* writer) override {
        {
          mutex_lock lock(mu_);
          TF_RETURN_IF_ERROR(writer->WriteScalar(prefix(), "pass", pass_));
        }
        return ForwardingDataset::Iterator::SaveInternal(ctx, writer);
      }

      // The restored iterator goes on counting in the saved pass, as Liquid>CachePassDataset's does; the cache,
      // perhaps of another process that never began that pass, is told the pass's epoch again (the clairvoyant
      // policy ranks its reads by it).
      absl::Status RestoreInternal(IteratorContext* ctx, IteratorStateReader* reader) override {
        {
          mutex_lock lock(mu_);
          TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "pass", &pass_));
          if (pass_ >= 0) {
            std::shared_ptr<Cache> cache;
            TF_RETURN_IF_ERROR(Cache::Get(dataset()->config_, &cache));
            cache->RestorePass(pass_, dataset()->epoch_);
          }
        }
        return ForwardingDataset::Iterator::RestoreInternal(ctx, reader);
      }

     private:
      mutex mu_;
      int64_t pass_ TF_GUARDED_BY(mu_) = -1;  // begun at the first element
    };

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      Attrs attrs;
      cache::AppendAttrs(config_, &attrs);
      return AddDatasetNode(ctx, b, this, input_, attrs, output, epoch_);
    }

   private:
    const Config config_;
    const int64_t epoch_;
  };

  Config config_;
};

// ---------------------------------------------------------------------------------------------------------------
// Liquid>CachePassDataset and Liquid>CachePrefetchDataset: int64 scalars the cache computes when they are first
// read, from the op's one scalar input.

using ComputeValues = absl::Status (*)(Cache* cache, double input, std::vector<int64_t>* values);
// Sets up again what the cache kept beside values computed before a checkpoint (nullptr: nothing).
using RestoreValues = void (*)(Cache* cache, double input, const std::vector<int64_t>& values);

template <typename InputT>
class CacheSourceOp : public DatasetOpKernel {
 public:
  CacheSourceOp(OpKernelConstruction* ctx, const char* input_name, const char* type, ComputeValues compute,
                RestoreValues restore = nullptr)
      : DatasetOpKernel(ctx), input_name_(input_name), type_(type), compute_(compute), restore_(restore) {
    OP_REQUIRES_OK(ctx, cache::ConfigFromAttrs(ctx, &config_));
  }

  void MakeDataset(OpKernelContext* ctx, DatasetBase** output) override {
    InputT input;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, input_name_, &input));
    *output = new Dataset(ctx, config_, type_, compute_, restore_, input);
  }

 private:
  // Holds copies of the kernel's settings: a dataset can outlive the kernel that made it.
  class Dataset : public ComputedDataset {
   public:
    Dataset(OpKernelContext* ctx, Config config, const char* type, ComputeValues compute, RestoreValues restore,
            InputT input)
        : ComputedDataset(ctx, type, tensorflow::DT_INT64, /*save_elements=*/true),
          config_(std::move(config)),
          compute_(compute),
          restore_(restore),
          input_(input) {}

    absl::Status Compute(IteratorContext* ctx, std::vector<Tensor>* elements) const override {
      std::shared_ptr<Cache> cache;
      TF_RETURN_IF_ERROR(Cache::Get(config_, &cache));
      std::vector<int64_t> values;
      TF_RETURN_IF_ERROR(compute_(cache.get(), input_, &values));
      for (int64_t value : values) {
        elements->emplace_back(ctx->allocator({}), tensorflow::DT_INT64, TensorShape({}));
        elements->back().scalar<int64_t>()() = value;
      }
      return absl::OkStatus();
    }

    // A pass reads its items inside a function (each_pass' flat_map), out of reach of tf.data service's splits:
    // splitting the pass itself would hand one worker a whole epoch. Dynamic sharding is refused, in words
    // (Liquid>CacheWithPassDataset keeps the items as its input, and splits).
    absl::Status MakeSplitProviders(std::vector<std::unique_ptr<tensorflow::data::SplitProvider>>*) const override {
      return tensorflow::errors::Unimplemented(
          "a pipeline that reads a MinIO cache's items inside each of its passes (tfliquid.cache.each_pass: "
          "LiquidDataset(cache=...)) cannot be sharded with ShardingPolicy.DYNAMIC: no split reaches those items; "
          "shard statically (ShardingPolicy.HINT, or OFF with each worker's own records) or leave the cache out");
    }

    absl::Status Restored(const std::vector<Tensor>& elements) const override {
      if (restore_ == nullptr) return absl::OkStatus();
      std::shared_ptr<Cache> cache;
      TF_RETURN_IF_ERROR(Cache::Get(config_, &cache));
      std::vector<int64_t> values;
      for (const Tensor& element : elements) values.push_back(element.scalar<int64_t>()());
      restore_(cache.get(), input_, values);
      return absl::OkStatus();
    }

   protected:
    absl::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                    Node** output) const override {
      Attrs attrs;
      cache::AppendAttrs(config_, &attrs);
      return AddDatasetNode(ctx, b, this, nullptr, attrs, output, input_);
    }

   private:
    const Config config_;
    const ComputeValues compute_;
    const RestoreValues restore_;
    const InputT input_;
  };

  const char* const input_name_;
  const char* const type_;
  const ComputeValues compute_;
  const RestoreValues restore_;
  Config config_;
};

absl::Status BeginPass(Cache* cache, double epoch, std::vector<int64_t>* values) {
  values->push_back(cache->BeginPass(static_cast<int64_t>(epoch)));
  return absl::OkStatus();
}

// A pass restored from a checkpoint, perhaps of another process, whose cache never began it: its reads are
// placed in its epoch again (the clairvoyant policy ranks them by it).
void RestorePass(Cache* cache, double epoch, const std::vector<int64_t>& values) {
  for (int64_t pass : values) cache->RestorePass(pass, static_cast<int64_t>(epoch));
}

absl::Status PlanPrefetch(Cache* cache, double reads, std::vector<int64_t>* values) {
  std::vector<uint64_t> items;
  TF_RETURN_IF_ERROR(cache->PlanPrefetch(reads, &items));
  values->assign(items.begin(), items.end());
  return absl::OkStatus();
}

class CachePassDatasetOp : public CacheSourceOp<int64_t> {
 public:
  explicit CachePassDatasetOp(OpKernelConstruction* ctx)
      : CacheSourceOp(ctx, "epoch", "CachePass", &BeginPass, &RestorePass) {}
};

class CachePrefetchDatasetOp : public CacheSourceOp<double> {
 public:
  explicit CachePrefetchDatasetOp(OpKernelConstruction* ctx)
      : CacheSourceOp(ctx, "reads", "CachePrefetch", &PlanPrefetch) {}

  void MakeDataset(OpKernelContext* ctx, DatasetBase** output) override {
    double reads;
    OP_REQUIRES_OK(ctx, ScalarInput(ctx, "reads", &reads));
    OP_REQUIRES(ctx, std::isfinite(reads) && reads >= 0,
                InvalidArgument(kCachePrefetchDatasetOp, ": reads must be finite and >= 0, got ", reads));
    CacheSourceOp::MakeDataset(ctx, output);
  }
};

REGISTER_KERNEL_BUILDER(Name(kCacheDatasetOp).Device(tensorflow::DEVICE_CPU), CacheDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kCachePassDatasetOp).Device(tensorflow::DEVICE_CPU), CachePassDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kCacheWithPassDatasetOp).Device(tensorflow::DEVICE_CPU), CacheWithPassDatasetOp);
REGISTER_KERNEL_BUILDER(Name(kCachePrefetchDatasetOp).Device(tensorflow::DEVICE_CPU), CachePrefetchDatasetOp);

}  // namespace
}  // namespace tfliquid
