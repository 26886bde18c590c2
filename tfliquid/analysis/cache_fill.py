"""What a MinIO cache of a given capacity holds of a dataset: it admits each item that still fits as the first
epoch reads it and never evicts (docs/formats/cache.md), and its items are whole PCR record prefixes or files, so
it holds less than its capacity, by up to its largest item. The what-if's F'(f) takes the share it holds, not the
share of bytes it was sized for: a cache sized for 25% of the benchmark's 10 records of 0.45-0.50 MB holds 2 of
them, 20% of the bytes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ORDERS = 64  # shuffled first epochs the expectation averages
FINE_GRAINED = 1000  # items this many times smaller than the capacity: the last one's waste is below 0.1%


def admitted(costs: np.ndarray, capacity: float) -> np.ndarray:
    """Which of the items arriving in this order MinIO's admission keeps (`costs`: what each counts against the
    capacity, its bytes and header): each item that fits what is left is admitted."""
    kept = np.zeros(len(costs), dtype=bool)
    in_turn = int(np.searchsorted(np.cumsum(costs), capacity, side="right"))  # admitted one after the other
    kept[:in_turn] = True
    room = capacity - costs[:in_turn].sum()
    position = in_turn + 1  # the first that did not fit; smaller ones after it may
    while position < len(costs):
        fitting = np.flatnonzero(costs[position:] <= room)
        if not fitting.size:
            break
        position += int(fitting[0])
        room -= costs[position]
        kept[position] = True
        position += 1
    return kept


def admitted_bytes(sizes: np.ndarray, costs: np.ndarray, capacity: float) -> float:
    """The bytes MinIO's admission keeps of items arriving in this order (`admitted`)."""
    return float(sizes[admitted(costs, capacity)].sum())


def held_share(item_bytes: Sequence[float], header_bytes: float, capacity: float, seed: int = 0) -> float:
    """The expected share of the items' bytes that a MinIO cache of `capacity` bytes holds after a first epoch in
    a shuffled order (the mean over ORDERS seeded orders), each item counting its bytes and `header_bytes`."""
    sizes = np.asarray(item_bytes, dtype=np.float64)
    if not sizes.size or sizes.sum() <= 0:
        raise ValueError("held_share needs the sizes of one or more items")
    costs = sizes + header_bytes
    if costs.sum() <= capacity:
        return 1.0
    if costs.max() * FINE_GRAINED <= capacity:
        return capacity / costs.sum()
    rng = np.random.default_rng(seed)
    orders = (rng.permutation(sizes.size) for _ in range(ORDERS))
    held = [admitted_bytes(sizes[order], costs[order], capacity) for order in orders]
    return float(np.mean(held)) / sizes.sum()
