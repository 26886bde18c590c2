"""PCRDataset: a PCR dataset read at any fidelity by C++ tf.data ops.

Pipeline, built from graph ops and C++ datasets only (it runs on tf.data service workers and checkpoints)::

    record ids --shuffle--> interleave(one read of each record's prefix up to the scan group [through a MinIO
    cache] -> the record's images as progressive JPEGs cut at that group, CRCs checked) --> decode_jpeg [at a size]

The scan group is read when a record is opened, so a `tf.Variable` scan group changes the fidelity of the
records opened after the assignment, without rebuilding the pipeline.
"""

from __future__ import annotations

import os
import random
import uuid

import tensorflow as tf

from tfliquid._common.checks import check_dataset_path, check_int
from tfliquid._common.errors import ArgumentError
from tfliquid._common.op_dataset import OpDataset
from tfliquid._lib import crc32c_fast, load_ops
from tfliquid.cache.minio_cache import MinIOCache
from tfliquid.cache.transform import cached, with_pass
from tfliquid.jpeg.decoding import ImageDecoding
from tfliquid.order.iterations import numbered_iterations, seeded_shuffle
from tfliquid.order.seeded_order import SeededOrder, checked_order, derived_seed
from tfliquid.pcr import format as pcr_format
from tfliquid.records.dataset import (
    RecordDataset,
    RecordFilesDataset,
    checked_read_queue,
    prefix_name,
    record_bytes,
    record_identities,
)

AUTOTUNE = tf.data.AUTOTUNE
_RECORD_SEEDS = 1  # the salt of records' seeds in an order (tfliquid.order.derived_seed)


def record_images(
    filename,
    prefix_ends,
    scan_group,
    seed,
    *,
    shuffle=False,
    with_keys=False,
    cache=None,
    cache_pass=-1,
    item=-1,
    header_crc32c=-1,
    with_context=False,
    read_queue=None,
) -> tf.data.Dataset:
    """The images of one PCR record at `scan_group` (an int64 scalar, or a tf.Variable read now): one read of its
    prefix (in read queue `read_queue` if given; through `cache`, if given, in pass `cache_pass` as item `item` of
    its order, named with the record's identity), checked against the record's identity `header_crc32c` (the
    index's; -1: none, unchecked), then its images as progressive JPEGs cut at that group: {"image", "label" [,
    "key"]} [, "context": where the image is, "FILE: image KEY at scan group G", for the errors of its decode]."""
    ends = tf.convert_to_tensor(prefix_ends, tf.int64)
    num_groups = tf.size(ends, out_type=tf.int64)

    def at_group(group):
        length = tf.gather(ends, tf.minimum(group, num_groups) - 1)
        source = record_bytes(filename, length, read_queue)
        if cache is not None:
            source = cached(source, prefix_name(filename, length, header_crc32c), item, cache, cache_pass)
        return RecordDataset(
            source,
            filename,
            group,
            seed=seed,
            shuffle=shuffle,
            with_keys=with_keys,
            item_format="jpeg",
            item_key="image",
            header_crc32c=header_crc32c,
            with_context=with_context,  # built by the reader: a map per image here cost a seventh of the rate
        )

    if isinstance(scan_group, tf.Variable):  # read by a dataset op of ours (ops/pcr/scan_group_variable.cc)
        return _scan_group_dataset(scan_group, num_groups).flat_map(at_group)
    return at_group(tf.cast(scan_group, tf.int64))


def _scan_group_dataset(variable: tf.Variable, num_scan_groups) -> tf.data.Dataset:
    """One element: the value of a scan group variable, read when the dataset is iterated."""
    token = scan_group_variable_token(variable)
    variant = load_ops().liquid_scan_group_dataset(variable.handle, num_scan_groups, scan_group_variable_token=token)
    return OpDataset(variant, tf.TensorSpec([], tf.int64))


