"""An input pipeline in the shape DS-Analyzer's differential phases take apart: read from storage, then prep on
the CPU (decode and augment), then batch. Each phase rebuilds part of it (the reads alone, the prep over a cached
subset, the whole with a cache or another scan group), so it is described by how to build it, not as one
finished `tf.data.Dataset`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE


@dataclasses.dataclass(frozen=True)
class InputPipeline:
    """read -> map(prep) -> batch -> prefetch, where prep = decode, then preprocess.

    read: read(cache, scan_group, num_parallel_reads, shuffle) -> a dataset of raw elements (dicts holding the
      stored bytes under "image", and "label"), read from storage; through `cache` (a `tfliquid.MinIOCache`)
      when one is given.
    decode: the stored bytes -> uint8 [H, W, C] (the L3 what-if swaps it for decode_l3).
    preprocess: a decoded element {"image", "label"} -> what the model trains on, e.g. (image, label).
    batch_size: the batch the model takes.
    num_items: items in one epoch.
    bytes_per_epoch: scan_group -> bytes read from storage per epoch (scan_group None: full fidelity).
    cache_item_bytes: scan_group -> the sizes of what a MinIO cache of the read stage admits whole (a PCR record's
      prefix, a file): a cache holds whole items, so less than its capacity. None: items too small to matter.
    files: the storage files, whose page cache a fetch measurement drops first.
    read_ahead: parallel reads -> how many of the items a cache admits whole (records, files) the read stage opens
      ahead of the one consumed (tfliquid.analysis.record_reads).
    first_read_items: the items the read stage yields from its first record (or file) in stored order.
    scan_groups: 0, or the PCR dataset's number of scan groups (the scan-group what-if).
    png: the items are PNG files (the L3 what-if).
    source: how the user would write the read stage, for the recommendation's code: a format string with
      {scan_group} and {cache}, e.g. 'tfliquid.PCRDataset("/data/train", scan_group={scan_group}, cache={cache})'.
    """

    read: Callable[..., tf.data.Dataset]
    decode: Callable
    preprocess: Callable
    batch_size: int
    num_items: int
    bytes_per_epoch: Callable[[int | None], int]
    cache_item_bytes: Callable[[int | None], Sequence[int]] | None = None
    files: tuple[str, ...] = ()
    read_ahead: Callable[[int], int] = lambda parallel_reads: parallel_reads
    first_read_items: int = 1
    scan_group: int | None = None
    scan_groups: int = 0
    png: bool = False
    prep_parallelism: int | None = None  # None: AUTOTUNE
    read_parallelism: int | None = None  # None: the read stage's default
    source: str = ""

    def prep(self, element):
        """The CPU work on one raw element: decode, then preprocess."""
        return self.preprocess({"image": self.decode(element["image"]), "label": element["label"]})

    def records_ahead(self, cores: int) -> int:
        """How many records (or files) the read stage opens ahead, at its parallelism (AUTOTUNE: `cores`)."""
        return self.read_ahead(self.read_parallelism or cores)

    @property
    def bytes_per_item(self) -> float:
        return self.bytes_per_epoch(self.scan_group) / self.num_items

    def reads(self, cache=None, shuffle: bool = True) -> tf.data.Dataset:
        return self.read(
            cache=cache, scan_group=self.scan_group, num_parallel_reads=self.read_parallelism, shuffle=shuffle
        )

    def prepared(self, raw: tf.data.Dataset, prep_parallelism: int | None | str = "pipeline") -> tf.data.Dataset:
        """raw elements -> the model's batches, with the pipeline's prep parallelism or the one given."""
        parallelism = self.prep_parallelism if prep_parallelism == "pipeline" else prep_parallelism
        mapped = raw.map(self.prep, num_parallel_calls=AUTOTUNE if parallelism is None else parallelism)
        return mapped.batch(self.batch_size).prefetch(AUTOTUNE)

    def dataset(self, cache=None) -> tf.data.Dataset:
        """The whole pipeline, as training runs it."""
        return self.prepared(self.reads(cache=cache))

    def replace(self, **changes) -> InputPipeline:
        return dataclasses.replace(self, **changes)


def pcr_pipeline(
    path: str,
    preprocess: Callable,
    batch_size: int,
    scan_group: int | None = None,
    prep_parallelism: int | None = None,
    read_parallelism: int | None = None,
    seed: int | None = None,
) -> InputPipeline:
    """A `tfliquid.PCRDataset` read without decoding (the progressive JPEG prefixes are the stored bytes), then
    `tf.io.decode_jpeg` and `preprocess` (a decoded element {"image", "label"} -> what the model takes) as prep."""
    from tfliquid.pcr import PCRDataset

    probe = PCRDataset(path, decode=False)

    def read(cache=None, scan_group=None, num_parallel_reads=None, shuffle=True):
        reads = {} if num_parallel_reads is None else {"num_parallel_reads": num_parallel_reads}
        return PCRDataset(path, scan_group=scan_group, decode=False, shuffle=shuffle, seed=seed, cache=cache, **reads)

    records = sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".pcr"))
    return InputPipeline(
        read=read,
        decode=lambda data: tf.io.decode_jpeg(data, channels=3),
        preprocess=preprocess,
        batch_size=batch_size,
        num_items=probe.num_images,
        bytes_per_epoch=probe.bytes_per_epoch,
        cache_item_bytes=probe.record_bytes,
        files=tuple(records),
        read_ahead=_interleave_read_ahead,
        first_read_items=probe.record_images[0],
        scan_group=scan_group,
        scan_groups=probe.num_scan_groups,
        prep_parallelism=prep_parallelism,
        read_parallelism=read_parallelism,
        source=f"tfliquid.PCRDataset({os.path.abspath(path)!r}, "
        "scan_group={scan_group}, decode=False, cache={cache})",
    )


def _interleave_read_ahead(parallel_reads: int) -> int:
    """Records a PCRDataset of k parallel reads opens ahead: tf.data's parallel interleave reads its cycle of k
    and prefetches 2k more (kDefaultCyclePrefetchFactor); one read at a time is a plain interleave, which opens
    the next record when the last one ends."""
    return 1 if parallel_reads == 1 else 3 * parallel_reads


def file_pipeline(
    paths: list[str],
    labels: list[int],
    preprocess: Callable,
    batch_size: int,
    prep_parallelism: int | None = None,
    seed: int | None = None,
) -> InputPipeline:
    """Image files (JPEG, PNG, ...) read with `tfliquid.io.read_file` (through the read throttle, when one is
    set; with a cache, through `tfliquid.minio_cache`), then decoded and `preprocess`ed as prep."""
    from tfliquid.cache import minio_cache
    from tfliquid.io import read_file

    paths = [os.path.abspath(p) for p in paths]
    sizes = [os.path.getsize(p) for p in paths]
    png = all(p.lower().endswith(".png") for p in paths)

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
            # One read at a time: a plain map, which reads the next file when asked for it (a parallel map of 1
            # reads it ahead), unless tf.data's map_parallelization makes it parallel.
            return indices.map(fetch, num_parallel_calls=None if parallel == 1 else parallel)
        return indices.apply(minio_cache(fetch, cache=cache, num_parallel_calls=parallel))

    return InputPipeline(
        read=read,
        decode=lambda data: tf.io.decode_image(data, channels=3, expand_animations=False),
        preprocess=preprocess,
        batch_size=batch_size,
        num_items=len(paths),
        bytes_per_epoch=lambda scan_group: sum(sizes),
        cache_item_bytes=lambda scan_group: sizes,
        files=tuple(paths),
        png=png,
        prep_parallelism=prep_parallelism,
        source="indices.apply(tfliquid.minio_cache(read_path_and_label, cache={cache}))",
    )
