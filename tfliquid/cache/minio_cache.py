"""MinIOCache: a named, never-evict cache of fetched items, in memory or in a directory shared by processes.

The cache itself lives in the op library's process-wide registry (ops/cache/cache.h), under its name: every
dataset, iterator and op naming it shares it, across the iterator re-creation Keras does every epoch and across the
tasks a tf.data service worker runs. This object only names it, opens it, and reads its statistics.
"""

from __future__ import annotations

import dataclasses
import json
import os
import uuid

import tensorflow as tf

from tfliquid._common.checks import check_directory, check_int
from tfliquid._common.errors import ArgumentError, CacheDirectoryError, op_error_message
from tfliquid._lib import load_ops
from tfliquid.cache.policies import cache_attr_names
from tfliquid.order import SeededOrder


@dataclasses.dataclass(frozen=True)
class EpochStats:
    """One pass over the keys (an epoch): lookups and what was admitted during it. `uncacheable` counts the misses
    whose key is too long for an item to hold (over 65,536 bytes, its "string:" or "int64:" prefix included):
    those items are fetched every time and never admitted. `prefetch_reads` are the items fetched ahead of their
    reads (`minio_cache(prefetch_bandwidth=...)`), each a storage read besides the misses; `prefetched_items` the
    ones of them admitted (counted in `admitted_items` too); `closed` the items offered while this process's
    admission was closed (`MinIOCache.admit(False)`), none of them admitted."""

    hits: int
    misses: int
    admitted_items: int
    admitted_bytes: int
    uncacheable: int
    prefetch_reads: int
    prefetched_items: int
    closed: int

    @property
    def hit_ratio(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


@dataclasses.dataclass(frozen=True)
class CacheStats:
    """`bytes` and `items` are the whole cache's (for a directory: every process's); `epochs` are this process's
    passes, in the order they began (with several datasets on one cache, each dataset's passes are entries)."""

    capacity_bytes: int
    bytes: int
    items: int
    epochs: list[EpochStats]

    def __str__(self) -> str:
        lines = [f"{self.items} items, {self.bytes} of {self.capacity_bytes} bytes"]
        for i, e in enumerate(self.epochs):
            uncacheable = f", {e.uncacheable} uncacheable" if e.uncacheable else ""
            prefetched = f", {e.prefetch_reads} prefetch reads" if e.prefetch_reads else ""
            lines.append(
                f"  epoch {i}: {e.hits} hits, {e.misses} misses (hit ratio {e.hit_ratio:.3f}), "
                f"{e.admitted_items} admitted{uncacheable}{prefetched}"
            )
        return "\n".join(lines)


_MAX_CAPACITY = (1 << 63) - 1  # an int64 attribute


class MinIOCache:
    """CoorDL's MinIO cache: items are admitted as they are fetched until `capacity_bytes` is full, then never
    evicted, so every epoch after the first hits exactly the cached fraction, however the keys are shuffled.

    Args:
      capacity_bytes: the byte budget, counted as the items' encoded size (their tensors' bytes plus a few bytes
        of header per tensor; docs/formats/cache.md). Never exceeded.
      directory: None keeps items in this process's memory. A directory (e.g. under /dev/shm) is shared by every
        process on the machine that opens it, with one budget for all (hyperparameter-search trials); items are
        published atomically and checksummed. The capacity is fixed when the directory is first used.
      name: identifies the cache within a process (and on tf.data service workers, which rebuild the pipeline).
        Default: unique for a memory cache, derived from the path for a directory.
      policy: "minio"; "clairvoyant" (with `order`): Belady's rule on the known future of data-parallel workers,
        for a worker reading its slice of a seeded order, where MinIO holds items it will rarely see again
        (docs/cache.md); or "lru": the page-cache-like baseline, which admits every item and evicts the least
        recently used, here to be compared with, not to be used. The list: `tfliquid.cache.store_policies()`.
        A policy that evicts (lru, clairvoyant) runs on a directory only if this process holds it alone.
      order: the `tfliquid.order.SeededOrder` of this worker's items, which the "clairvoyant" policy needs: the
        items are the integer keys of `minio_cache` (read as `order.dataset()` yields them) or the records of a
        `PCRDataset` or `LiquidDataset` given this cache, which then read this order.

    >>> cache = tfliquid.MinIOCache(8 << 30)                       # 8 GiB
    >>> ds = keys.apply(tfliquid.minio_cache(tf.io.read_file, cache=cache))
    >>> print(cache.stats())
    """

    def __init__(
        self,
        capacity_bytes: int,
        directory: str | os.PathLike | None = None,
        name: str | None = None,
        policy: str = "minio",
        order: SeededOrder | None = None,
    ):
        self._capacity = check_int("capacity_bytes", capacity_bytes, 0, _MAX_CAPACITY)
        self._directory = "" if directory is None else check_directory("directory", directory)
        if name is None:
            name = f"dir:{self._directory}" if self._directory else f"memory:{uuid.uuid4().hex}"
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"name must be a non-empty string, got {name!r}")
        if not isinstance(policy, str):
            raise ArgumentError(f"policy must be a string, got {policy!r}")
        if order is not None and not isinstance(order, SeededOrder):
            raise ArgumentError(f"order must be a tfliquid.order.SeededOrder or None, got {order!r}")
        self._name = name
        self._policy = policy
        self._order = order
        self._released = False
        try:  # opens it now, a released name anew; the op checks the policy, directory and name against others
            load_ops().liquid_cache_open(**self.op_attrs)
        except tf.errors.InvalidArgumentError as e:
            raise ArgumentError(op_error_message(e)) from None
        except tf.errors.OpError as e:  # the directory: not creatable or writable, or in use under other settings
            raise CacheDirectoryError(op_error_message(e)) from None

    @property
    def name(self) -> str:
        return self._name

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def directory(self) -> str | None:
        return self._directory or None

    @property
    def policy(self) -> str:
        return self._policy

    @property
    def order(self) -> SeededOrder | None:
        return self._order

    @property
    def op_attrs(self) -> dict:
        """The attributes by which tfliquid's ops name this cache: each `cache_X` attribute the ops declare is this
        cache's X."""
        return self._attrs_for("Liquid>CacheStats")

    def _attrs_for(self, op_name: str) -> dict:
        values = {
            "name": self._name,
            "capacity_bytes": self._capacity,
            "directory": self._directory,
            "policy": self._policy,
            "order": "" if self._order is None else self._order.spec,
        }
        return {attr: values[attr.removeprefix("cache_")] for attr in cache_attr_names(op_name)}

    def stats(self) -> CacheStats:
        """Totals and per-epoch counts; a released cache reads as empty (asking does not create it again)."""
        if self._released:
            return CacheStats(self._capacity, 0, 0, [])
        raw = json.loads(load_ops().liquid_cache_stats(**self.op_attrs).numpy())
        epochs = [EpochStats(**p) for p in raw["passes"]]
        return CacheStats(raw["capacity_bytes"], raw["bytes"], raw["items"], epochs)

    def admit(self, admitting: bool) -> None:
        """Opens (True) or closes (False) admission in this process: while closed, misses are fetched and not
        admitted, and the items held still hit. A cache opens admitting. Running pipelines see the change at their
        next miss, so a cache can start filling in the middle of an epoch (what `InputTuner` does with a cache on
        trial)."""
        if not isinstance(admitting, bool):
            raise ArgumentError(f"admitting must be True or False, got {admitting!r}")
        load_ops().liquid_cache_admit(admitting, **self._attrs_for("Liquid>CacheAdmit"))

    def release(self) -> None:
        """Forgets the cache in this process: a memory cache's items are freed once no iterator uses them. A
        directory's items stay on disk (delete the directory to drop them). Pipelines still running on it fail at
        their next element with a FailedPreconditionError instead of filling it again; a new `MinIOCache` with the
        name opens it again, empty."""
        load_ops().liquid_cache_release(**self._attrs_for("Liquid>CacheRelease"))
        self._released = True

    def __enter__(self) -> MinIOCache:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        where = f"directory={self._directory!r}" if self._directory else "memory"
        order = "" if self._order is None else f", order={self._order!r}"
        return f"MinIOCache({self._capacity}, {where}, name={self._name!r}, policy={self._policy!r}{order})"
