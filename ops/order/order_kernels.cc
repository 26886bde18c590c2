// Kernel of Liquid>SeededOrderKeys: a worker's slice of one epoch of the seeded order.
#include "common/input_checks.h"
#include "common/kernel.h"
#include "order/order_ops.h"
#include "order/seeded_order.h"

namespace tfliquid {
namespace {

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

REGISTER_KERNEL_BUILDER(Name(kSeededOrderKeysOp).Device(tensorflow::DEVICE_CPU), SeededOrderKeysOp);

}  // namespace
}  // namespace tfliquid
