"""Lobster's load balance: a node's read threads split among its data-parallel workers by their misses.

In synchronous data-parallel training every worker waits at the gradient exchange for the slowest one, so a step
takes as long as the worker with the most cache misses needs to read them. With the same number of read threads
each, that worker straggles; Lobster (Liu, Nicolae and Li, ICPP 2022) gives each co-located worker its own read
queue and assigns threads in proportion to the reads each will make, so that all finish together. With a seeded
order and the cache's rule, every worker's misses in the steps ahead are known before they happen
(`tfliquid.cache.multiworker` replays them); without an order, each worker's queue of requested reads shows its
step's misses once the step's reads are requested.

    >>> threads = split_threads([30, 10, 12, 20], 16)        # [7, 2, 3, 4]
    >>> step_fetch_time([30, 10, 12, 20], threads)           # 5 reads' time; equal threads (4 each): 8

The model: a thread reads one item at a time, each read taking one unit; a worker with m misses and t threads
reads them in ceil(m / t) units; a step's fetch time is its slowest worker's.
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError


def equal_threads(num_workers: int, threads: int) -> np.ndarray:
    """`threads` split as evenly as they go among `num_workers` workers (the first ones get the remainder)."""
    num_workers = check_int("num_workers", num_workers, 1)
    threads = check_int("threads", threads, num_workers)
    return np.full(num_workers, threads // num_workers) + (np.arange(num_workers) < threads % num_workers)


def split_threads(predicted_misses, threads: int) -> np.ndarray:
    """Lobster's split: `threads` among the workers so that the slowest one's predicted reads take the least time.

    Every worker keeps a thread (one with nothing to read may get work the prediction missed); then each further
    thread goes to the worker whose reads would take longest, ceil(misses / threads) (ties: the one with more
    misses, then the lower index), which minimises the step's slowest fetch: its threads are in proportion to its
    misses, rounded where it matters. No misses predicted: equal threads."""
    misses = np.asarray(predicted_misses, np.int64)
    if misses.ndim != 1 or not len(misses) or (misses < 0).any():
        raise ArgumentError(f"predicted_misses must be counts >= 0, one per worker, got {misses.tolist()}")
    threads = check_int("threads", threads, len(misses))
    if not misses.any():
        return equal_threads(len(misses), threads)
    given = np.ones(len(misses), np.int64)
    # A max-heap of (the time a worker's reads take, its misses, -index); lazily updated as threads are given.
    heap = [(-_ceil(m, 1), -int(m), k) for k, m in enumerate(misses.tolist())]
    heapq.heapify(heap)
    for _ in range(threads - len(misses)):
        _, _, k = heapq.heappop(heap)
        given[k] += 1
        heapq.heappush(heap, (-_ceil(int(misses[k]), int(given[k])), -int(misses[k]), k))
    return given


def step_fetch_time(misses, threads) -> int:
    """The step's fetch time in reads: its slowest worker's ceil(misses / threads)."""
    misses, threads = np.asarray(misses, np.int64), np.asarray(threads, np.int64)
    return int(np.max(-(-misses // threads)))


@dataclasses.dataclass(frozen=True)
class FetchTimes:
    """Per step, the slowest worker's fetch time in reads (one read of one thread), means over the steps."""

    equal: float  # every worker the same threads
    split: float  # Lobster's split of each step's misses (an order tells them ahead; the queues, once requested)
    bound: float  # all workers' misses over all threads: no split does better

    @property
    def ratio(self) -> float:
        """split / equal: what the split takes of the equal threads' straggler time."""
        return self.split / self.equal if self.equal else 1.0


def fetch_times(step_misses, threads: int) -> FetchTimes:
    """FetchTimes of `step_misses` (int [workers, steps]: each worker's misses in each step) with `threads` read
    threads on the node."""
    misses = np.asarray(step_misses, np.int64)
    if misses.ndim != 2 or not misses.size:
        raise ArgumentError(f"step_misses must be [workers, steps] counts, got shape {misses.shape}")
    equal = equal_threads(misses.shape[0], threads)
    equal_times = [step_fetch_time(step, equal) for step in misses.T]
    split_times = [step_fetch_time(step, split_threads(step, threads)) for step in misses.T]
    return FetchTimes(float(np.mean(equal_times)), float(np.mean(split_times)), float(np.mean(misses.sum(0) / threads)))


def _ceil(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)
