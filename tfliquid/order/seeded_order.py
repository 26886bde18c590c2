"""SeededOrder: the epoch order of data-parallel workers as a first-class object (docs/formats/seeded-order.md).

Every epoch is a fresh permutation of the items, cut into one contiguous slice per worker; the permutation is a
seeded Feistel network, so any process computes the same order and can answer "where is item x in epoch e" in
O(1), hence "when does this worker next need x", without materialising epochs. This module is the readable
oracle; ops/order/seeded_order.cc computes the same bits for the `clairvoyant` cache policy and the keys op.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError

FORMAT_VERSION = 1
ROUNDS = 6
HORIZON_EPOCHS_PER_WORKER = 64
_U64 = np.uint64


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping)."""
    with np.errstate(over="ignore"):
        x = x + _U64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def _u64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.uint64)


@dataclasses.dataclass(frozen=True)
class SeededOrder:
    """Worker `worker_index`'s part of a seeded per-epoch shuffle of `num_items` items over `num_workers` workers.

    >>> order = SeededOrder(1_000_000, seed=7, num_workers=4, worker_index=1)
    >>> order.keys(epoch=3)            # this worker's 250,000 items of epoch 3, in reading order
    >>> order.next_use(item=42, epoch=3, index=10)   # (epoch, index) of its next read by this worker, or None

    Over all workers every item is read exactly once per epoch; the same arguments give the same order in every
    process.
    """

    num_items: int
    seed: int
    num_workers: int = 1
    worker_index: int = 0

    def __post_init__(self):
        check_int("num_items", self.num_items, 1, 1 << 62)
        check_int("seed", self.seed, 0, (1 << 64) - 1)
        check_int("num_workers", self.num_workers, 1)
        if self.num_workers > self.num_items:  # every worker's slice holds an item: a clock, a next use
            items = f"{self.num_items} item" + ("s" if self.num_items > 1 else "")
            raise ArgumentError(
                f"an order of {items} has fewer items than num_workers={self.num_workers}: every worker reads at "
                f"least one per epoch. An order over a dataset's records needs a record per worker: convert it "
                f"with --images-per-record N, N <= its images / {self.num_workers}"
            )
        check_int("worker_index", self.worker_index, 0, self.num_workers - 1)

    @property
    def _half_bits(self) -> int:
        return max(1, -(-(self.num_items - 1).bit_length() // 2))

    def slice_start(self, worker: int) -> int:
        """The first position of worker `worker`'s slice (worker num_workers: num_items)."""
        return worker * self.num_items // self.num_workers

    @property
    def start(self) -> int:
        return self.slice_start(self.worker_index)

    @property
    def slice_length(self) -> int:
        """Items this worker reads per epoch."""
        return self.slice_start(self.worker_index + 1) - self.start

    def _round_keys(self, epoch: int) -> list[np.uint64]:
        base = _mix(_u64(self.seed) ^ _mix(_u64(epoch)))
        return [_mix(base + _u64(r)) for r in range(ROUNDS)]

    def _feistel(self, values: np.ndarray, epoch: int, inverse: bool) -> np.ndarray:
        h = _U64(self._half_bits)
        mask = _U64((1 << self._half_bits) - 1)
        keys = self._round_keys(epoch)
        left, right = values >> h, values & mask
        for r in reversed(range(ROUNDS)) if inverse else range(ROUNDS):
            if inverse:
                left, right = right ^ (_mix(left ^ keys[r]) & mask), left
            else:
                left, right = right, left ^ (_mix(right ^ keys[r]) & mask)
        return (left << h) | right

    def _walk(self, values, epoch: int, inverse: bool) -> np.ndarray:
        """The Feistel permutation of [0, 4^h) restricted to [0, num_items) by cycle walking."""
        result = self._feistel(_u64(values), epoch, inverse)
        outside = result >= _U64(self.num_items)
        while outside.any():
            result[outside] = self._feistel(result[outside], epoch, inverse)
            outside = result >= _U64(self.num_items)
        return result.astype(np.int64)

    def _checked(self, name: str, values, epoch) -> np.ndarray:
        """`values` as an int64 array, if every one is in [0, num_items) and `epoch` is an epoch: a value outside
        would have no place in an epoch's permutation (its cycle walk need not end)."""
        check_int("epoch", epoch, 0)
        array = np.atleast_1d(np.asarray(values))
        if array.dtype.kind not in "iu" or array.ndim != 1:
            raise ArgumentError(f"{name} must be integers (a scalar or a vector), got {values!r}")
        if array.size and (array.min() < 0 or array.max() >= self.num_items):
            raise ArgumentError(f"{name} must be in [0, {self.num_items}), got {values!r}")
        return array.astype(np.int64)

    def positions(self, items, epoch: int) -> np.ndarray:
        """Where each of `items` (in [0, num_items)) is read in epoch `epoch`, among all workers' reads."""
        return self._walk(self._checked("items", items, epoch), epoch, inverse=False)

    def items_at(self, positions, epoch: int) -> np.ndarray:
        """The items read at global `positions` (in [0, num_items)) of epoch `epoch`."""
        return self._walk(self._checked("positions", positions, epoch), epoch, inverse=True)

    def global_order(self, epoch: int) -> np.ndarray:
        """Every item, in the order epoch `epoch` reads them across all workers."""
        return self.items_at(np.arange(self.num_items), epoch)

    def keys(self, epoch: int) -> np.ndarray:
        """This worker's items of epoch `epoch`, in reading order (int64)."""
        return self.items_at(np.arange(self.start, self.start + self.slice_length), epoch)

    def epoch_images(self, epoch: int, item_images) -> int:
        """The images this worker reads in epoch `epoch`, when item i holds `item_images[i]` of them (a record)."""
        return int(np.asarray(item_images, np.int64)[self.keys(epoch)].sum())

    def images_read(self, item_images, epochs: int | None, first_epoch: int = 0) -> int | None:
        """The images this worker reads in `epochs` epochs from `first_epoch` (as `epoch_images`); None: without
        end (epochs None)."""
        if epochs is None:
            return None
        return sum(self.epoch_images(e, item_images) for e in range(first_epoch, first_epoch + epochs))

    def next_use(self, item: int, epoch: int, index: int) -> tuple[int, int] | None:
        """When this worker next reads `item` after its read number `index` of epoch `epoch`: (epoch, index), or
        None if not within HORIZON_EPOCHS_PER_WORKER x num_workers epochs (docs/formats/seeded-order.md)."""
        items = self._checked("item", item, epoch)
        for e in range(epoch, epoch + HORIZON_EPOCHS_PER_WORKER * self.num_workers + 1):
            i = int(self._walk(items, e, inverse=False)[0]) - self.start
            if 0 <= i < self.slice_length and (e > epoch or i > index):
                return e, i
        return None

    def clock(self, epoch: int, index: int) -> int:
        """The worker's access number of read `index` in epoch `epoch`: epoch x slice length + index."""
        return epoch * self.slice_length + index

    @property
    def spec(self) -> str:
        """The order as the ops take it (the cache_order attribute): "num_items,seed,num_workers,worker_index"."""
        return f"{self.num_items},{self.seed},{self.num_workers},{self.worker_index}"

    def dataset(self, epochs: int | None = None, first_epoch: int = 0):
        """A tf.data.Dataset of this worker's int64 keys, epoch after epoch (`epochs` of them from `first_epoch`;
        None: without end), computed in the graph by the C++ op (runs on tf.data service workers). Put it before
        `tfliquid.minio_cache(fetch, cache=MinIOCache(..., policy="clairvoyant", order=self))`."""
        return self.epochs_dataset(epochs, first_epoch).map(self.epoch_keys).unbatch()

    def epochs_dataset(self, epochs: int | None = None, first_epoch: int = 0):
        """A tf.data.Dataset of the epoch numbers `first_epoch`, ... (`epochs` of them; None: without end)."""
        import tensorflow as tf

        first_epoch = check_int("first_epoch", first_epoch, 0, 1 << 61)
        count = (1 << 61) if epochs is None else check_int("epochs", epochs, 0)
        return tf.data.Dataset.range(first_epoch, first_epoch + count)

    def epoch_keys(self, epoch):
        """This worker's keys of epoch `epoch` (an int64 scalar tensor) as an int64 vector, by the C++ op: the graph
        twin of `keys`."""
        from tfliquid._lib import load_ops

        return load_ops().liquid_seeded_order_keys(epoch, order=self.spec)

    def for_worker(self, worker_index: int) -> SeededOrder:
        if not 0 <= worker_index < self.num_workers:
            raise ArgumentError(f"worker_index must be in [0, {self.num_workers}), got {worker_index}")
        return dataclasses.replace(self, worker_index=worker_index)


def checked_order(order, cache, num_records: int, epochs=None, first_epoch: int = 0) -> SeededOrder | None:
    """A dataset's order: its `order` argument or, when None, the order of its clairvoyant `cache` (a
    `tfliquid.MinIOCache` or None), which ranks the records by their items in that order, so that the order is
    given once; checked against the records, the cache and the `epochs` and `first_epoch` arguments, which choose
    epochs of an order."""
    if order is None and cache is not None:
        order = cache.order
    if order is None and (epochs is not None or first_epoch != 0):
        raise ArgumentError("epochs and first_epoch choose epochs of an order: pass order= too")
    if order is not None and not isinstance(order, SeededOrder):
        raise ArgumentError(f"order must be a tfliquid.order.SeededOrder or None, got {order!r}")
    if order is not None and order.num_items != num_records:
        raise ArgumentError(f"order is over {order.num_items} items, the dataset has {num_records} records")
    if cache is not None and cache.order is not None and cache.order != order:
        raise ArgumentError(
            f"a clairvoyant cache ranks the records by this dataset's order, so they must be one: give the order to "
            f"the cache only ({cache.order!r}), got order={order!r}"
        )
    return order


def derived_seed(seed: int, epoch, index, salt: int = 0):
    """The int64 seed (a scalar tensor) of thing `index` (a record, a batch) of epoch `epoch` under `seed`, salted by
    the kind of thing: the one formula of every seed a dataset read in a seeded order derives, the same in every
    process and rerun, so that a restarted worker shuffles what it reads as before."""
    import tensorflow as tf

    key = tf.constant([seed % (1 << 63), salt], tf.int64)
    for value in (epoch, index):
        key = tf.random.experimental.stateless_fold_in(key, tf.cast(value, tf.int64))
    return tf.random.stateless_uniform([], key, minval=None, maxval=None, dtype=tf.int64)
