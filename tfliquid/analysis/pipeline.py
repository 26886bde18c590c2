"""An input pipeline as DS-Analyzer's phases take it apart: read from storage, prep on the CPU (decode, augment),
batch. The phases rebuild parts of it (the reads alone, prep over a subset in memory, the whole with a cache or at
another scan group), so it says how to build them, where a finished tf.data.Dataset could not."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid._lib import crc32c_fast
from tfliquid.cache import minio_cache
from tfliquid.io import read_file
from tfliquid.pcr import PCRDataset
from tfliquid.pcr import format as pcr_format

AUTOTUNE = tf.data.AUTOTUNE


@dataclasses.dataclass(frozen=True)
class InputPipeline:
    """read -> map(prep) -> batch -> prefetch, where prep = decode, then preprocess.

    read: read(cache, scan_group, num_parallel_reads, shuffle) -> a dataset of raw elements {"image": the stored
      bytes, "label"} from storage; through `cache` (a `tfliquid.MinIOCache`) when one is given.
    decode: the stored bytes -> uint8 [H, W, C] (the L3 what-if swaps it for decode_l3).
    preprocess: a decoded element {"image", "label"} -> what the model trains on, e.g. (image, label).
    batch_size, num_items: the batch the model takes; the items of one epoch.
    bytes_per_epoch: scan_group -> bytes read from storage per epoch (None: full fidelity).
    records: how many whole items a MinIO cache of its reads admits (PCR records, files); 0: items too small to matter.
    files: the storage files, whose page cache the fetch phase drops first; labels: the files' labels, where each
      file is an item (file_pipeline), for the recommendation's code that reads them converted.
    scan_groups: the PCR dataset's number of scan groups (0: not PCR); png: the items are PNG files (L3, Liquid).
    """

    read: Callable[..., tf.data.Dataset]
    decode: Callable
    preprocess: Callable
    batch_size: int
    num_items: int
    bytes_per_epoch: Callable[[int | None], int]
    records: int = 0
    files: tuple[str, ...] = ()
    labels: tuple[int, ...] = ()
    scan_group: int | None = None
    scan_groups: int = 0
    png: bool = False
    prep_parallelism: int | None = None  # None: AUTOTUNE
    read_parallelism: int | None = None  # None: the read stage's default

    def prep(self, element):  # the CPU's work on a raw element
        return self.preprocess({"image": self.decode(element["image"]), "label": element["label"]})

    @property
    def fidelities(self) -> list:
        """The scan groups it can read, None for full fidelity (without scan groups: its own)."""
        return [None, *range(1, self.scan_groups)] if self.scan_groups else [self.scan_group]

    @property
    def bytes_per_item(self) -> float:
        return self.bytes_per_epoch(self.scan_group) / self.num_items

    def reads(self, cache=None, shuffle: bool = True) -> tf.data.Dataset:
        return self.read(cache, self.scan_group, self.read_parallelism, shuffle)

    def prepared(self, raw: tf.data.Dataset, prep_parallelism: int | None | str = "pipeline") -> tf.data.Dataset:
        """raw elements -> the model's batches, with the pipeline's prep parallelism or the one given."""
        parallelism = self.prep_parallelism if prep_parallelism == "pipeline" else prep_parallelism
        mapped = raw.map(self.prep, num_parallel_calls=AUTOTUNE if parallelism is None else parallelism)
        return mapped.batch(self.batch_size).prefetch(AUTOTUNE)

    def dataset(self, cache=None) -> tf.data.Dataset:  # as training runs it
        return self.prepared(self.reads(cache=cache))

    def replace(self, **changes) -> InputPipeline:
        return dataclasses.replace(self, **changes)

    def subset_items(self, items: int | None, default_batches: int) -> int:
        """The items a measurement reads: `items` (default: `default_batches` batches), at most an epoch, in whole
        batches. Raises ArgumentError unless that is one batch or more."""
        asked = default_batches * self.batch_size if items is None else check_int("subset_items", items, 1)
        items = min(self.num_items, asked) // self.batch_size * self.batch_size
        if not items:
            raise ArgumentError(f"{min(self.num_items, asked)} items hold no whole batch of {self.batch_size}")
        return items


def pcr_pipeline(
    path: str,
    preprocess: Callable,
    batch_size: int,
    scan_group: int | None = None,
    prep_parallelism: int | None = None,
    read_parallelism: int | None = None,
    seed: int | None = None,
) -> InputPipeline:
    """A `tfliquid.PCRDataset` read without decoding (the stored progressive JPEG prefixes), then
    `tf.io.decode_jpeg` and `preprocess` (a decoded element {"image", "label"} -> what the model takes) as prep."""
    _check_pipeline_arguments(preprocess, batch_size, prep_parallelism)
    probe = PCRDataset(path, decode=False)
    records = pcr_format.read_index(path, crc=crc32c_fast).records  # where they are: the index says

    def read(cache=None, scan_group=None, num_parallel_reads=None, shuffle=True):
        reads = {} if num_parallel_reads is None else {"num_parallel_reads": num_parallel_reads}
        return PCRDataset(path, scan_group=scan_group, decode=False, shuffle=shuffle, seed=seed, cache=cache, **reads)

    return InputPipeline(
        read=read,
        decode=lambda data: tf.io.decode_jpeg(data, channels=3),
        preprocess=preprocess,
        batch_size=batch_size,
        num_items=probe.num_images,
        bytes_per_epoch=probe.bytes_per_epoch,
        records=probe.num_records,
        files=tuple(os.path.join(os.path.abspath(path), record.path) for record in records),
        scan_group=scan_group,
        scan_groups=probe.num_scan_groups,
        prep_parallelism=prep_parallelism,
        read_parallelism=read_parallelism,
    )


def file_pipeline(
    paths: list[str],
    labels: list[int],
    preprocess: Callable,
    batch_size: int,
    prep_parallelism: int | None = None,
    seed: int | None = None,
) -> InputPipeline:
    """Image files (JPEG, PNG, ...) read with `tfliquid.io.read_file` (through the read throttle, when one is set;
    with a cache, through `tfliquid.minio_cache`), then decoded and `preprocess`ed as prep."""
    _check_pipeline_arguments(preprocess, batch_size, prep_parallelism)
    if isinstance(paths, str) or not paths or not all(isinstance(p, str | os.PathLike) for p in paths):
        raise ArgumentError(f"paths must be a non-empty list of image file paths, got {paths!r}")
    if len(labels) != len(paths):
        raise ArgumentError(f"labels must be one int per path: {len(labels)} labels for {len(paths)} paths")
    paths = [os.path.abspath(p) for p in paths]
    total = sum(os.path.getsize(p) for p in paths)

    def read(cache=None, scan_group=None, num_parallel_reads=None, shuffle=True):
        del scan_group  # files have one fidelity
        path_of, label_of = tf.constant(paths), tf.constant(labels, tf.int64)

        def fetch(index):  # an item's index is its cache key
            return {"image": read_file(tf.gather(path_of, index)), "label": tf.gather(label_of, index)}

        indices = tf.data.Dataset.range(len(paths))
        if shuffle:
            indices = indices.shuffle(len(paths), seed=seed)
        parallel = AUTOTUNE if num_parallel_reads is None else num_parallel_reads
        if cache is None:
            # One read at a time is a plain map, which reads a file when asked (a parallel map of 1 reads ahead).
            return indices.map(fetch, num_parallel_calls=None if parallel == 1 else parallel)
        return indices.apply(minio_cache(fetch, cache=cache, num_parallel_calls=parallel))

    return InputPipeline(
        read=read,
        decode=lambda data: tf.io.decode_image(data, channels=3, expand_animations=False),
        preprocess=preprocess,
        batch_size=batch_size,
        num_items=len(paths),
        bytes_per_epoch=lambda scan_group: total,
        records=len(paths),
        files=tuple(paths),
        labels=tuple(int(label) for label in labels),
        png=all(p.lower().endswith(".png") for p in paths),
        prep_parallelism=prep_parallelism,
    )


def _check_pipeline_arguments(preprocess, batch_size, prep_parallelism) -> None:
    if not callable(preprocess):
        raise ArgumentError(f"preprocess must be callable (a decoded element -> the model's input), got {preprocess!r}")
    check_int("batch_size", batch_size, 1)
    if prep_parallelism is not None:
        check_int("prep_parallelism", prep_parallelism, 1)
