"""Cache policies compared on one shuffled access trace, on one worker or several: what `tfliquid simulate cache`
runs and prints.

    >>> print(tfliquid.cache.simulate_policies(num_items=20_000, capacity=0.5))   # per-epoch hit ratios
    >>> print(tfliquid.cache.simulate_policies(num_items=20_000, capacity=0.0625, num_workers=4))  # per-worker caches
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._common.progress import Progress
from tfliquid.cache import multiworker, simulation

__all__ = ["PolicyComparison", "simulate_policies"]

ONE_WORKER_POLICIES = ("minio", "lru", "opt")


@dataclasses.dataclass(frozen=True)
class PolicyComparison:
    """The policies' results on one trace; `str()` is the table `tfliquid simulate cache` prints."""

    num_items: int
    capacity: int  # items each cache holds
    epochs: int
    num_workers: int | None  # None: one reader, one cache
    # One reader: a Simulation per policy (hits per epoch); workers: a multiworker.PolicyResult per policy.
    results: tuple[simulation.Simulation, ...] | tuple[multiworker.PolicyResult, ...]

    def __str__(self) -> str:
        if self.num_workers is not None:
            return "\n".join(
                [
                    f"{self.num_items} items, {self.num_workers} workers, a cache of {self.capacity} "
                    f"({self.capacity / self.num_items:.2%}) each; epochs 1-{self.epochs - 1} (epoch 0 fills the "
                    "caches)",
                    multiworker.format_table(list(self.results)),
                ]
            )
        lines = [
            f"{self.num_items} items, cache of {self.capacity} ({self.capacity / self.num_items:.1%}); hit ratio per "
            "epoch",
            "epoch  " + "".join(f"{r.policy:>8}" for r in self.results),
        ]
        for epoch in range(self.epochs):
            lines.append(f"{epoch:>5}  " + "".join(f"{r.hit_ratios[epoch]:>8.4f}" for r in self.results))
        return "\n".join(lines)


def simulate_policies(
    policies: str | Sequence[str] | None = None,
    num_items: int = 10_000,
    capacity: float = 0.5,
    epochs: int = 5,
    seed: int = 0,
    num_workers: int | None = None,
    prefetch_bandwidth: float = 0.0,
    progress: bool = True,
    batch_size: int = 32,
    read_threads: int | None = None,
) -> PolicyComparison:
    """Replays `epochs` shuffled passes over `num_items` items through each policy's cache.

    Args:
      policies: names, a list or comma-separated; default minio, lru and opt, and with `num_workers` every policy
        of `tfliquid.cache.multiworker.POLICIES` (nopfs and clairvoyant too).
      capacity: each cache's size: a fraction of the items if < 1, else a whole number of items.
      num_workers: None: one reader through one cache, hit ratios per epoch (`tfliquid.cache.simulate` per
        policy). N: N data-parallel workers, each reading its slice of a seeded order through a cache of its own,
        hit ratio, storage reads and imbalance per policy (`multiworker.simulate_workers`).
      prefetch_bandwidth: with `num_workers`, background reads per read the clairvoyant policy may prefetch with.
      progress: a bar on stderr counting the policies (the workers' replays).
      batch_size: with `num_workers`, each worker's reads per training step: the steps of the imbalance and the
        fetch times.
      read_threads: with `num_workers`, the node's read threads shared by its workers (default 4 per worker), for
        the slowest worker's fetch time per step with them split equally and by Lobster's rule
        (`tfliquid.cache.load_balance`).
    """
    num_items = check_int("num_items", num_items, 1)
    capacity = check_number("capacity", capacity, 0, what="a fraction of the items or a number of items")
    if capacity >= 1 and capacity != int(capacity):
        raise ArgumentError(f"capacity must be a fraction in [0, 1) or a whole number of items, got {capacity}")
    slots = round(capacity * num_items) if capacity < 1 else int(capacity)
    names = policies.split(",") if isinstance(policies, str) else policies
    if num_workers is not None:
        names = multiworker.POLICIES if names is None else names
        results = multiworker.simulate_workers(
            names,
            num_items,
            num_workers,
            slots / num_items,
            epochs,
            seed,
            prefetch_bandwidth,
            batch_size=batch_size,
            progress=progress,
            read_threads=read_threads,
        )
        return PolicyComparison(num_items, slots, epochs, num_workers, tuple(results))
    if prefetch_bandwidth:
        raise ArgumentError("prefetch_bandwidth is for num_workers: the clairvoyant policy needs a seeded order")
    if read_threads is not None:
        raise ArgumentError("read_threads is for num_workers: it splits a node's read threads among its workers")
    names = ONE_WORKER_POLICIES if names is None else names
    results = []
    with Progress(len(names), "policy", enabled=progress) as bar:
        for policy in names:
            results.append(simulation.simulate(policy, num_items, slots, epochs, seed))
            bar.update(len(results))
    return PolicyComparison(num_items, slots, epochs, None, tuple(results))