class PCRRecordDataset(tf.data.Dataset):
    """The images of ONE PCR record file at one scan group: {"image": progressive JPEG bytes cut at that group,
    "label" [, "key"]}. `PCRDataset` reads one per record; used alone, it reads one record back.

    Args:
      filename: the record file.
      prefix_ends: the record's scan group ends, from its index entry (`RecordEntry.prefix_ends`).
      scan_group: 1-based; None, or more than the record has, reads it whole (full fidelity). An int32 or int64
        `tf.Variable` is read when the record is opened, and must then be in 1..len(prefix_ends).
      shuffle, seed: emit the images in a seeded random order instead of stored order.
      with_keys: also emit "key", the image's key as stored.
      header_crc32c: the record's identity from its index entry (`RecordEntry.header_crc32c`, where the index
        lists it): a file that holds another record is a DataLossError naming it. None: unchecked.
    """

    def __init__(
        self,
        filename,
        prefix_ends,
        scan_group=None,
        *,
        shuffle: bool = False,
        seed=0,
        with_keys=False,
        header_crc32c=None,
        **removed,
    ):
        if removed:
            raise ArgumentError(
                f"PCRRecordDataset no longer takes {sorted(removed)}: PCRDataset(cache=...) reads records through a "
                "cache, and tfliquid.records.RecordDataset reads any record (item_format='raw': Liquid's raw items)"
            )
        if scan_group is None:
            scan_group = len(prefix_ends) if isinstance(prefix_ends, (list, tuple)) else tf.size(prefix_ends)
        self._impl = record_images(
            filename,
            prefix_ends,
            scan_group,
            seed,
            shuffle=shuffle,
            with_keys=with_keys,
            header_crc32c=-1 if header_crc32c is None else header_crc32c,
        )
        super().__init__(self._impl._variant_tensor)

    @property
    def element_spec(self):
        return self._impl.element_spec

    def _inputs(self):
        return self._impl._inputs()


# Not converted by AutoGraph when a dataset function calls it, which would make int() a cast to int32.
@tf.autograph.experimental.do_not_convert
def scan_group_variable_token(variable: tf.Variable) -> int:
    """Registers `variable` with the C++ ops of this process; the token names it to the op that reads it."""
    with tf.init_scope():  # eagerly, even when a dataset is built inside a tf.function
        return int(load_ops().liquid_scan_group_variable_token(variable.handle).numpy())


def _validate_scan_group(scan_group, num_scan_groups: int):
    """Returns an int64 tensor-like scan group; None means full fidelity."""
    if scan_group is None:
        return num_scan_groups
    if isinstance(scan_group, tf.Variable):
        if scan_group.dtype not in (tf.int32, tf.int64) or scan_group.shape.rank != 0:
            raise ArgumentError(
                f"a scan_group variable must be an int32 or int64 scalar (an integer dtype), got "
                f"{scan_group.dtype.name} {scan_group.shape}"
            )
        return scan_group
    return check_int("scan_group", scan_group, 1, num_scan_groups)


