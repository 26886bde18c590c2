"""The rate of a job whose reads are whole records (PCR record prefixes, files), part of them held by a MinIO cache
and the rest read from storage each epoch, replayed record by record.

F_storage / (1 - h) has the storage reads spread evenly over the epoch. With records that are large against the
epoch they come in lumps: a cache of 90% of the benchmark's 10 records leaves one record of 330 kB on a 3 MB/s
disk, 109 ms of reading in a 168-ms epoch, and the job waits for it whenever the pipeline reached that record
before its read ended (measured 0.94 of the job all cached, where F_storage / (1 - h) has no stall; 80% cached,
two such records: 0.66, where it has 0.83). So the epochs are replayed:

  - the records come in a shuffled order each epoch; the cache holds what its admission kept of the first epoch
    (cache_fill.admitted), and the first epoch, which fills it, is not counted;
  - the read stage opens `read_ahead` records at an epoch's start, then each record when the one read_ahead
    places before it has been consumed (a parallel interleave of k reads opens k records and prefetches 2k more:
    read_ahead 3k; one read at a time: 1); a cached record is ready when opened;
  - storage serves one read at a time at `bytes_per_second`; a read that finds it idle starts `idle_offset`
    seconds later (a disk's seek) or earlier (a read throttle that banks idle time: -50 ms), never ending
    before it was issued;
  - the job consumes the records one after the other at `items_per_second` (what the CPU or the model allows),
    each once it is read; the next epoch's reads start when the last record has been consumed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfliquid.analysis.cache_fill import admitted

ORDERS = 8  # seeded shuffles of the first epoch (what the cache holds) the rate averages
EPOCHS = 12  # epochs replayed after the first, each in a shuffled order
MAX_RECORDS = 256  # beyond this many, records are small against an epoch: reads spread as F_storage / (1 - h) has


def replayed_rate(
    record_bytes: Sequence[float],
    header_bytes: float,
    capacity: float,
    items: int,
    items_per_second: float,
    bytes_per_second: float,
    idle_offset: float,
    read_ahead: int,
    seed: int = 0,
) -> float:
    """Items/s over the epochs after the first, averaged over ORDERS seeded first epochs (module docstring).
    `items` is the epoch's, spread evenly over its records; each record counts its bytes and `header_bytes`
    against the cache's `capacity`."""
    sizes = np.asarray(record_bytes, dtype=np.float64)
    if not sizes.size or items <= 0 or items_per_second <= 0 or bytes_per_second <= 0 or read_ahead < 1:
        raise ValueError("replayed_rate needs records, items, positive rates and a read-ahead of 1 or more")
    consume = items / sizes.size / items_per_second  # seconds per record
    read_seconds = sizes / bytes_per_second
    rng = np.random.default_rng(seed)
    rates = []
    for _ in range(ORDERS):
        first = rng.permutation(sizes.size)
        cached = np.zeros(sizes.size, dtype=bool)
        cached[first] = admitted(sizes[first] + header_bytes, capacity)
        link_free, clock = -np.inf, 0.0
        for _ in range(EPOCHS):
            order = rng.permutation(sizes.size)
            epoch_start, ends = clock, []
            for position, record in enumerate(order):
                opened = epoch_start if position < read_ahead else ends[position - read_ahead]
                ready = opened
                if not cached[record]:
                    link_free = max(link_free, opened + idle_offset) + read_seconds[record]
                    ready = max(opened, link_free)
                clock = max(clock, ready) + consume
                ends.append(clock)
        rates.append(EPOCHS * items / clock)
    return float(np.mean(rates))
