"""The MinIO cache as one dataset transform: `cached` wraps the dataset that fetches one item, as tf.data's
CacheDataset wraps its input, and `minio_cache` applies it to every key of a dataset of keys. PCRDataset and
LiquidDataset apply `cached` to the read of each record, so what they cache is a record's bytes.

Per pass over the items (an epoch), built from C++ dataset ops only, so it runs in parallel, on tf.data service
workers, under Keras' per-epoch iterators, and checkpoints::

    CachePassDataset (a new pass) -> per item: CacheDataset(fetch of the item): a hit yields the cached elements
    without running the fetch; a miss runs it, yields its elements and offers them to the cache
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._common.op_dataset import OpDataset
from tfliquid._lib import load_ops
from tfliquid.cache.minio_cache import MinIOCache

AUTOTUNE = tf.data.AUTOTUNE
_STORABLE = {
    tf.bool,
    tf.string,
    tf.half,
    tf.bfloat16,
    tf.float32,
    tf.float64,
    tf.complex64,
    tf.complex128,
    tf.int8,
    tf.int16,
    tf.int32,
    tf.int64,
    tf.uint8,
    tf.uint16,
    tf.uint32,
    tf.uint64,
}


def cached(
    dataset: tf.data.Dataset,
    name,
    item,
    cache: MinIOCache,
    pass_id,
    *,
    with_hit: bool = False,
    prefetch: bool = False,
) -> tf.data.Dataset:
    """The elements of `dataset`, cached in `cache` as one item called `name`: a hit yields the cached elements and
    never iterates `dataset` (its reads are not made); a miss yields the elements of `dataset` and, once it ends,
    offers them all to the cache, whose policy admits them or not.

    Args:
      dataset: what fetches the item; `name` must always name what it yields (a file's bytes, a record's prefix at
        one group). Its elements' tensors must be numbers, bool or string.
      name: the item's name, a scalar string (at most 65,536 bytes; a longer name is never cached).
      item: the item's number in the cache's seeded order (its clairvoyant policy ranks it by next use), or -1.
      cache: the `MinIOCache`.
      pass_id: the pass (epoch) the lookup counts in, from `each_pass`.
      with_hit: yield (hit, element) pairs, hit a bool: whether the element came from the cache.
      prefetch: the item is one the cache planned to prefetch: it is not looked up, it is offered to the cache as
        a prefetch, and nothing is yielded.
    """
    variant = load_ops().liquid_cache_dataset(
        dataset._variant_tensor,
        name,
        tf.cast(item, tf.int64),
        pass_id,
        with_hit=with_hit,
        prefetch=prefetch,
        **cache.op_attrs,
    )
    spec = (tf.TensorSpec([], tf.bool), dataset.element_spec) if with_hit else dataset.element_spec
    return OpDataset(variant, spec, [dataset])


def each_pass(cache: MinIOCache | None, make_dataset, epoch=-1) -> tf.data.Dataset:
    """make_dataset(pass_id), started anew (with a new pass id from the cache) every time the result is iterated.

    Every epoch iterates the result once, so the cache counts hits per epoch. `epoch`: the epoch of the cache's
    seeded order that the pass reads (its clairvoyant policy places every read in it), or -1 (not known: the
    policy counts reads). Without a cache, pass_id is -1.
    """
    if cache is None:
        return make_dataset(tf.constant(-1, tf.int64))
    variant = load_ops().liquid_cache_pass_dataset(tf.cast(epoch, tf.int64), **cache.op_attrs)
    return OpDataset(variant, tf.TensorSpec([], tf.int64)).flat_map(make_dataset)


def with_pass(cache: MinIOCache | None, dataset: tf.data.Dataset, epoch=-1) -> tf.data.Dataset:
    """The elements of `dataset` as (pass_id, element) pairs: pass_id is a new pass of `cache`, begun each time the
    result is iterated (as `each_pass` begins one), -1 without a cache. Unlike `each_pass`, `dataset` stays the
    pipeline's input, so tf.data service can split it (`ShardingPolicy.DYNAMIC`): each worker's iterator counts in
    a pass of its own cache. `epoch`: as `each_pass`'s."""
    if cache is None:
        return dataset.map(lambda *element: (tf.constant(-1, tf.int64), element[0] if len(element) == 1 else element))
    variant = load_ops().liquid_cache_with_pass_dataset(
        dataset._variant_tensor, tf.cast(epoch, tf.int64), **cache.op_attrs
    )
    return OpDataset(variant, (tf.TensorSpec([], tf.int64), dataset.element_spec), [dataset])


def typed_key(key: tf.Tensor) -> tf.Tensor:
    """The cache's name of a dataset key: its dtype, ":", its value ("string:a.jpg", "int64:1"). The integer 1 and
    the string "1" are different items, so pipelines sharing a cache never get each other's items."""
    value = key if key.dtype == tf.string else tf.strings.as_string(key)
    return tf.strings.join([f"{key.dtype.name}:", value])


