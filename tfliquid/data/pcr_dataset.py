"""PCRDataset: a PCR dataset read at any fidelity by a C++ tf.data source op.

Pipeline, built from graph ops only (it runs on tf.data service workers and checkpoints)::

    record ids --shuffle--> interleave(Liquid>PCRRecordDataset: one read of each record's prefix up to the
    scan group, CRCs checked, images emitted as progressive JPEGs cut at that group) --> decode_jpeg

The scan group is read when a record is opened, so a `tf.Variable` scan group changes the fidelity of the
records opened after the assignment, without rebuilding the pipeline.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from tfliquid._lib import ops as _ops
from tfliquid.cache.minio_cache import MinIOCache, each_pass
from tfliquid.formats import pcr as pcr_format
from tfliquid.io import set_read_bandwidth

AUTOTUNE = tf.data.AUTOTUNE

class _PCRRecordDataset(tf.data.Dataset):
    """The images of one record at one scan group: {"image": progressive JPEG bytes, "label" [, "key"]}.

    Holds one op's variant. The op emits its tensors in the order tf.nest flattens this dict, so no map is
    needed to build it: that map would cost more per image than reading the image does.
    """

    def __init__(self, filename, prefix_ends, scan_group, seed, shuffle: bool, with_keys: bool = False,
                 cache: MinIOCache | None = None, cache_pass=-1):
        cache_attrs = cache.op_attrs if cache is not None else {}
        variant = _ops().liquid_pcr_record_dataset(
            filename, prefix_ends, scan_group, seed, cache_pass, shuffle=shuffle, with_keys=with_keys, **cache_attrs)
        self._spec = {"image": tf.TensorSpec([], tf.string), "label": tf.TensorSpec([], tf.int64)}
        if with_keys:
            self._spec["key"] = tf.TensorSpec([], tf.string)
        super().__init__(variant)

    @property
    def element_spec(self):
        return self._spec

    def _inputs(self):
        return []


def _validate_scan_group(scan_group, num_scan_groups: int):
    """Returns an int64 tensor-like scan group; None means full fidelity."""
    if scan_group is None:
        return num_scan_groups
    if isinstance(scan_group, tf.Variable):
        if not scan_group.dtype.is_integer:
            raise TypeError(f"scan_group variable must have an integer dtype, got {scan_group.dtype.name}")
        return scan_group
    if isinstance(scan_group, bool) or not isinstance(scan_group, (int, np.integer)):
        raise TypeError(f"scan_group must be None, an int or an integer tf.Variable, got {scan_group!r}")
    if not 1 <= scan_group <= num_scan_groups:
        raise ValueError(f"scan_group must be in 1..{num_scan_groups} for this dataset (None = full fidelity), "
                         f"got {scan_group}")
    return int(scan_group)


class PCRDataset(tf.data.Dataset):
    """Images of a PCR dataset at a chosen fidelity.

    Args:
      path: the dataset directory (made by `tfliquid convert pcr`).
      scan_group: 1..G, where G = `num_scan_groups`; None = full fidelity. An int, or an integer `tf.Variable`
        whose changes apply from the next record opened (tf.data service cannot ship variables to its workers:
        use an int there).
      decode: decode to uint8 [H, W, 3]; False yields the progressive JPEG bytes.
      shuffle: shuffle record order and the images within each record, anew each epoch.
      seed: makes the shuffles repeatable.
      num_parallel_reads: records read concurrently.
      read_bandwidth: bytes/s for every tfliquid reader in this process (emulates slow storage), set here by
        `tfliquid.io.set_read_bandwidth`; None leaves the process-wide setting as it is.
      with_keys: also yield "key", the image's key (its source file name) when the dataset stored keys.
      cache: a `tfliquid.MinIOCache` for the record prefixes read (keyed by record file, scan group and length):
        later epochs read the cached records from memory (or its directory) instead of storage.

    Elements: {"image": uint8 [H, W, 3] (or string), "label": int64 [, "key": string]}.

    >>> ds = tfliquid.PCRDataset("/data/imagenet-pcr", scan_group=2)
    >>> ds = ds.map(lambda x: (tf.image.resize(x["image"], [224, 224]), x["label"])).batch(256)
    """

    def __init__(self, path, scan_group=None, decode: bool = True, shuffle: bool = True, seed: int | None = None,
                 num_parallel_reads=AUTOTUNE, read_bandwidth: float | None = None, with_keys: bool = False,
                 cache: MinIOCache | None = None):
        index = pcr_format.read_index(path)
        if not index.records:
            raise ValueError(f"{path}: the index lists no records")
        if read_bandwidth is not None and read_bandwidth <= 0:
            raise ValueError(f"read_bandwidth must be > 0 bytes/s or None, got {read_bandwidth}")
        if num_parallel_reads != AUTOTUNE and (not isinstance(num_parallel_reads, int) or num_parallel_reads < 1):
            raise ValueError(f"num_parallel_reads must be a positive int or tf.data.AUTOTUNE, got {num_parallel_reads}")
        if cache is not None and not isinstance(cache, MinIOCache):
            raise TypeError(f"cache must be a tfliquid.MinIOCache or None, got {type(cache).__name__}")
        self._path = path
        self._index = index
        self._cache = cache
        self._scan_group = _validate_scan_group(scan_group, index.num_scan_groups)
        self._impl = self._build(decode, shuffle, seed, num_parallel_reads, with_keys)
        if read_bandwidth is not None:
            set_read_bandwidth(read_bandwidth)  # TODO(lead): argument to be removed
        super().__init__(self._impl._variant_tensor)

    def _build(self, decode, shuffle, seed, num_parallel_reads, with_keys):
        index = self._index
        num_groups = index.num_scan_groups
        filenames = tf.constant([os.path.join(self._path, r.path) for r in index.records])
        # Records with fewer scan groups are padded with their full length: any group beyond theirs reads all.
        padded_ends = [list(r.prefix_ends) + [r.prefix_ends[-1]] * (num_groups - len(r.prefix_ends))
                       for r in index.records]
        prefix_ends = tf.constant(padded_ends, dtype=tf.int64)
        scan_group = self._scan_group

        records = tf.data.Dataset.range(len(index.records))
        if shuffle:
            records = records.shuffle(len(index.records), seed=seed, reshuffle_each_iteration=True)
            record_seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
            records = tf.data.Dataset.zip(records, record_seeds)
        else:
            records = records.map(lambda i: (i, tf.constant(0, tf.int64)))

        def images_of_pass(cache_pass):
            def open_record(i, record_seed):
                group = scan_group.read_value() if isinstance(scan_group, tf.Variable) else scan_group
                return _PCRRecordDataset(tf.gather(filenames, i), tf.gather(prefix_ends, i),
                                         tf.cast(group, tf.int64), record_seed, shuffle, with_keys, self._cache,
                                         cache_pass)

            if num_parallel_reads == 1:  # a plain interleave: no thread hand-off per image
                return records.interleave(open_record, cycle_length=1)
            return records.interleave(open_record, cycle_length=num_parallel_reads,
                                      num_parallel_calls=num_parallel_reads)

        images = each_pass(self._cache, images_of_pass)
        if decode:
            # As many decodes in flight as cores, not AUTOTUNE: under throttled reads tf.data's autotuner starves
            # this map now and then, and a whole epoch takes twice as long (measured on 2 cores: 10.7 s epochs
            # became 20.5 s in 2 of 6; with a fixed parallelism, 10.7 s in all).
            images = images.map(lambda x: {**x, "image": tf.io.decode_jpeg(x["image"], channels=3)},
                                num_parallel_calls=os.cpu_count() or 1)
        # No assert_cardinality: under tf.data service's dynamic sharding each worker sees a part of the images.
        return images

    @property
    def element_spec(self):
        return self._impl.element_spec

    def _inputs(self):
        return self._impl._inputs()

    @property
    def num_scan_groups(self) -> int:
        """G: the dataset's scan groups; scan group G is full fidelity."""
        return self._index.num_scan_groups

    @property
    def num_images(self) -> int:
        return self._index.num_images

    @property
    def class_names(self) -> list[str]:
        """Folder names of an image-folder source; empty for TFRecord sources."""
        return list(self._index.class_names)

    @property
    def num_classes(self) -> int:
        """Number of classes: class folders, or the largest label + 1 for TFRecord sources."""
        return self._index.num_classes

    @property
    def scan_group(self):
        """The int or tf.Variable this dataset reads at."""
        return self._scan_group

    def bytes_per_epoch(self, scan_group: int | None = None) -> int:
        """Bytes one epoch reads at `scan_group` (default: this dataset's, or the variable's current value)."""
        if scan_group is None:
            current = self._scan_group
            scan_group = int(current.numpy()) if isinstance(current, tf.Variable) else current
        return prefix_bytes(self._index, scan_group)


def prefix_bytes(index, scan_group: int) -> int:
    """Bytes of all record prefixes up to `scan_group`, from the index."""
    return sum(r.prefix_ends[min(scan_group, len(r.prefix_ends)) - 1] for r in index.records)
