"""minio_cache: the Dataset.apply transform that puts a MinIOCache in front of a fetch function.

Per pass over the keys (an epoch), built from graph ops only, so it runs in parallel, on tf.data service workers,
and under Keras' per-epoch iterators::

    begin pass -> keys -> map(parallel): Lookup(key) ? cached tensors : fetch(key), then Insert(key, fetched)
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops
from tfliquid.cache.minio_cache import MinIOCache, each_pass

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


def typed_key(key: tf.Tensor) -> tf.Tensor:
    """The cache key of a dataset key: its dtype, ":", its value ("string:a.jpg", "int64:1"). The integer 1 and
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
        upcoming items of the order that the cache would keep, soonest first, into spare room or in place of
        items needed later. They run in the same parallel map call, after its own read, so ahead of the
        consumer; the stats count them as `prefetch_reads`, apart from the demand misses. 0: none.

    The keys must be scalar strings (e.g. file paths) or integers; they name the items, so a key must always
    fetch the same item. Partial epochs are fine; the cache outlives every iterator.

    >>> files = tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths))   # reshuffled every epoch
    >>> images = files.apply(tfliquid.minio_cache(tf.io.read_file, 8 << 30))   # 8 GiB of raw JPEGs
    >>> images = images.map(decode_and_augment, num_parallel_calls=tf.data.AUTOTUNE)
    """
    if not callable(fetch):
        raise TypeError(f"fetch must be callable, got {fetch!r}")
    if cache is None:
        if capacity_bytes is None:
            raise ValueError("minio_cache needs capacity_bytes or cache")
        cache = MinIOCache(capacity_bytes)
    elif not isinstance(cache, MinIOCache):
        raise TypeError(f"cache must be a tfliquid.MinIOCache, got {type(cache).__name__}")
    elif capacity_bytes is not None and capacity_bytes != cache.capacity_bytes:
        raise ValueError(
            f"capacity_bytes={capacity_bytes} contradicts the cache's {cache.capacity_bytes}; give one or the other"
        )
    if not (isinstance(prefetch_bandwidth, (int, float)) and 0 <= prefetch_bandwidth < float("inf")):
        raise ArgumentError(f"prefetch_bandwidth must be a number of reads >= 0, got {prefetch_bandwidth!r}")
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
            raise TypeError(f"minio_cache needs a dataset of scalar string or integer keys, got {key_spec}")
        fetched_spec = keys.take(0).map(fetch).element_spec  # traces fetch once, for its output structure
        specs = tf.nest.flatten(fetched_spec)
        for spec in specs:
            if type(spec) is not tf.TensorSpec or spec.dtype not in _STORABLE:
                raise TypeError(f"fetch must return dense tensors of numbers, bool or string; got {spec}")
        dtypes = [spec.dtype for spec in specs]

        def fetch_and_insert(key, pass_id, prefetched: bool):
            """fetch(key)'s tensors, flattened, once offered to the cache."""
            values = tf.nest.flatten(fetch(key))
            admitted = load_ops().liquid_cache_insert(
                typed_key(key), pass_id, values, prefetched=prefetched, **cache.op_attrs
            )
            with tf.control_dependencies([admitted]):
                return [tf.identity(v) for v in values]

        def lookup_or_fetch(key, pass_id):
            hit, cached = load_ops().liquid_cache_lookup(typed_key(key), pass_id, dtypes=dtypes, **cache.op_attrs)

            def from_cache():
                shaped = [tf.ensure_shape(value, spec.shape) for value, spec in zip(cached, specs)]
                return tf.nest.pack_sequence_as(fetched_spec, shaped)

            def from_fetch():
                return tf.nest.pack_sequence_as(fetched_spec, fetch_and_insert(key, pass_id, prefetched=False))

            item = tf.cond(hit, from_cache, from_fetch)
            if not prefetch_bandwidth:
                return item
            with tf.control_dependencies(tf.nest.flatten(item)):  # after this read, as the simulator counts
                upcoming = load_ops().liquid_cache_plan_prefetch(prefetch_bandwidth, **cache.op_attrs)
            with tf.control_dependencies([prefetch(upcoming, pass_id)]):
                return tf.nest.map_structure(tf.identity, item)

        def prefetch(upcoming, pass_id):
            """Fetches and inserts the planned items one after another; returns their count."""

            def fetch_one(i):
                inserted = fetch_and_insert(tf.cast(upcoming[i], key_spec.dtype), pass_id, prefetched=True)
                with tf.control_dependencies(inserted):
                    return i + 1

            return tf.while_loop(lambda i: i < tf.size(upcoming), fetch_one, [tf.constant(0)])

        def one_pass(pass_id):
            return keys.map(
                lambda key: lookup_or_fetch(key, pass_id),
                num_parallel_calls=num_parallel_calls,
                deterministic=deterministic,
            )

        return each_pass(cache, one_pass)

    return _apply_fn
