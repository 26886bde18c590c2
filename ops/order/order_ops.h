// Names of the seeded-order ops and their attributes, shared by their registrations (order_ops.cc) and kernels
// (order_kernels.cc). Python calls them liquid_seeded_order_keys and liquid_unsplittable_dataset.
#ifndef TFLIQUID_OPS_ORDER_ORDER_OPS_H_
#define TFLIQUID_OPS_ORDER_ORDER_OPS_H_

namespace tfliquid {

inline constexpr char kSeededOrderKeysOp[] = "Liquid>SeededOrderKeys";
// The order as text, "num_items,seed,num_workers,worker_index" (order/seeded_order.h).
inline constexpr char kOrderAttr[] = "order";
inline constexpr char kUnsplittableDatasetOp[] = "Liquid>UnsplittableDataset";
inline constexpr char kIterationDatasetOp[] = "Liquid>IterationDataset";
inline constexpr char kSeededShuffleDatasetOp[] = "Liquid>SeededShuffleDataset";
// Names the iterations that a Liquid>IterationDataset counts and the Liquid>SeededShuffleDatasets inside it read.
inline constexpr char kIterationsAttr[] = "iterations";
inline constexpr char kSeedAttr[] = "seed";
// Why the dataset cannot be split: the error tf.data service's dynamic sharding gets.
inline constexpr char kReasonAttr[] = "reason";

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_ORDER_ORDER_OPS_H_
