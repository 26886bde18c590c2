"""Access-trace simulation of cache policies under per-epoch shuffling (CoorDL's section 6.1 argument).

    >>> print(tfliquid.cache.simulate("lru", num_items=10_000, capacity=5_000, epochs=4))

Every epoch reads every item once in a fresh random order. Items have unit size, so capacity is in items. The
`minio` and `lru` policies are the admission and eviction rules of the C++ policies of the same names (ops/cache/
policy.h, whose registry lists them: `tfliquid.cache.store_policies()`), step for step; the tests replay one trace
through both and compare every epoch's hits, and require a twin here for every C++ policy that needs no seeded
order (`clairvoyant`'s twin is in tfliquid.cache.multiworker). `opt`, Belady's clairvoyant optimum, is the bound
they are measured against.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
from collections.abc import Callable, Sequence

import numpy as np

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError

__all__ = ["POLICIES", "Simulation", "simulate", "epoch_orders"]

# The policies replay every read in Python, each held in lists (about 100 bytes a read): 20 million reads take
# about 2 GB and minutes per policy. Larger traces are refused rather than left to exhaust the machine's memory.
MAX_READS = 20_000_000


def check_trace_size(num_items: int, epochs: int) -> None:
    """ArgumentError if num_items x epochs reads exceed MAX_READS."""
    if num_items * epochs > MAX_READS:
        raise ArgumentError(
            f"{num_items} items x {epochs} epochs = {num_items * epochs:,} reads to replay; the simulation replays "
            f"at most {MAX_READS:,} (fewer items or epochs: hit ratios depend on the cache's share, not the count)"
        )


def _minio(trace: Sequence[int], capacity: int, future: Sequence[int]) -> list[bool]:
    """Admit while there is room; never evict."""
    cached: set[int] = set()
    hits = []
    for item in trace:
        hit = item in cached
        if not hit and len(cached) < capacity:
            cached.add(item)
        hits.append(hit)
    return hits


def _lru(trace: Sequence[int], capacity: int, future: Sequence[int]) -> list[bool]:
    """Admit every item, evicting the least recently used (the OS page cache's approximation)."""
    cached: collections.OrderedDict[int, None] = collections.OrderedDict()
    hits = []
    for item in trace:
        hit = item in cached
        if hit:
            cached.move_to_end(item)
        elif capacity > 0:
            if len(cached) >= capacity:
                cached.popitem(last=False)
            cached[item] = None
        hits.append(hit)
    return hits


def _opt(trace: Sequence[int], capacity: int, future: Sequence[int]) -> list[bool]:
    """Belady's clairvoyant policy with bypass: on a miss with a full cache, keep whichever of the cached items
    and the new one is used again soonest; the upper bound of any policy."""
    cached: dict[int, int] = {}  # item -> its next use
    farthest: list[tuple[int, int]] = []  # max-heap of (-next use, item), with stale entries skipped lazily
    hits = []
    for t, item in enumerate(trace):
        hit = item in cached
        hits.append(hit)
        if hit:
            cached[item] = future[t]
            heapq.heappush(farthest, (-future[t], item))
            continue
        if capacity == 0:
            continue
        if len(cached) >= capacity:
            while cached.get(farthest[0][1]) != -farthest[0][0]:
                heapq.heappop(farthest)
            if -farthest[0][0] <= future[t]:
                continue  # every cached item is needed before this one: bypass
            del cached[heapq.heappop(farthest)[1]]
        cached[item] = future[t]
        heapq.heappush(farthest, (-future[t], item))
    return hits


POLICIES: dict[str, Callable] = {"minio": _minio, "lru": _lru, "opt": _opt}


def epoch_orders(num_items: int, epochs: int, seed: int = 0) -> list[np.ndarray]:
    """The trace: a fresh random permutation of the items for every epoch."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(num_items) for _ in range(epochs)]


@dataclasses.dataclass(frozen=True)
class Simulation:
    policy: str
    num_items: int
    capacity: int
    hits: list[int]  # per epoch

    @property
    def hit_ratios(self) -> list[float]:
        return [h / self.num_items for h in self.hits]

    def __str__(self) -> str:
        head = f"{self.policy}: {self.num_items} items, capacity {self.capacity} ({self.capacity / self.num_items:.1%})"
        return "\n".join([head] + [f"  epoch {i}: hit ratio {r:.4f}" for i, r in enumerate(self.hit_ratios)])


def simulate(policy: str, num_items: int, capacity: int, epochs: int, seed: int = 0) -> Simulation:
    """Per-epoch hits of `policy` ("minio", "lru" or "opt") on `epochs` shuffled passes over `num_items` items
    with room for `capacity` of them. MinIO hits exactly min(capacity, num_items) per epoch after the first."""
    if policy not in POLICIES:
        raise ArgumentError(f"policy must be one of {sorted(POLICIES)}, got {policy!r}")
    num_items = check_int("num_items", num_items, 1)
    capacity = check_int("capacity", capacity, 0)
    epochs = check_int("epochs", epochs, 1)
    check_trace_size(num_items, epochs)
    trace = np.concatenate(epoch_orders(num_items, epochs, seed)).tolist()
    hits = POLICIES[policy](trace, capacity, _next_uses(trace) if policy == "opt" else [])
    per_epoch = np.asarray(hits, dtype=np.int64).reshape(epochs, num_items).sum(axis=1)
    return Simulation(policy, num_items, capacity, per_epoch.tolist())


def _next_uses(trace: Sequence[int]) -> list[int]:
    """For every access, when the same item is accessed next (len(trace) if never)."""
    following = [len(trace)] * len(trace)
    seen: dict[int, int] = {}
    for t in range(len(trace) - 1, -1, -1):
        following[t] = seen.get(trace[t], len(trace))
        seen[trace[t]] = t
    return following
