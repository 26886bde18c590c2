"""Per-worker caches of data-parallel training, simulated on a seeded order (Lobster, NoPFS).

    >>> table = simulate_workers(("minio", "clairvoyant", "opt"), num_items=20_000, num_workers=4,
    ...                          capacity=0.0625, epochs=4)
    >>> print(format_table(table))

Each of `num_workers` workers reads its slice of every epoch of a `tfliquid.order.SeededOrder` through a cache of
its own holding `capacity` x num_items items (unit sizes). Policies:
  - `minio`, `lru`: the C++ policies' rules (tfliquid.cache.simulation, whose twins they are);
  - `nopfs`: NoPFS's placement: each worker counts how often it will read every item over the lookahead (every
    simulated epoch) and keeps the most frequent ones (ties: the one read first), each entering at its first read;
  - `clairvoyant`: the C++ policy's rule step for step: Belady with bypass on the order's exact next uses (an item
    not needed within the order's horizon is never admitted; ties in next use broken by the larger item), with
    optional prefetch;
  - `opt`: offline Belady with bypass on each worker's trace, the bound.
Within the simulated epochs `clairvoyant` hits exactly what `opt` hits: both evict the cached item used farthest
ahead, and their choices differ only among items not used again within the simulated epochs, which hit nothing
there.

Hit ratios are over the epochs after the first (the first fills the caches), per worker then averaged. Prefetch
(`prefetch_bandwidth` B > 0, clairvoyant only): after every read the worker gains B background reads, spent on
the upcoming items not cached, soonest first, when they displace an item needed later (or fill free room); a
prefetched item's read is a hit, and the prefetch counts as a storage read of its own. Imbalance is Lobster's
straggler: per training step (each worker's next `batch_size` reads), the most misses of a worker over the mean,
averaged over the steps after the first epoch that have misses. Fetch times (`tfliquid.cache.load_balance`): per
step, the slowest worker's time to make its storage reads (its demand misses and the prefetch reads they set off:
its read queue) with the node's `read_threads` split equally, and split by Lobster's rule on the step's reads, in
reads of one thread, averaged over the same steps, and the bound no split beats (all reads over all threads).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

import numpy as np

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._common.progress import Progress
from tfliquid.cache import load_balance, simulation
from tfliquid.order.seeded_order import HORIZON_EPOCHS_PER_WORKER, SeededOrder

POLICIES = ("minio", "lru", "nopfs", "clairvoyant", "opt")
NEVER = np.iinfo(np.int64).max


@dataclasses.dataclass(frozen=True)
class WorkerResult:
    hits: list[int]  # per epoch
    misses: list[int]  # demand misses per epoch (storage reads on the critical path)
    prefetch_reads: list[int]  # per epoch
    miss_flags: np.ndarray  # bool per read, for the imbalance
    storage_reads: np.ndarray  # int per read: its demand miss and the prefetch reads it set off, for fetch times


@dataclasses.dataclass(frozen=True)
class PolicyResult:
    policy: str
    workers: list[WorkerResult]
    slice_length: int
    batch_size: int
    read_threads: int

    @property
    def hit_ratio(self) -> float:
        """Over the epochs after the first, per worker (its hits over its reads: slices may differ by one item),
        averaged."""
        return float(np.mean([sum(w.hits[1:]) / (sum(w.hits[1:]) + sum(w.misses[1:])) for w in self.workers]))

    @property
    def storage_reads_per_epoch(self) -> float:
        """All workers' demand misses and prefetch reads, per epoch after the first."""
        epochs = len(self.workers[0].hits) - 1
        return sum(sum(w.misses[1:]) + sum(w.prefetch_reads[1:]) for w in self.workers) / epochs

    @property
    def prefetch_reads_per_epoch(self) -> float:
        return sum(sum(w.prefetch_reads[1:]) for w in self.workers) / (len(self.workers[0].hits) - 1)

    def _per_step(self, field: str) -> np.ndarray:
        """int [workers, steps]: each worker's `field` summed over each step after the first epoch."""
        values = np.stack([getattr(w, field)[self.slice_length :] for w in self.workers]).astype(np.int64)
        steps = values.shape[1] // self.batch_size
        return values[:, : steps * self.batch_size].reshape(len(self.workers), steps, self.batch_size).sum(axis=2)

    @property
    def step_misses(self) -> np.ndarray:
        """int [workers, steps]: each worker's demand misses in each step after the first epoch."""
        return self._per_step("miss_flags")

    @property
    def step_reads(self) -> np.ndarray:
        """int [workers, steps]: each worker's storage reads (demand misses and prefetch reads) in each step after
        the first epoch: what its read queue holds."""
        return self._per_step("storage_reads")

    @property
    def imbalance(self) -> float:
        """Mean over steps (after the first epoch) of the most misses of a worker over the workers' mean."""
        per_step = self.step_misses
        means = per_step.mean(axis=0)
        busy = means > 0
        return float(np.mean(per_step.max(axis=0)[busy] / means[busy])) if busy.any() else 1.0

    @property
    def fetch(self) -> load_balance.FetchTimes:
        """The slowest worker's fetch time per step of its storage reads with `read_threads` equal and split
        (load_balance)."""
        return load_balance.fetch_times(self.step_reads, self.read_threads)


