"""LiquidDataset: a Liquid dataset read at its ratio, every batch holding each format's share.

Pipeline, graph ops only (it runs on tf.data service workers and checkpoints mid-epoch)::

    per stream (a format's records; with a cache, its cached and its uncached records apart):
        record ids --shuffle--> interleave(one read per record [through the MinIO cache], CRC checked, items)
        --> map(decode as the stream's format)
    choose_from_datasets(streams, pattern)

The pattern names the stream of every element of a pass: batch b takes `format.batch_counts` elements of each
stream, in an order shuffled within the batch. So any `batch_size` consecutive elements (from the start of a pass)
hold each format's exact share, and with a cache, the same number of cached elements: later epochs read the same
number of records' worth of images from storage for every batch (the Liquid paper's constant load, section 4.2).
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from tfliquid._common.checks import check_dataset_path, check_int
from tfliquid._common.errors import ArgumentError
from tfliquid._lib import crc32c_fast
from tfliquid.cache.minio_cache import MinIOCache
from tfliquid.cache.transform import cached, each_pass
from tfliquid.jpeg.decoding import ImageDecoding
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid import items as liquid_items
from tfliquid.order.iterations import each_iteration, epoch_of, unsplittable
from tfliquid.order.seeded_order import SeededOrder, checked_order, derived_seed
from tfliquid.records.dataset import (
    RecordDataset,
    RecordFilesDataset,
    checked_read_queue,
    prefix_name,
    record_bytes,
    record_identities,
)

AUTOTUNE = tf.data.AUTOTUNE
# What the cache stores besides a record's bytes: its name ("record:FILE#bytes=N#header=CRC") and the item
# framing (docs/formats/cache.md). Records are chosen for the cache with this much room each.
_CACHE_OVERHEAD_PER_RECORD = 512
# The salts of the seeds of records, of batches and of records' crops in an order (tfliquid.order.derived_seed).
_RECORD_SEEDS, _BATCH_SEEDS, _CROP_SEEDS = 1, 2, 3
# What tf.data service's dynamic sharding is told: it would split every stream and the batch pattern apart, and each
# worker's pattern would then take images its streams do not have.
_NO_DYNAMIC_SHARDING = (
    "LiquidDataset cannot be sharded dynamically (tf.data service ShardingPolicy.DYNAMIC): its batches take each "
    "format's share of a pass that one worker reads whole; use processing_mode='parallel_epochs', or give each "
    "worker its part with order=SeededOrder(..., num_workers, worker_index) (docs/scale-out.md)"
)


class _Stream:
    """Records read as one stream: one format's, all of them or the cached or uncached part. `records` are their
    numbers in the dataset (format by format, as an order numbers them), `images` their image counts."""

    def __init__(self, format: str, records: list[int], images: list[int], *, cached: bool):
        self.format, self.records, self.images, self.cached = format, records, images, cached

    @property
    def num_images(self) -> int:
        return sum(self.images)


def _nonempty(streams: list[_Stream], counts: np.ndarray) -> tuple[list[_Stream], np.ndarray]:
    """The streams that hold images, and their columns of the counts (an empty one is never chosen: a format with
    no image, or no cached or no uncached record)."""
    keep = [k for k, stream in enumerate(streams) if stream.num_images]
    return [streams[k] for k in keep], counts[:, keep]


class _RecordReader:
    """Reads a stream of records of one format: (record number, its images' shuffle seed, its images' crop seed)
    triples -> the decoded images, one RecordDataset per record (one read, CRC checked, through `cache` if given);
    image j of a record is cropped by the seed (crop seed, j)."""

    def __init__(self, dataset: LiquidDataset, shuffle, decode, with_keys, num_parallel_reads, num_parallel_calls):
        # Absolute: the files name the records in a cache's keys (see PCRDataset).
        self._filenames = tf.constant([os.path.join(os.path.abspath(dataset.path), r.path) for r in dataset._records])
        self._sizes = tf.constant([r.num_bytes for r in dataset._records], tf.int64)
        self._header_crcs = record_identities(dataset._records)
        self._channels = dataset.channels
        self._decoding = dataset._decoding
        self._read_queue = dataset._read_queue
        self._with_hits = dataset._cache is not None  # every stream yields "cached", for one element spec
        self._shuffle, self._decode, self._with_keys = shuffle, decode, with_keys
        self._num_parallel_reads, self._num_parallel_calls = num_parallel_reads, num_parallel_calls

    def __call__(self, format: str, records: tf.data.Dataset, cache, cache_pass, ahead: int):
        """Through `cache`, if given, in pass `cache_pass` (records are numbered as an order numbers its items).
        `ahead`: decoded images to hold ready."""
        # Raw items are decoded by the record reader itself: one copy of the pixels, not two.
        raw_pixels = self._decode and format == "raw"

        def open_record(i, record_seed, crop_seed):
            filename, size = tf.gather(self._filenames, i), tf.gather(self._sizes, i)
            source = record_bytes(filename, size, self._read_queue)
            if cache is not None:
                name = prefix_name(filename, size, tf.gather(self._header_crcs, i))
                source = cached(source, name, i, cache, cache_pass, with_hit=True)
            elif self._with_hits:
                source = source.map(lambda data: (tf.constant(False), data))
            items = RecordDataset(
                source,
                filename,
                seed=record_seed,
                shuffle=self._shuffle,
                with_keys=self._with_keys,
                item_format="raw" if raw_pixels else "bytes",
                item_channels=self._channels if raw_pixels else 0,
                item_key="image",
                header_crc32c=tf.gather(self._header_crcs, i),
            )
            if not self._decoding.random:
                return items
            return items.enumerate().map(lambda j, x: {**x, "crop_seed": tf.stack([crop_seed, j])})

        items = records.interleave(
            open_record,
            cycle_length=self._num_parallel_reads,
            num_parallel_calls=self._num_parallel_reads,
            deterministic=True,
        )

        # Each stream decodes its own format: no per-element test of the format, and the decodes of every stream
        # run ahead of the pattern that takes from them. Deterministic: the order is the composition.
        def decoded(x):
            x = dict(x)
            crop_seed = x.pop("crop_seed", None)
            image = x["image"]
            if self._decode and format == "jpeg" and not self._decoding.identity:
                image = self._decoding.jpeg(image, crop_seed=crop_seed)  # the window alone, at its DCT scale
            elif self._decode:
                if not raw_pixels:
                    image = liquid_items.decode_as(format, image, self._channels)
                image = self._decoding.pixels(image, crop_seed=crop_seed)
            return {**x, "image": image, "format": tf.constant(format)}

        # A batch's worth of decoded images ahead, so a stream keeps decoding while the pattern takes from the
        # others (a parallel map alone holds only its calls in flight, and would wait for its turn).
        # Raw pixels to yield as they are need no decode: a parallel map would only hand each image between threads,
        # which costs more than it saves.
        if raw_pixels and self._decoding.identity:
            return items.map(decoded).prefetch(ahead)
        return items.map(decoded, num_parallel_calls=self._num_parallel_calls, deterministic=True).prefetch(ahead)


def _pattern(rows: tf.data.Dataset, num_streams: int, shuffle: bool) -> tf.data.Dataset:
    """The stream of each element of a pass, from (batch counts, seed) pairs: per batch, its counts, shuffled
    within the batch by its seed."""

    def choices(row, row_seed):
        chosen = tf.repeat(tf.range(num_streams, dtype=tf.int64), row)
        if not shuffle:
            return chosen
        keys = tf.random.stateless_uniform(tf.shape(chosen), seed=tf.stack([row_seed, 0]))
        return tf.gather(chosen, tf.argsort(keys))

    return rows.map(choices).unbatch()


def batch_rows(sizes, batch_size: int) -> tf.data.Dataset:
    """The graph twin of `format.batch_counts` (its oracle): a dataset of its rows, int64 [num_streams] per batch,
    for stream sizes known only in the graph (an order's epoch). Same rule: batch b of size n takes
    floor(n * s_k / N) from stream k, the rest one each to the streams furthest behind their share."""
    sizes = tf.cast(sizes, tf.int64)
    num_streams = tf.size(sizes, out_type=tf.int64)
    total = tf.reduce_sum(sizes)
    num_batches = (total + batch_size - 1) // batch_size

    def step(taken, b):
        emitted = b * batch_size
        n = tf.minimum(tf.constant(batch_size, tf.int64), total - emitted)
        base = n * sizes // total
        behind = (emitted + n) * sizes - (taken + base) * total
        # Furthest behind first, ties to the lower k: ascending (-behind, k) as one integer.
        ranked = tf.argsort(-behind * num_streams + tf.range(num_streams, dtype=tf.int64))
        extra = tf.reduce_sum(tf.one_hot(ranked[: n - tf.reduce_sum(base)], tf.size(sizes), dtype=tf.int64), axis=0)
        row = base + extra
        return taken + row, row

    return tf.data.Dataset.range(num_batches).scan(tf.zeros_like(sizes), step)


class LiquidDataset(RecordFilesDataset):
    """Images of a Liquid dataset (made by `tfliquid convert liquid`), in batches that hold the dataset's ratio.

    Args:
      path: the dataset directory.
      batch_size: the batch size the caller will use: every `batch_size` consecutive elements from the start of a
        pass hold each format's share of them (largest remainder), shuffled within the batch, and every image
        appears exactly once per pass. Apply `.map(augment).batch(batch_size)` as usual (not `shuffle`, which
        would mix batches).
      shuffle: shuffle the order of records and of the images in each record, anew every epoch.
      seed: makes the shuffles repeatable.
      cache: a `tfliquid.MinIOCache`, or a budget in bytes for a new in-memory one. A seeded choice of each
        format's records that fits it (the same share of every format) is read through the cache: the first
        epoch fills it, and later epochs take the same number of cached images into every batch, so every batch
        reads the same amount from storage. Elements then carry "cached" (bool: its record came from the cache).
        `ds.minio_cache` is that cache (`ds.minio_cache.stats()`).
      decode: decode images to uint8 [H, W, C]; False yields the stored items (raw, PNG, JPEG or L3 bytes).
      with_keys: also yield "key", the image's source file name.
      num_parallel_reads: records read at a time per stream. One by default: a stream yields nothing until it has
        read a whole record, and records read together share the storage and all finish late.
      num_parallel_calls: decodes in flight; default one per core (not AUTOTUNE: PCRDataset's reason holds,
        tf.data's autotuner starves a decode map under throttled reads now and then).
      order: a `tfliquid.order.SeededOrder` over the dataset's records (all formats', numbered format by format in
        the manifest's order: `num_records` items), for data-parallel workers: this worker reads its slice of every
        epoch's record permutation, so that over the workers every image is read once per epoch, `epochs` epochs
        from `first_epoch` (None: without end) in one iteration. Every batch then holds each format's share of
        this worker's epoch (largest remainder, as without an order), which differs from the dataset's ratio by
        as much as its slice holds more of one format's records; the records keep the order's sequence (`shuffle`
        shuffles the images within each record, by a seed of (epoch, record)). A `cache` then reads every record
        through it; give the order once, to the cache, when it is a `MinIOCache(..., policy="clairvoyant",
        order=order)`, which ranks the records by their next use (docs/cache.md); there is no cached/uncached
        split, and no constant load per batch.
      epochs: epochs one iteration reads (the dataset's declared cardinality is their images), None: without end. "auto"
        (the default): one, or without end with an `order`. Without an order, the epochs follow each other with no
        restart: each stream goes on into its next epoch's reshuffled records while the last batches of the epoch before
        are still decoding, instead of every epoch starting its pipeline empty and waiting for its first records. The
        elements are those of `epochs` passes one after the other: any `batch_size` of them from the start of an epoch
        hold its share, and a batch that spans the end of an epoch holds images of both. With a `cache`, every epoch is
        a pass of its own (the cache counts its hits per epoch), restarted as without `epochs`.
      first_epoch: with `order`, the first of its epochs to read.
      tf_autotune: leave tf.data's autotuning model on for the pipeline this dataset starts (options reach every
        stage after it). Off by default: with it on, tf.data's autotuner can hold this pipeline's decodes at one
        core's speed for whole epochs while the consumer takes the others. With it off, stages after this one
        given AUTOTUNE run min(16, cores) parallel calls, and prefetch(AUTOTUNE) buffers still grow as tf.data's
        prefetch autotuner sees the consumer wait.
      decode_size: the (height, width) every image is decoded to: JPEG items at the smallest DCT scale whose image
        (or crop) is at least that size, then resized bilinearly; the other formats' pixels resized bilinearly.
        Needs an RGB dataset, as crop and the output options do. None: each image at its own size.
      crop: a window of each image resized to `decode_size`, as PCRDataset takes it: "random", "center", or a
        `tfliquid.jpeg.crop.RandomResizedCrop` or `CenterCrop`. JPEG items decode the window alone
        (`tfliquid.jpeg.crop.decode_crop`); PNG, raw and L3 items are decoded whole and then cropped through the same
        window (`crop_pixels`). Random crops are drawn from seeds of (seed, epoch, record, image), so a seed replays
        them and a restored iterator goes on with the uninterrupted run's.
      dtype, mean, std, channels_first: the image as uint8 (the default), or float32 or bfloat16 (value - mean) /
        std per channel, [H, W, 3] or [3, H, W], as PCRDataset's.
      read_queue: this worker's read queue, as PCRDataset's: its records' reads from storage wait until it admits
        them (`tfliquid.cache.load_balance.ReadBalancer` splits a node's threads among such queues).

    Elements: {"image": uint8 [H, W, C] (or string, or as `dtype` and `channels_first` say), "label": int64,
    "format": string [, "key", "cached"]}.
    The read budget is process-wide: `tfliquid.io.set_read_bandwidth`.

    >>> ds = tfliquid.LiquidDataset("photos-liquid/", batch_size=128, seed=0)
    >>> ds = ds.map(lambda x: (tf.image.resize(x["image"], [224, 224]), x["label"])).batch(128)
    >>> train = tfliquid.LiquidDataset("photos-liquid/", batch_size=128, seed=0, decode_size=(224, 224), crop="random")
    """

    def __init__(
        self,
        path,
        batch_size: int,
        shuffle: bool = True,
        seed: int | None = None,
        cache: MinIOCache | int | None = None,
        decode: bool = True,
        with_keys: bool = False,
        num_parallel_reads: int = 1,
        num_parallel_calls: int | None = None,
        order: SeededOrder | None = None,
        epochs: int | None | str = "auto",
        first_epoch: int = 0,
        tf_autotune: bool = False,
        decode_size: tuple[int, int] | None = None,
        crop=None,
        dtype=tf.uint8,
        mean=None,
        std=None,
        channels_first: bool = False,
        read_queue: str | None = None,
    ):
        self._path = check_dataset_path(path)
        self._manifest = liquid_format.read_manifest(self._path, crc=crc32c_fast)
        self._batch_size = check_int("batch_size", batch_size, 1, (1 << 31) - 1)
        if seed is not None:
            seed = check_int("seed", seed, 0, (1 << 63) - 1)
        num_parallel_reads = check_int("num_parallel_reads", num_parallel_reads, 1)
        if num_parallel_calls is None:
            num_parallel_calls = os.cpu_count() or 1
        elif num_parallel_calls != AUTOTUNE:
            num_parallel_calls = check_int("num_parallel_calls (or tf.data.AUTOTUNE)", num_parallel_calls, 1)
        if cache is not None and not isinstance(cache, MinIOCache):
            if isinstance(cache, bool):
                raise ArgumentError("cache must be a tfliquid.MinIOCache, a budget in bytes or None, got a bool")
            cache = MinIOCache(check_int("cache (a budget in bytes)", cache, 0))
        self._cache = cache
        self._decoding = ImageDecoding(decode_size, crop, dtype, mean, std, channels_first)
        if not decode and not self._decoding.identity:
            raise ArgumentError(
                "decode_size, crop, dtype, mean, std and channels_first say how images are decoded: decode=True"
            )
        self._decoding.check_channels(self._manifest.channels, str(self._path))
        self._read_queue = checked_read_queue(read_queue)
        self._records = [r for f in self._manifest.formats for r in f.records]  # the order's items, format by format
        # Epochs are an order's or, without one, this dataset's own: checked_order checks first_epoch only.
        self._order = checked_order(order, cache, len(self._records), first_epoch=first_epoch)
        if epochs == "auto":
            epochs = None if self._order is not None else 1
        elif epochs is not None:
            epochs = check_int("epochs (or None, or 'auto')", epochs, 1)
        read = _RecordReader(self, shuffle, decode, with_keys, num_parallel_reads, num_parallel_calls)
        if self._order is None:
            self._streams, self._counts = self._make_streams(seed)
            pipeline = self._build(read, shuffle, seed, epochs)
            cardinality = None if epochs is None else epochs * self._manifest.num_images
        else:
            pipeline = self._build_ordered(read, shuffle, seed, self._order.epochs_dataset(epochs, first_epoch))
            cardinality = self._order.images_read([r.num_images for r in self._records], epochs, first_epoch)
        pipeline = unsplittable(pipeline, _NO_DYNAMIC_SHARDING)
        if not tf_autotune:
            options = tf.data.Options()
            options.autotune.enabled = False
            pipeline = pipeline.with_options(options)
        super().__init__(self._path, self._manifest, pipeline, cardinality=cardinality, cache=cache)

    def _make_streams(self, seed) -> tuple[list[_Stream], np.ndarray]:
        """The streams and, per batch, how many elements each gives: one stream per format; with a cache, each
        format's records split into a cached and an uncached stream, the cached ones a seeded choice of the same
        share of every format's bytes that fits the cache (`format.split_batch_counts`)."""
        formats = list(self._manifest.formats)
        first = np.cumsum([0] + [len(f.records) for f in formats])  # each format's first record number

        def stream(k: int, chosen, cached: bool) -> _Stream:
            chosen = list(chosen)
            return _Stream(
                formats[k].name,
                [int(first[k]) + i for i in chosen],
                [formats[k].records[i].num_images for i in chosen],
                cached=cached,
            )

        if self._cache is None:
            streams = [stream(k, range(len(f.records)), cached=False) for k, f in enumerate(formats)]
            return _nonempty(streams, liquid_format.batch_counts([s.num_images for s in streams], self._batch_size))
        total = sum(f.num_bytes + _CACHE_OVERHEAD_PER_RECORD * len(f.records) for f in formats)
        share = min(1.0, self._cache.capacity_bytes / max(total, 1))
        rng = np.random.default_rng(seed if seed is not None else 0)
        pairs = []
        for k, fmt in enumerate(formats):
            budget, used, cached = share * (fmt.num_bytes + _CACHE_OVERHEAD_PER_RECORD * len(fmt.records)), 0, set()
            for r in rng.permutation(len(fmt.records)):
                cost = fmt.records[r].num_bytes + _CACHE_OVERHEAD_PER_RECORD
                if used + cost <= budget:
                    cached.add(int(r))
                    used += cost
            uncached = [i for i in range(len(fmt.records)) if i not in cached]
            pairs.append((stream(k, sorted(cached), cached=True), stream(k, uncached, cached=False)))
        counts = liquid_format.split_batch_counts(
            [c.num_images for c, _ in pairs], [u.num_images for _, u in pairs], self._batch_size
        ).reshape(-1, 2 * len(pairs))  # columns: format 0 cached, format 0 uncached, format 1 cached, ...
        return _nonempty([stream for pair in pairs for stream in pair], counts)

    def _build(self, read: _RecordReader, shuffle, seed, epochs: int | None):
        """Without an order: each stream's records in a seeded permutation of every epoch, the streams taken by a
        pattern of precomputed batch counts. Without a cache, every stream and the pattern run through all the
        epochs (each epoch's pattern takes each stream's images of that epoch exactly, so they stay in step); with
        one, every epoch is a cache pass, restarted. Every iteration reads other epochs (`each_iteration`): their
        orders and seeds are a function of (seed, iteration, epoch), so a restored iterator reads the same."""
        count = (1 << 62) if epochs is None else epochs
        counts = tf.constant(self._counts, tf.int64)

        def records_of(k: int, stream: _Stream, epoch) -> tf.data.Dataset:
            """Stream k's records in epoch `epoch` (of its own seeded order), each with its images' shuffle and crop
            seeds."""
            records = tf.constant(stream.records, tf.int64)
            if shuffle:
                records = tf.gather(records, SeededOrder(len(stream.records), seed=k).epoch_keys(epoch))
            return tf.data.Dataset.from_tensor_slices(records).map(lambda i: self._seeded(0, epoch, i, shuffle))

        def rows_of(epoch) -> tf.data.Dataset:
            """Every batch's counts in epoch `epoch`, with the seed that shuffles its elements."""
            rows = tf.data.Dataset.from_tensor_slices(counts).enumerate()
            return rows.map(lambda b, row: (row, derived_seed(0, epoch, b, _BATCH_SEEDS)))

        def one_pass(cache_pass, pass_epochs: tf.data.Dataset):
            streams = [
                read(
                    stream.format,
                    pass_epochs.flat_map(lambda epoch, k=k, stream=stream: records_of(k, stream, epoch)),
                    self._cache if stream.cached else None,
                    cache_pass,
                    ahead=2 * int(self._counts[:, k].max()),
                )
                for k, stream in enumerate(self._streams)
            ]
            pattern = _pattern(pass_epochs.flat_map(rows_of), len(self._streams), shuffle)
            return tf.data.Dataset.choose_from_datasets(streams, pattern, stop_on_empty_dataset=True)

        def one_iteration(iteration):
            iteration_epochs = tf.data.Dataset.range(count).map(lambda j: epoch_of(iteration, j))
            if self._cache is None:
                return one_pass(tf.constant(-1, tf.int64), iteration_epochs)
            return iteration_epochs.flat_map(
                lambda epoch: each_pass(
                    self._cache, lambda cache_pass: one_pass(cache_pass, tf.data.Dataset.from_tensors(epoch))
                )
            )

        return each_iteration(seed, one_iteration)

    def _build_ordered(self, read: _RecordReader, shuffle, seed, epochs: tf.data.Dataset):
        """With an order: per epoch, this worker's slice of the records split by format in the order's sequence,
        and the batch counts of that epoch's format sizes computed in the graph (`batch_rows`). One cache pass
        per epoch, so the stats count hits per epoch; seeds of (epoch, record) and (epoch, batch) make a rerun or
        a restarted worker read the same."""
        formats = list(self._manifest.formats)
        ends = tf.constant(np.cumsum([len(f.records) for f in formats]), tf.int64)  # record numbers end per format
        images = tf.constant([r.num_images for r in self._records], tf.int64)
        base_seed = self._order.seed if seed is None else seed
        ahead = [2 * -(-self._batch_size * f.num_images // self._manifest.num_images) + 2 for f in formats]

        def one_epoch(epoch):
            keys = self._order.epoch_keys(epoch)
            format_of = tf.searchsorted(ends, keys, side="right")
            sizes = tf.math.unsorted_segment_sum(tf.gather(images, keys), format_of, len(formats))

            def records_of(k):
                records = tf.data.Dataset.from_tensor_slices(tf.boolean_mask(keys, tf.equal(format_of, k)))
                return records.map(lambda i: self._seeded(base_seed, epoch, i, shuffle))

            def one_pass(cache_pass):
                streams = [
                    read(f.name, records_of(k), self._cache, cache_pass, ahead=ahead[k]) for k, f in enumerate(formats)
                ]
                rows = batch_rows(sizes, self._batch_size).enumerate()
                batch_seeds = rows.map(lambda b, row: (row, derived_seed(base_seed, epoch, b, _BATCH_SEEDS)))
                pattern = _pattern(batch_seeds, len(streams), shuffle)
                return tf.data.Dataset.choose_from_datasets(streams, pattern, stop_on_empty_dataset=True)

            return each_pass(self._cache, one_pass, epoch=epoch)

        return epochs.flat_map(one_epoch)

    def _seeded(self, seed, epoch, record, shuffle: bool):
        """(record, its images' shuffle seed, its images' crop seed) in `epoch` under `seed`: what _RecordReader
        reads; a seed not needed (no shuffle, no random crop) is 0."""
        zero = tf.constant(0, tf.int64)
        record_seed = derived_seed(seed, epoch, record, _RECORD_SEEDS) if shuffle else zero
        crop_seed = derived_seed(seed, epoch, record, _CROP_SEEDS) if self._decoding.random else zero
        return record, record_seed, crop_seed

    @property
    def formats(self) -> dict[str, int]:
        """Images per format, in the dataset's order."""
        return {f.name: f.num_images for f in self._manifest.formats}

    @property
    def channels(self) -> int:
        return self._manifest.channels

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def num_records(self) -> int:
        """Record files, all formats': the items of an `order`."""
        return len(self._records)

    @property
    def order(self) -> SeededOrder | None:
        return self._order

    def formats_in_epoch(self, epoch: int) -> dict[str, int]:
        """With an order: the images of each format this worker reads in epoch `epoch` (its records')."""
        if self._order is None:
            raise ArgumentError("formats_in_epoch counts an order's epoch: this dataset has no order")
        counts = dict.fromkeys(self.formats, 0)
        formats = [f.name for f in self._manifest.formats for _ in f.records]
        for i in self._order.keys(epoch).tolist():
            counts[formats[i]] += self._records[i].num_images
        return counts

    def images_in_epoch(self, epoch: int) -> int:
        """With an order: the images this worker reads in epoch `epoch`, e.g. for `steps_per_epoch`."""
        return sum(self.formats_in_epoch(epoch).values())

    def storage_images_per_batch(self) -> np.ndarray:
        """Per batch of a pass after the cache is full: how many images come from storage (not from the cache)."""
        if self._order is not None:
            raise ArgumentError("with an order, a batch's storage reads vary: the cache ranks records by next use")
        uncached = [k for k, s in enumerate(self._streams) if not s.cached]
        return self._counts[:, uncached].sum(axis=1)

    def bytes_per_epoch(self) -> int:
        """Bytes of the record files one epoch reads without a cache."""
        return liquid_format.dataset_bytes(self._manifest)