def minio_cache(
    fetch,
    capacity_bytes: int | None = None,
    cache: MinIOCache | None = None,
    num_parallel_calls=AUTOTUNE,
    deterministic: bool | None = None,
    prefetch_bandwidth: float = 0.0,
    epoch=-1,
):
    """A `Dataset.apply` transform: a dataset of keys -> what `fetch(key)` returns, through a MinIO cache.

    `fetch` (e.g. `tf.io.read_file`, or `tfliquid.io.read_file`) runs only on cache misses, `num_parallel_calls`
    at a time. Items are admitted as they are fetched until the budget is full and are never evicted, so with keys
    reshuffled every epoch each epoch after the first hits exactly the cached fraction (CoorDL, section 6.1),
    where an LRU page cache thrashes. Cache the raw items (file bytes) and apply the random augmentations after.

    Args:
      fetch: a TensorFlow function key -> a tensor or a nest of dense tensors (numbers, bool, string).
      capacity_bytes: the budget of a new in-memory cache; or pass `cache`.
      cache: a `MinIOCache` to use (e.g. shared by several datasets, or a directory shared by processes).
      num_parallel_calls, deterministic: as in `Dataset.map`.
      prefetch_bandwidth: Lobster's prefetch, for a cache with the "clairvoyant" policy: after each read, up to
        this many more reads (on average; a credit, as in the simulator's `--prefetch-bandwidth`) fetch the
        upcoming items of the epoch being read that the cache would keep, soonest first, into spare room or in
        place of items needed later (never into an epoch not yet read: the reader may stop before it). They run
        in the same parallel call, after its own read, so ahead of the consumer; the stats count them as
        `prefetch_reads`, apart from the demand misses. 0: none.
      epoch: the epoch of a clairvoyant cache's order that the keys are (`SeededOrder.keys(epoch)`: an int or an
        int64 scalar tensor); its policy places every read in it. -1 (the default): the keys are the order's from
        its epoch 0 on, placed by counting the reads, which a worker resuming at a later epoch cannot do: read
        each epoch apart, `order.epochs_dataset(epochs, first_epoch).flat_map(lambda e:
        tf.data.Dataset.from_tensor_slices(order.epoch_keys(e)).apply(minio_cache(fetch, cache=cache, epoch=e)))`.

    The keys must be scalar strings (e.g. file paths) or integers; they name the items, so a key must always
    fetch the same item. An integer key is also the item's number in a clairvoyant cache's order. Partial epochs
    are fine; the cache outlives every iterator, and the pipeline checkpoints.

    >>> files = tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths))   # reshuffled every epoch
    >>> images = files.apply(tfliquid.minio_cache(tf.io.read_file, 8 << 30))   # 8 GiB of raw JPEGs
    >>> images = images.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE)
    """
    if not callable(fetch):
        raise ArgumentError(f"fetch must be callable, got {fetch!r}")
    if cache is None:
        if capacity_bytes is None:
            raise ArgumentError("minio_cache needs capacity_bytes or cache")
        cache = MinIOCache(capacity_bytes)
    elif not isinstance(cache, MinIOCache):
        raise ArgumentError(f"cache must be a tfliquid.MinIOCache, got {type(cache).__name__}")
    elif capacity_bytes is not None and capacity_bytes != cache.capacity_bytes:
        raise ArgumentError(
            f"capacity_bytes={capacity_bytes} contradicts the cache's {cache.capacity_bytes}; give one or the other"
        )
    prefetch_bandwidth = check_number("prefetch_bandwidth", prefetch_bandwidth, 0, what="a number of reads")
    if not isinstance(epoch, tf.Tensor):
        epoch = check_int("epoch (or -1)", epoch, -1)
    if prefetch_bandwidth and cache.order is None:
        raise ArgumentError(
            "prefetch_bandwidth needs a cache that knows the keys' future: "
            "MinIOCache(..., policy='clairvoyant', order=SeededOrder(...))"
        )

    def _apply_fn(keys: tf.data.Dataset) -> tf.data.Dataset:
        key_spec = keys.element_spec
        if (
            not isinstance(key_spec, tf.TensorSpec)
            or key_spec.shape.rank != 0
            or not (key_spec.dtype == tf.string or key_spec.dtype.is_integer)
        ):
            raise ArgumentError(f"minio_cache needs a dataset of scalar string or integer keys, got {key_spec}")
        traced = tf.function(fetch).get_concrete_function(tf.TensorSpec([], key_spec.dtype))
        returned = tf.nest.flatten(traced.structured_outputs)
        if all(value is None for value in returned):  # None, (), {}
            raise ArgumentError("fetch must return a tensor or a nest of tensors (the item); it returned nothing")
        for value in returned:
            if not isinstance(value, tf.Tensor) or value.dtype not in _STORABLE:
                raise ArgumentError(f"fetch must return dense tensors of numbers, bool or string; got {value!r}")

        def item_of(key):
            return tf.cast(key, tf.int64) if key.dtype.is_integer else tf.constant(-1, tf.int64)

        def prefetched(pass_id):
            """The items the cache plans to prefetch after a read, fetched into it; yields nothing."""
            variant = load_ops().liquid_cache_prefetch_dataset(
                tf.constant(float(prefetch_bandwidth), tf.float64), **cache.op_attrs
            )
            planned = OpDataset(variant, tf.TensorSpec([], tf.int64))

            def fetch_into_cache(item):
                key = tf.cast(item, key_spec.dtype)
                fetch_once = tf.data.Dataset.from_tensors(key).map(fetch)
                return cached(fetch_once, typed_key(key), item, cache, pass_id, prefetch=True)

            return planned.flat_map(fetch_into_cache)

        def read(pass_id, key):
            items = cached(tf.data.Dataset.from_tensors(key).map(fetch), typed_key(key), item_of(key), cache, pass_id)
            return items.concatenate(prefetched(pass_id)) if prefetch_bandwidth else items

        keys_in_passes = with_pass(cache, keys, epoch)  # the keys stay the input: tf.data service can split them
        if num_parallel_calls is None or num_parallel_calls == 1:
            return keys_in_passes.interleave(read, cycle_length=1)
        return keys_in_passes.interleave(
            read,
            cycle_length=num_parallel_calls,
            num_parallel_calls=num_parallel_calls,
            deterministic=deterministic,
        )

    return _apply_fn