def worker_trace(order: SeededOrder, epochs: int) -> np.ndarray:
    """The worker's reads over `epochs` epochs: its clock t is the index."""
    return np.concatenate([order.keys(e) for e in range(epochs)])


def exact_next_uses(order: SeededOrder, trace: np.ndarray) -> np.ndarray:
    """The clock of each read's item's next read by this worker (NEVER beyond the order's horizon): within the
    trace by a backward scan, beyond it from the order, all items at once per epoch."""
    following = np.full(len(trace), NEVER, np.int64)
    seen: dict[int, int] = {}
    for t in range(len(trace) - 1, -1, -1):
        following[t] = seen.get(int(trace[t]), NEVER)
        seen[int(trace[t])] = t
    items, first_in_reverse = np.unique(trace[::-1], return_index=True)
    clocks = len(trace) - 1 - first_in_reverse  # each item's last read in the trace
    epochs = len(trace) // order.slice_length
    for e in range(epochs, epochs + HORIZON_EPOCHS_PER_WORKER * order.num_workers + 1):
        if not len(items):
            break
        index = order.positions(items, e) - order.start
        found = (index >= 0) & (index < order.slice_length)
        following[clocks[found]] = e * order.slice_length + index[found]
        items, clocks = items[~found], clocks[~found]
    return following


