"""Shuffles whose every iteration a restored iterator replays: `seeded_shuffle` permutes records by a seeded order
of the iteration's number, which `numbered_iterations`, around the whole pipeline, counts and checkpoints. Unlike a
TensorFlow shuffle feeding a parallel interleave, whose state a checkpoint loses once the interleave has taken every
record (the iterations after a restore then reshuffle otherwise), the number is saved wherever the pipeline stands.
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._lib import load_ops


class _OpDataset(tf.data.Dataset):
    """One of the order's dataset ops over `input`: its variant and element spec."""

    def __init__(self, variant, element_spec, input: tf.data.Dataset):
        self._spec, self._input = element_spec, input
        super().__init__(variant)

    @property
    def element_spec(self):
        return self._spec

    def _inputs(self):
        return [self._input]


def seeded_shuffle(records: tf.data.Dataset, iterations: str, seed: int) -> tf.data.Dataset:
    """`records` (int64 scalars) read whole, then yielded in a seeded permutation of the iteration that
    `numbered_iterations(..., iterations)` around the pipeline numbers, each with an int64 seed of (seed, iteration,
    record): (record, seed) pairs. Under tf.data service's dynamic sharding each worker permutes the records it is
    given."""
    variant = load_ops().liquid_seeded_shuffle_dataset(records._variant_tensor, iterations=iterations, seed=seed)
    spec = (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64))
    return _OpDataset(variant, spec, records)


def numbered_iterations(dataset: tf.data.Dataset, iterations: str) -> tf.data.Dataset:
    """`dataset`'s elements, its iterations numbered 0, 1, ... under the name `iterations` (unique to the dataset)
    for the `seeded_shuffle`s inside it; checkpoints save the number and a restored iterator goes on from it."""
    variant = load_ops().liquid_iteration_dataset(dataset._variant_tensor, iterations=iterations)
    return _OpDataset(variant, dataset.element_spec, dataset)


def unsplittable(dataset: tf.data.Dataset, reason: str) -> tf.data.Dataset:
    """`dataset`'s elements; tf.data service's dynamic sharding fails with `reason` instead of splitting it."""
    variant = load_ops().liquid_unsplittable_dataset(dataset._variant_tensor, reason=reason)
    return _OpDataset(variant, dataset.element_spec, dataset)
