"""Timing a pass over a dataset the way throughput should be read: from the iterator's creation to its last
element, with the iterator's teardown timed apart.

Deleting an exhausted tf.data iterator now and then stalls until tf.data's autotuning thread next wakes (about
10 x (2^k - 1) ms after the pass began). It is tf.data's cost, the same for any pipeline, paid once per epoch;
folded into a short pass it can halve the rate measured, at random."""

from __future__ import annotations

import dataclasses
import time

import tensorflow as tf


@dataclasses.dataclass
class PassTiming:
    elements: int  # along the first dimension of each batch (or batches, for unbatched scalars)
    seconds: float  # iterator creation to last element
    teardown_seconds: float  # deleting the exhausted iterator
    batch_seconds: list[float]  # the time each batch took to arrive

    @property
    def rate(self) -> float:
        return self.elements / self.seconds


def timed_pass(dataset: tf.data.Dataset) -> PassTiming:
    start = time.perf_counter()
    iterator = iter(dataset)
    elements, batch_seconds, last = 0, [], start
    for batch in iterator:
        first = tf.nest.flatten(batch)[0]
        elements += int(first.shape[0]) if first.shape.rank else 1
        now = time.perf_counter()
        batch_seconds.append(now - last)
        last = now
    seconds = time.perf_counter() - start
    del iterator
    return PassTiming(elements, seconds, time.perf_counter() - start - seconds, batch_seconds)


def turn_order(keys: list, round_: int) -> list:
    """`keys` in the order of round `round_` of measurements made in turns: as given in even rounds, reversed in
    odd ones, so that no key always runs right after the same neighbour."""
    return keys if round_ % 2 == 0 else keys[::-1]