class PCRDataset(RecordFilesDataset):
    """Images of a PCR dataset at a chosen fidelity.

    Args:
      path: the dataset directory (made by `tfliquid convert pcr`).
      scan_group: 1..G, where G = `num_scan_groups`; None = full fidelity. An int, or an integer `tf.Variable`
        whose changes apply from the next record opened (tf.data service cannot ship variables to its workers:
        use an int there).
      decode: decode to uint8 [H, W, 3]; False yields the progressive JPEG bytes.
      decode_size: (height, width): decode to uint8 [height, width, 3] exactly, at the smallest of libjpeg's DCT
        scales (1/8, 1/4, 1/2, 1) whose image is at least that size, then resized bilinearly (aspect ratio not
        kept). Decoding costs less CPU the smaller the scale, so a low scan group read for a small model input
        decodes several times faster (docs/formats/pcr.md). None: the full size.
      shuffle: shuffle record order and the images within each record, anew each epoch (each iteration of the
        dataset: a `repeat`'s epoch, Keras' iterator of each epoch), by a seeded order of the iteration's number
        (docs/formats/seeded-order.md), which checkpoints keep: a restored iterator reads the later epochs as the
        uninterrupted one.
      seed: makes the shuffles repeatable (without it, every dataset object draws its own).
      num_parallel_reads: records read concurrently.
      with_keys: also yield "key", the image's key (its source file name) when the dataset stored keys.
      cache: a `tfliquid.MinIOCache` for the records read (each record's prefix at the scan group read is one
        item): later epochs read the cached records from memory (or its directory) instead of storage. A cache
        with an order (the clairvoyant policy) gives this dataset its order. `ds.minio_cache` is that cache
        (`ds.minio_cache.stats()`); `ds.cache()` is tf.data's.
      order: a `tfliquid.order.SeededOrder` over the records (num_items = `num_records`), for data-parallel
        workers reading one seeded shuffle: this dataset then reads this worker's slice of every epoch's
        permutation, in that order, `epochs` epochs from `first_epoch` (None: without end) in one iteration, so
        `model.fit` needs `steps_per_epoch` (`images_in_epoch` counts an epoch's images). `shuffle` then shuffles
        only the images within each record. Give the order once: to the cache, when it is a
        `MinIOCache(..., policy="clairvoyant", order=order)`, which ranks the records by their next use.
      epochs, first_epoch: with an order, which of its epochs to read.
      crop: decode only a window of each image (docs/formats/pcr.md, "Decoding a crop"), at the smallest DCT scale
        whose window still covers `decode_size`, then resized to it: "random" (torchvision's random resized crop,
        scale 0.08-1, aspect 3/4-4/3, and a random flip), "center" (the central square of 0.875 of the shorter
        side, for validation), a `tfliquid.jpeg.crop.RandomResizedCrop(scale, ratio, flip)` or `CenterCrop(
        fraction)`. Random crops are drawn from `seed`, anew each iteration as the shuffle is, so a seed replays
        the same crops and a restored iterator the uninterrupted run's. None: the whole image.
      dtype, mean, std, channels_first: the image as uint8 (the default), or float32 or bfloat16 (value - mean) /
        std per channel (three values each, in pixel units 0..255, e.g. `tfliquid.jpeg.crop.IMAGENET_MEAN` and
        `IMAGENET_STD`), [H, W, 3] or, with channels_first, [3, H, W]: in the decode op, with no map of its own.
      batch_size, drop_remainder: yield batches of `batch_size` images (the last one smaller unless
        drop_remainder), each batch decoded by one op that writes every image into its place
        (`tfliquid.jpeg.crop.decode_batch`): no map and no copy per image, which at low scan groups and small
        sizes cost more than the decode. Needs `decode_size`. The images, crops and order are those of
        `ds.batch(batch_size)` without it, bit for bit; `len(ds)` counts batches.
      read_queue: the read queue of this worker (`tfliquid.io.read_file`'s queues): every record read from storage
        waits until it admits the read, so that co-located workers' reads share the node's storage as their
        queues' threads say (`tfliquid.cache.load_balance.ReadBalancer`; docs/cache.md, "Load balance"). None:
        none.

    Its cardinality is declared (`len(ds)`, Keras' progress): `num_images`, or with an order the images of its
    epochs (infinite without end), though under tf.data service's dynamic sharding each worker yields a part.

    Elements: {"image": uint8 [H, W, 3] (or string, or as `dtype` and `channels_first` say), "label": int64 [,
    "key": string]}; with batch_size, batches of them ([B, ...]).

    >>> ds = tfliquid.PCRDataset("/data/imagenet-pcr", scan_group=2)
    >>> ds = ds.map(lambda x: (tf.image.resize(x["image"], [224, 224]), x["label"])).batch(256)
    >>> train = tfliquid.PCRDataset("/data/imagenet-pcr", decode_size=(224, 224), crop="random", seed=0,
    ...                             dtype=tf.float32, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    """

    def __init__(
        self,
        path,
        scan_group=None,
        decode: bool = True,
        decode_size: tuple[int, int] | None = None,
        shuffle: bool = True,
        seed: int | None = None,
        num_parallel_reads=AUTOTUNE,
        with_keys: bool = False,
        cache: MinIOCache | None = None,
        order: SeededOrder | None = None,
        epochs: int | None = None,
        first_epoch: int = 0,
        crop=None,
        dtype=tf.uint8,
        mean=None,
        std=None,
        channels_first: bool = False,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        read_queue: str | None = None,
    ):
        path = check_dataset_path(path)
        index = pcr_format.read_index(path, crc=crc32c_fast)
        if not index.records:
            raise ArgumentError(f"{path}: the index lists no records")
        if num_parallel_reads != AUTOTUNE:
            num_parallel_reads = check_int("num_parallel_reads (or tf.data.AUTOTUNE)", num_parallel_reads, 1)
        if cache is not None and not isinstance(cache, MinIOCache):
            raise ArgumentError(f"cache must be a tfliquid.MinIOCache or None, got {type(cache).__name__}")
        self._path = path  # what _build reads; RecordFilesDataset keeps it too
        self._index = index
        self._cache = cache
        self._scan_group = _validate_scan_group(scan_group, index.num_scan_groups)
        self._decoding = ImageDecoding(decode_size, crop, dtype, mean, std, channels_first)
        self._order = checked_order(order, cache, len(index.records), epochs, first_epoch)
        self._epochs = self._order.epochs_dataset(epochs, first_epoch) if self._order is not None else None
        if decode_size is not None and not decode:
            raise ArgumentError("decode_size is the size images are decoded to: it needs decode=True")
        if not decode and not self._decoding.plain:
            raise ArgumentError("crop, dtype, mean, std and channels_first say how images are decoded: decode=True")
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size, 1, (1 << 31) - 1)
            if not decode or self._decoding.size is None:
                raise ArgumentError(
                    "batch_size decodes batches of images of one size: it needs decode=True and decode_size; "
                    "without them, batch the dataset (ds.batch(n))"
                )
        self._batch_size, self._drop_remainder = batch_size, bool(drop_remainder)
        self._read_queue = checked_read_queue(read_queue)
        pipeline = self._build(decode, shuffle, seed, num_parallel_reads, with_keys)
        if self._order is None:
            cardinality = index.num_images
        else:
            cardinality = self._order.images_read(self.record_images, epochs, first_epoch)
        if batch_size is not None and cardinality is not None:
            cardinality = cardinality // batch_size if drop_remainder else -(-cardinality // batch_size)
        super().__init__(path, index, pipeline, cardinality=cardinality, cache=cache)

    def _build(self, decode, shuffle, seed, num_parallel_reads, with_keys):
        index = self._index
        num_groups = index.num_scan_groups
        # Absolute: the files name the records in a cache's keys, which a relative path from another working
        # directory (another dataset) must not share.
        filenames = tf.constant([os.path.join(os.path.abspath(self._path), r.path) for r in index.records])
        # One row of G ends per record: a record with fewer scan groups reads whole at the groups beyond its own.
        padded_ends = [
            [pcr_format.prefix_end(r.prefix_ends, g) for g in range(1, num_groups + 1)] for r in index.records
        ]
        prefix_ends = tf.constant(padded_ends, dtype=tf.int64)
        header_crcs = record_identities(index.records)

        def images_of(records, epoch=-1):
            """The images of `records` ((record, its images' shuffle seed) pairs), read in a pass of the cache
            (of the order's `epoch`). The records stay the pipeline's input, so tf.data service can split them."""

            def open_record(cache_pass, record):
                i, record_seed = record
                return record_images(
                    tf.gather(filenames, i),
                    tf.gather(prefix_ends, i),
                    self._scan_group,
                    record_seed,
                    shuffle=shuffle,
                    with_keys=with_keys,
                    cache=self._cache,
                    cache_pass=cache_pass,
                    item=i,
                    header_crc32c=tf.gather(header_crcs, i),
                    with_context=decode,
                    read_queue=self._read_queue,
                )

            records_in_passes = with_pass(self._cache, records, epoch)
            if num_parallel_reads == 1:  # a plain interleave: no thread hand-off per image
                return records_in_passes.interleave(open_record, cycle_length=1)
            return records_in_passes.interleave(
                open_record, cycle_length=num_parallel_reads, num_parallel_calls=num_parallel_reads
            )

        if self._order is None:
            records = tf.data.Dataset.range(len(index.records))
            if shuffle:
                # Every iteration's order is a function of (seed, iteration), which the pipeline checkpoints:
                # a restored iterator reads the later epochs of a repeat as the uninterrupted one.
                iterations = uuid.uuid4().hex
                seed = random.getrandbits(63) if seed is None else seed
                records = seeded_shuffle(records, iterations, seed)
            else:
                records = records.map(lambda i: (i, tf.constant(0, tf.int64)))
            images = images_of(records)
            if shuffle:
                images = numbered_iterations(images, iterations)
        else:
            # The order fixes the records' order; each record's images are shuffled by a seed of (epoch, record),
            # so that a rerun or a restarted worker reads the same. One cache pass per epoch, told its epoch.
            order = self._order
            base_seed = order.seed if seed is None else seed

            def records_of_epoch(epoch):
                def with_seed(i):
                    record_seed = derived_seed(base_seed, epoch, i, _RECORD_SEEDS)
                    return i, record_seed if shuffle else tf.constant(0, tf.int64)

                return tf.data.Dataset.from_tensor_slices(order.epoch_keys(epoch)).map(with_seed)

            images = self._epochs.flat_map(lambda epoch: images_of(records_of_epoch(epoch), epoch))
        if decode:
            # As many decodes in flight as cores, not AUTOTUNE: under throttled reads tf.data's autotuner starves
            # this map now and then, and a whole epoch takes twice as long. Decoding is CPU work: one call per core
            # is what autotuning should reach anyway.
            if self._decoding.random:
                # A crop seed per image, from a stream of `seed` drawn anew each iteration (and checkpointed):
                # an iteration replays its crops whatever its scan group, and a restore goes on where it stood.
                crop_seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
                images = tf.data.Dataset.zip(images, crop_seeds)
            if self._batch_size is None:
                return images.map(self._decoded, num_parallel_calls=os.cpu_count() or 1)
            # One op per batch writes every image into its place: no map per image, no copy into the batch.
            batches = images.batch(self._batch_size, drop_remainder=self._drop_remainder)
            return batches.map(self._decoded_batch, num_parallel_calls=os.cpu_count() or 1)
        return images

    @property
    def order(self) -> SeededOrder | None:
        return self._order

    def images_in_epoch(self, epoch: int) -> int:
        """With an order: the images this worker reads in epoch `epoch` (its records' images)."""
        if self._order is None:
            raise ArgumentError("images_in_epoch counts an order's epoch: this dataset has no order")
        return self._order.epoch_images(epoch, self.record_images)

    @property
    def num_records(self) -> int:
        return len(self._index.records)

    @property
    def record_images(self) -> list[int]:
        """Images in each record, in the index's order (record_bytes' order)."""
        return [record.num_images for record in self._index.records]

    @property
    def num_scan_groups(self) -> int:
        """G: the dataset's scan groups; scan group G is full fidelity."""
        return self._index.num_scan_groups

    @property
    def decode_size(self) -> tuple[int, int] | None:
        """The (height, width) images are decoded to, or None (each at its own size)."""
        return self._decoding.size

    @property
    def crop(self):
        """The crop images are decoded through (a RandomResizedCrop or CenterCrop), or None."""
        return self._decoding.crop

    def decode_image(self, jpeg, context=None, crop_seed=None) -> tf.Tensor:
        """A JPEG's bytes decoded as this dataset decodes its images (`tfliquid.jpeg.decoding.ImageDecoding.jpeg`):
        at full size or `decode_size`, through the crop (a random one drawn from `crop_seed`, [2] int), as the
        dtype, normalisation and layout asked. A decode error starts with `context` when given."""
        return self._decoding.jpeg(jpeg, context, crop_seed)

    def _decoded_batch(self, elements, crop_seeds=None):
        """A batch of elements with its images decoded into one tensor, errors naming each image as _decoded's."""
        elements = dict(elements)
        contexts = elements.pop("context")
        return {**elements, "image": self._decoding.jpeg_batch(elements["image"], contexts, crop_seeds)}

    def _decoded(self, element, crop_seed=None):
        """The element with its image decoded, errors naming the record file, the image's key and scan group."""
        element = dict(element)
        context = element.pop("context")
        return {**element, "image": self.decode_image(element["image"], context, crop_seed)}

    @property
    def scan_group(self):
        """The int or tf.Variable this dataset reads at."""
        return self._scan_group

    def bytes_per_epoch(self, scan_group: int | None = None) -> int:
        """Bytes one epoch reads at `scan_group` (default: this dataset's, or the variable's current value)."""
        return pcr_format.prefix_bytes(self._index, self._checked_scan_group(scan_group))

    def record_bytes(self, scan_group: int | None = None) -> list[int]:
        """Bytes of each record's prefix at `scan_group` (default as bytes_per_epoch's), in the index's order: the
        items a MinIO cache of this dataset admits whole."""
        return pcr_format.record_prefix_bytes(self._index, self._checked_scan_group(scan_group))

    def _checked_scan_group(self, scan_group: int | None) -> int:
        if scan_group is None:
            current = self._scan_group
            scan_group = int(current.numpy()) if isinstance(current, tf.Variable) else current
        return check_int("scan_group", scan_group, 1, self.num_scan_groups)
