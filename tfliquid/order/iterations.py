"""Shuffles whose every iteration a restored iterator replays. `seeded_shuffle` permutes records by a seeded order
of the iteration's number, which `numbered_iterations`, around the whole pipeline, counts and checkpoints (PCRDataset:
its record ids stay the pipeline's source, which tf.data service's dynamic sharding splits); `each_iteration` builds
a whole pass from a number drawn per iteration and held until it ends (LiquidDataset, which `unsplittable` keeps
from dynamic sharding). Unlike a TensorFlow shuffle feeding a parallel interleave, whose state a checkpoint loses
once the interleave has taken every record (the iterations after a restore then reshuffle otherwise), both are
saved wherever the pipeline stands.
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.op_dataset import OpDataset
from tfliquid._lib import load_ops
from tfliquid.order.seeded_order import derived_seed

_EPOCH_SEEDS = 3  # the salt of an iteration's epochs (epoch_of), beside the datasets' salts of records and batches


def seeded_shuffle(records: tf.data.Dataset, iterations: str, seed: int) -> tf.data.Dataset:
    """`records` (int64 scalars) read whole, then yielded in a seeded permutation of the iteration that
    `numbered_iterations(..., iterations)` around the pipeline numbers, each with an int64 seed of (seed, iteration,
    record): (record, seed) pairs. Under tf.data service's dynamic sharding each worker permutes the records it is
    given."""
    variant = load_ops().liquid_seeded_shuffle_dataset(records._variant_tensor, iterations=iterations, seed=seed)
    spec = (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64))
    return OpDataset(variant, spec, [records])


def numbered_iterations(dataset: tf.data.Dataset, iterations: str) -> tf.data.Dataset:
    """`dataset`'s elements, its iterations numbered 0, 1, ... under the name `iterations` (unique to the dataset)
    for the `seeded_shuffle`s inside it; checkpoints save the number and a restored iterator goes on from it."""
    variant = load_ops().liquid_iteration_dataset(dataset._variant_tensor, iterations=iterations)
    return OpDataset(variant, dataset.element_spec, [dataset])


def unsplittable(dataset: tf.data.Dataset, reason: str) -> tf.data.Dataset:
    """`dataset`'s elements; tf.data service's dynamic sharding fails with `reason` instead of splitting it."""
    variant = load_ops().liquid_unsplittable_dataset(dataset._variant_tensor, reason=reason)
    return OpDataset(variant, dataset.element_spec, [dataset])


def each_iteration(seed: int | None, make_dataset):
    """make_dataset(iteration), started anew every time the result is iterated, `iteration` an int64 scalar tensor
    that is a function of (`seed`, how many times the result was iterated before): TensorFlow's per-iteration random
    draw, taken when an iteration starts and held by its iterator until it ends. So a checkpoint taken anywhere in an
    iteration saves the draws' state, and the iterations after a restore draw as the uninterrupted run's did: an
    order derived from `iteration` alone (`epoch_of`, `derived_seed`) replays exactly. (Draws and shuffles that feed
    a parallel interleave lose their state once it has taken every record: a checkpoint then saves no position of
    them, and the iterations after a restore reshuffle otherwise.)"""
    return tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).take(1).flat_map(make_dataset)


def epoch_of(iteration, index):
    """The epoch of a seeded order (an int64 scalar tensor in [0, 2^62)) that epoch `index` of an `each_iteration`
    iteration reads: a function of the iteration and the index."""
    return tf.bitwise.bitwise_and(derived_seed(0, iteration, index, _EPOCH_SEEDS), tf.constant((1 << 62) - 1, tf.int64))
