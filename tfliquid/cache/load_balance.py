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
    thread goes to the worker whose reads would take longest, ceil(misses / threads) (ties: the one with the most
    misses per thread, then the lower index), which minimises the step's slowest fetch, and spreads the threads
    that cannot shorten it in proportion to the misses. No misses predicted: equal threads."""
    misses = np.asarray(predicted_misses, np.int64)
    if misses.ndim != 1 or not len(misses) or (misses < 0).any():
        raise ArgumentError(f"predicted_misses must be counts >= 0, one per worker, got {misses.tolist()}")
    threads = check_int("threads", threads, len(misses))
    if not misses.any():
        return equal_threads(len(misses), threads)
    given = np.ones(len(misses), np.int64)
    # A max-heap of (the time a worker's reads take, its misses per thread, -index), updated as threads are given.
    heap = [(-_ceil(m, 1), -float(m), k) for k, m in enumerate(misses.tolist())]
    heapq.heapify(heap)
    for _ in range(threads - len(misses)):
        _, _, k = heapq.heappop(heap)
        given[k] += 1
        m, t = int(misses[k]), int(given[k])
        heapq.heappush(heap, (-_ceil(m, t), -m / t, k))
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
    threads on the node; no steps (slices shorter than a batch): all 0."""
    misses = np.asarray(step_misses, np.int64)
    if misses.ndim != 2 or not misses.shape[0]:
        raise ArgumentError(f"step_misses must be [workers, steps] counts, got shape {misses.shape}")
    if not misses.shape[1]:
        return FetchTimes(0.0, 0.0, 0.0)
    equal = equal_threads(misses.shape[0], threads)
    equal_times = [step_fetch_time(step, equal) for step in misses.T]
    split_times = [step_fetch_time(step, split_threads(step, threads)) for step in misses.T]
    return FetchTimes(float(np.mean(equal_times)), float(np.mean(split_times)), float(np.mean(misses.sum(0) / threads)))


def _ceil(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def predicted_step_misses(
    orders, capacity: int, epochs: int, batch_size: int, policy: str = "clairvoyant", prefetch_bandwidth: float = 0.0
) -> np.ndarray:
    """int [workers, steps]: each worker's reads from storage in each step of `batch_size` reads over `epochs`
    epochs of its order (`orders`: the workers' `SeededOrder`s, with caches of `capacity` items of `policy` each),
    demand misses and prefetch reads both: what each worker's read queue will hold, replayed as the cache decides
    (`tfliquid.cache.multiworker.replay_worker`, which its C++ policy hits read for read)."""
    from tfliquid.cache import multiworker

    batch_size = check_int("batch_size", batch_size, 1)
    per_worker = []
    for order in orders:
        hits, prefetched = multiworker.replay_worker(policy, order, capacity, epochs, prefetch_bandwidth)
        reads = (~hits).astype(np.int64) + prefetched
        steps = -(-len(reads) // batch_size)
        per_worker.append(np.pad(reads, (0, steps * batch_size - len(reads))).reshape(steps, batch_size).sum(axis=1))
    steps = min(len(r) for r in per_worker)  # slices may differ by one read
    return np.stack([r[:steps] for r in per_worker])


class ReadBalancer:
    """Splits a node's `read_threads` among its workers' read queues (`tfliquid.io.read_file(..., queue=)`), step by
    step, by Lobster's rule (`split_threads`).

    With `step_misses` (int [workers, steps], e.g. `predicted_step_misses` of the workers' seeded orders), step s
    gives each queue its share of the reads of steps s .. s + lookahead - 1, the reads its pipeline has in flight
    when the consumer is at step s. Without, the split follows the queues' measured lengths (the reads waiting
    or in flight in each, `tfliquid.io.read_queue_lengths`), as Lobster does when no order is known.

        >>> balancer = ReadBalancer(["worker0", "worker1"], read_threads=8, step_misses=predicted)
        >>> for step in range(steps):
        ...     balancer.step(step)          # before the step's batches are taken
    """

    def __init__(self, queues, read_threads: int, step_misses=None, lookahead: int = 2):
        self.queues = [str(queue) for queue in queues]
        if not self.queues or len(set(self.queues)) != len(self.queues):
            raise ArgumentError(f"queues must be distinct names, one per worker, got {list(queues)!r}")
        self.read_threads = check_int("read_threads", read_threads, len(self.queues))
        self.lookahead = check_int("lookahead", lookahead, 1)
        self._misses = None
        if step_misses is not None:
            self._misses = np.asarray(step_misses, np.int64)
            if self._misses.ndim != 2 or self._misses.shape[0] != len(self.queues):
                raise ArgumentError(
                    f"step_misses must be [workers, steps] with a row per queue ({len(self.queues)}), "
                    f"got shape {self._misses.shape}"
                )

    def step(self, step: int) -> np.ndarray:
        """Sets every queue's threads for `step` and returns them."""
        if self._misses is None:
            from tfliquid import io

            load = np.asarray(io.read_queue_lengths(self.queues), np.int64)
        else:
            load = self._misses[:, step : step + self.lookahead].sum(axis=1)
        return self._set(split_threads(load, self.read_threads))

    def equal(self) -> np.ndarray:
        """Sets every queue the same threads (as many as they go) and returns them."""
        return self._set(equal_threads(len(self.queues), self.read_threads))

    def _set(self, threads: np.ndarray) -> np.ndarray:
        from tfliquid import io

        for queue, count in zip(self.queues, threads.tolist()):
            io.set_read_threads(queue, count)
        return threads