def _clairvoyant(trace, capacity: int, next_uses, prefetch_bandwidth: float = 0.0, slice_length: int = 0):
    """Belady with bypass on exact next uses, the C++ policy's rule; optional prefetch, within the epoch being read
    (of `slice_length` reads: an epoch that may never be read is not prefetched into). Returns (hit per read,
    prefetch reads per read)."""
    cached: dict[int, int] = {}  # item -> next use
    farthest: list[tuple[int, int]] = []  # max-heap of (-next use, -item), stale entries skipped lazily
    hits = np.zeros(len(trace), bool)
    prefetched = np.zeros(len(trace), np.int64)
    credit, scan = 0.0, 0

    def top():
        while farthest and cached.get(-farthest[0][1]) != -farthest[0][0]:
            heapq.heappop(farthest)
        return (-farthest[0][0], -farthest[0][1]) if farthest else None

    def place(item: int, next_use: int) -> bool:
        """Caches `item` if there is room or it displaces an item needed later; whether it did."""
        if len(cached) >= capacity:
            far = top()
            if far is None or far[0] <= next_use:
                return False
            del cached[far[1]]
            heapq.heappop(farthest)
        cached[item] = next_use
        heapq.heappush(farthest, (-next_use, -item))
        return True

    for t, item in enumerate(trace.tolist()):
        next_use = int(next_uses[t])
        if item in cached:
            hits[t] = True
            cached[item] = next_use
            heapq.heappush(farthest, (-next_use, -item))
        elif next_use != NEVER and capacity > 0:
            place(item, next_use)
        if prefetch_bandwidth > 0 and capacity > 0:
            credit += prefetch_bandwidth
            scan, epoch_end = max(scan, t + 1), (t // slice_length + 1) * slice_length
            while credit >= 1 and scan < epoch_end:
                upcoming = int(trace[scan])
                if upcoming in cached:
                    scan += 1
                    continue
                if not place(upcoming, scan):
                    break  # every cached item is needed before it
                prefetched[t] += 1
                credit -= 1
                scan += 1
            credit = min(credit, 1.0)  # unused background reads do not accumulate
    return hits, prefetched


def _nopfs(trace, capacity: int) -> np.ndarray:
    """NoPFS's placement: the `capacity` items this worker reads most often over the trace (ties: read first),
    each cached at its first read, never evicted."""
    items, first, counts = np.unique(trace, return_index=True, return_counts=True)
    ranked = np.lexsort((first, -counts))[:capacity]
    placed = set(items[ranked].tolist())
    cached: set[int] = set()
    hits = np.zeros(len(trace), bool)
    for t, item in enumerate(trace.tolist()):
        if item in cached:
            hits[t] = True
        elif item in placed:
            cached.add(item)
    return hits


def replay_worker(policy: str, order: SeededOrder, capacity: int, epochs: int, prefetch_bandwidth: float = 0.0):
    """One worker's reads through `policy` with room for `capacity` items: (hit per read, prefetch reads per
    read)."""
    trace = worker_trace(order, epochs)
    none = np.zeros(len(trace), np.int64)
    if policy == "clairvoyant":
        return _clairvoyant(trace, capacity, exact_next_uses(order, trace), prefetch_bandwidth, order.slice_length)
    if policy == "nopfs":
        return _nopfs(trace, capacity), none
    if policy in ("minio", "lru", "opt"):
        future = simulation._next_uses(trace.tolist()) if policy == "opt" else []
        return np.asarray(simulation.POLICIES[policy](trace.tolist(), capacity, future), bool), none
    raise ArgumentError(f"policy must be one of {POLICIES}, got {policy!r}")


def replay(policy: str, order: SeededOrder, capacity: int, epochs: int) -> list[int]:
    """The worker's hits per epoch: what a C++ store with `policy` and room for `capacity` items hits on
    `order.dataset(epochs)` (tests/test_clairvoyant_cache.py compares them)."""
    hits, _ = replay_worker(policy, order, capacity, epochs)
    return hits.reshape(epochs, order.slice_length).sum(axis=1).tolist()


def simulate_workers(
    policies: Sequence[str],
    num_items: int,
    num_workers: int,
    capacity: float,
    epochs: int,
    seed: int = 0,
    prefetch_bandwidth: float = 0.0,
    batch_size: int = 32,
    progress: bool = False,
    read_threads: int | None = None,
) -> list[PolicyResult]:
    """Every policy on every worker's slice of `epochs` epochs of SeededOrder(num_items, seed, num_workers):
    per-worker caches of `capacity` (a fraction of num_items) items each, the workers on one node of
    `read_threads` read threads (default 4 per worker) for the fetch times. `progress`: a bar on stderr counting
    the workers' replays."""
    num_items = check_int("num_items", num_items, 1)
    num_workers = check_int("num_workers", num_workers, 1, num_items)
    epochs = check_int("epochs", epochs, 2)
    batch_size = check_int("batch_size", batch_size, 1)
    read_threads = 4 * num_workers if read_threads is None else check_int("read_threads", read_threads, num_workers)
    capacity = check_number("capacity", capacity, 0, 1, "a fraction of the items")
    prefetch_bandwidth = check_number("prefetch_bandwidth", prefetch_bandwidth, 0, what="a number of reads per read")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise ArgumentError(f"policies must be of {POLICIES}, got {list(policies)!r}")
    simulation.check_trace_size(num_items, epochs)
    slots = int(round(capacity * num_items))
    orders = [SeededOrder(num_items, seed, num_workers, w) for w in range(num_workers)]
    results = []
    with Progress(len(policies) * num_workers, "worker replay", enabled=progress) as bar:
        for policy in policies:
            workers = []
            for order in orders:
                hits, prefetched = replay_worker(policy, order, slots, epochs, prefetch_bandwidth)
                by_epoch = lambda values: values.reshape(epochs, -1).sum(axis=1).tolist()  # noqa: E731
                reads = (~hits).astype(np.int64) + prefetched
                workers.append(WorkerResult(by_epoch(hits), by_epoch(~hits), by_epoch(prefetched), ~hits, reads))
                bar.update(len(results) * num_workers + len(workers))
            slice_length = min(o.slice_length for o in orders)
            trimmed = _trimmed(workers, slice_length, epochs)
            results.append(PolicyResult(policy, trimmed, slice_length, batch_size, read_threads))
    return results


def _trimmed(workers: list[WorkerResult], slice_length: int, epochs: int) -> list[WorkerResult]:
    """Miss flags cut to the shortest slice per epoch (slices differ by at most one read), so steps align."""
    trimmed = []
    for w in workers:
        cut = {
            field: np.concatenate([e[:slice_length] for e in np.array_split(getattr(w, field), epochs)])
            for field in ("miss_flags", "storage_reads")
        }
        trimmed.append(dataclasses.replace(w, **cut))
    return trimmed


def format_table(results: list[PolicyResult]) -> str:
    """Per policy: hit ratio, storage reads, imbalance, and the slowest worker's fetch time per step of its storage
    reads (in reads of one thread) with the read threads equal and split by Lobster's rule, and the bound no split
    beats."""
    threads = results[0].read_threads if results else 0
    lines = [
        f"{'policy':<12}{'hit ratio':>10}{'storage reads/epoch':>21}{'of which prefetch':>19}{'imbalance':>11}"
        f"{'fetch equal':>13}{'fetch split':>13}{'split/equal':>13}{'bound':>9}",
    ]
    for r in results:
        fetch = r.fetch
        lines.append(
            f"{r.policy:<12}{r.hit_ratio:>10.4f}{r.storage_reads_per_epoch:>21,.0f}"
            f"{r.prefetch_reads_per_epoch:>19,.0f}{r.imbalance:>11.3f}"
            f"{fetch.equal:>13.2f}{fetch.split:>13.2f}{fetch.ratio:>13.3f}{fetch.bound:>9.2f}"
        )
    lines.append(
        f"fetch: the slowest worker's time per step for its storage reads, in reads of one of {threads} read threads, "
        "equal or split by Lobster's rule; bound: all reads over all threads"
    )
    return "\n".join(lines)
