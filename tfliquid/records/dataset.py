"""Reading records in tf.data: `record_bytes` reads a record's bytes (or a prefix of them) in one throttled read,
`RecordDataset` emits the items of the record its source yields. Apart, so that a cache can sit between them (a
hit never reaches the read)::

    record_bytes(file, length) [-> tfliquid.cache's transform] -> RecordDataset(..., item_format=...)

`RecordFilesDataset` is the base of the datasets of a directory of records (PCR's, Liquid's): it declares the
cardinality their index or manifest counts (`declared_cardinality`). All are C++ dataset ops: they serialize for
tf.data service and checkpoint mid-record.
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid._common.op_dataset import OpDataset
from tfliquid._lib import load_ops
from tfliquid.records.format import MAX_GROUPS


def record_bytes(filename, length, read_queue: str | None = None) -> tf.data.Dataset:
    """One element, the scalar string of bytes [0, `length`) of `filename`, read at once through tfliquid's read
    throttle (cancelled with its iterator), once the read queue `read_queue` admits it (`tfliquid.io.read_file`'s
    queues; None: none). A shorter file is a DataLoss error naming it."""
    variant = load_ops().liquid_record_bytes_dataset(filename, tf.cast(length, tf.int64), read_queue=read_queue or "")
    return OpDataset(variant, tf.TensorSpec([], tf.string))


def checked_read_queue(read_queue) -> str | None:
    """A dataset's `read_queue` argument: a queue's name or None (ArgumentError otherwise)."""
    if read_queue is not None and not isinstance(read_queue, str):
        raise ArgumentError(f"read_queue must be a queue's name (a str) or None, got {read_queue!r}")
    return read_queue


def prefix_name(filename, length, header_crc32c=-1) -> tf.Tensor:
    """What names the first `length` bytes of record file `filename` (an absolute path), e.g. for a cache:
    "record:FILE#bytes=N#header=CRC", CRC being the record's identity from its index or manifest
    (`record_identities`); "record:FILE#bytes=N" for a record whose index lists none (-1)."""
    name = tf.strings.join(["record:", filename, "#bytes=", tf.strings.as_string(tf.cast(length, tf.int64))])
    header_crc32c = tf.cast(header_crc32c, tf.int64)
    # Ten digits, so that records of equal sizes make items of equal sizes.
    identity = tf.strings.as_string(header_crc32c, width=10, fill="0")
    with_identity = tf.strings.join([name, "#header=", identity])
    return tf.where(header_crc32c >= 0, with_identity, name)


def record_identities(entries) -> tf.Tensor:
    """int64 [len(entries)]: the identity that each index or manifest entry lists for its record (the header
    CRC32C of its preamble, which covers its keys, labels, part sizes and group CRCs), -1 where it lists none (an
    index written before identities were recorded)."""
    return tf.constant([e.header_crc32c if e.HasField("header_crc32c") else -1 for e in entries], tf.int64)


class RecordDataset(tf.data.Dataset):
    """The items of one record, from `source`: a dataset whose one element is the record's bytes (a scalar string:
    the whole file, or a prefix holding groups 1..`group`), or a (bool, string) pair whose bool every item carries
    as "cached" (a cache's hit flag).

    Elements: {"cached" (with a pair source), `item_key`: the item as `item_format` emits it, "key" (with_keys),
    "label"}. The record's preamble, header and the CRC32C of every group read are checked; errors are DataLoss
    errors that start with `name` (the record's file) and the offset.

    Args:
      source: the record's bytes, e.g. `record_bytes(path, length)`.
      name: what errors call the record (its file).
      group: the groups to read (1-based); None or more than the record has: all.
      seed, shuffle: emit the items in a seeded random order instead of stored order.
      with_keys: also emit each item's "key".
      item_format: "bytes" (the item's parts up to the group, as a string), or a format a capability registers in
        the op library: "jpeg" (PCR: the progressive JPEG, closed with EOI), "raw" (Liquid: a raw item's
        pixels, uint8 [H, W, item_channels]).
      item_channels: C of a format that emits pixels; 0 for one that emits strings.
      item_key: the element's name for the item ("image" for PCR's and Liquid's images).
      header_crc32c: the record's identity (its preamble's header CRC32C) as its index lists it: a file whose
        preamble holds another is a DataLoss error naming it. None: unchecked.
      with_context: also emit "context", where each item is ("NAME: image KEY at scan group G"), for the errors of
        what decodes it.
    """

    def __init__(
        self,
        source: tf.data.Dataset,
        name,
        group=None,
        *,
        seed=0,
        shuffle: bool = False,
        with_keys: bool = False,
        item_format: str = "bytes",
        item_channels: int = 0,
        item_key: str = "item",
        header_crc32c=None,
        with_context: bool = False,
    ):
        # The op's outputs are in the order tf.nest flattens {"cached", "context", item_key, "key", "label"}.
        assert "context" < item_key < "key", item_key
        with_cache_hits = isinstance(source.element_spec, tuple)
        variant = load_ops().liquid_record_dataset(
            source._variant_tensor,
            name,
            tf.constant(MAX_GROUPS, tf.int64) if group is None else tf.cast(group, tf.int64),
            tf.cast(seed, tf.int64),
            tf.constant(-1, tf.int64) if header_crc32c is None else tf.cast(header_crc32c, tf.int64),
            shuffle=shuffle,
            with_keys=with_keys,
            with_context=with_context,
            with_cache_hits=with_cache_hits,
            item_format=item_format,
            item_channels=item_channels,
        )
        pixels = tf.TensorSpec([None, None, item_channels], tf.uint8)  # a format that emits pixels
        item = pixels if item_channels else tf.TensorSpec([], tf.string)
        self._spec = {item_key: item, "label": tf.TensorSpec([], tf.int64)}
        if with_cache_hits:
            self._spec["cached"] = tf.TensorSpec([], tf.bool)
        if with_keys:
            self._spec["key"] = tf.TensorSpec([], tf.string)
        if with_context:
            self._spec["context"] = tf.TensorSpec([], tf.string)
        self._source = source
        super().__init__(variant)

    @property
    def element_spec(self):
        return self._spec

    def _inputs(self):
        return [self._source]


def declared_cardinality(dataset: tf.data.Dataset, cardinality: int) -> tf.data.Dataset:
    """`dataset`'s elements as they are, its `cardinality()` being `cardinality` (>= 0, or
    `tf.data.INFINITE_CARDINALITY`), for Keras' progress and epoch ends. Declared, not asserted
    (`tf.data.experimental.assert_cardinality` fails a dataset that yields another count): under tf.data service's
    dynamic sharding each worker yields only the part it is given."""
    cardinality = tf.constant(cardinality, tf.int64)
    variant = load_ops().liquid_declared_cardinality_dataset(dataset._variant_tensor, cardinality)
    return OpDataset(variant, dataset.element_spec, [dataset])


class RecordFilesDataset(tf.data.Dataset):
    """A dataset read from a directory of record files: what it says of itself from its description (a PCR index or
    a Liquid manifest, which both count `num_images` and name `class_names` and `num_classes`), and the pipeline it
    reads the records with, whose elements are its own, as many as `cardinality` (the images of the epochs it
    reads; None: without end), which it declares: `len(ds)` and `ds.batch(b).cardinality()` know them, and so does
    Keras' `fit`. `cache` is the MinIOCache it reads through, or None."""

    def __init__(self, path: str, description, pipeline: tf.data.Dataset, *, cardinality: int | None, cache=None):
        self._path, self._description, self._minio_cache = path, description, cache
        if cardinality is None:
            cardinality = tf.data.INFINITE_CARDINALITY
        self._pipeline = declared_cardinality(pipeline, cardinality)
        super().__init__(self._pipeline._variant_tensor)

    @property
    def element_spec(self):
        return self._pipeline.element_spec

    def _inputs(self):
        return self._pipeline._inputs()

    @property
    def path(self) -> str:
        """The dataset directory."""
        return self._path

    @property
    def minio_cache(self):
        """The `tfliquid.MinIOCache` the records are read through (`ds.minio_cache.stats()`), or None. Not
        `cache`: `ds.cache()` is tf.data's."""
        return self._minio_cache

    @property
    def num_images(self) -> int:
        return self._description.num_images

    @property
    def class_names(self) -> list[str]:
        """Folder names of an image-folder source; empty for TFRecord sources."""
        return list(self._description.class_names)

    @property
    def num_classes(self) -> int:
        """Number of classes: class folders, or the largest label + 1 for TFRecord sources (0 without labels)."""
        return self._description.num_classes
