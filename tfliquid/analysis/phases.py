"""DS-Analyzer's differential phases on stock TensorFlow (paper, sections 4.2 and 5.1): each phase runs one part of
the job in isolation over a small subset and returns a rate in items per second.

  ingestion_rate       G: train steps on one batch repeated in memory (no input pipeline)
  prep_rate            P: the prep stage over raw items cached in memory, no model
  fetch_rate           F: the read stage alone, from storage (page cache dropped first, or the read throttle)
  cache_fetch_rate     C: the read stage through a MinIO cache holding the subset
  training_rate        the whole job (or the job over a cached subset: fetch stalls removed)
  op_table             what tf.data's autotuner measured and chose, per op (tf.data.experimental.get_model_proto)
"""

from __future__ import annotations

import dataclasses
import os
import time

import tensorflow as tf

from tfliquid._common.timing import timed_pass
from tfliquid.analysis.pipeline import InputPipeline


@dataclasses.dataclass
class Ledger:
    """What the analysis cost: items it read from storage and the time its phases took."""

    items_read: int = 0
    bytes_read: float = 0.0
    seconds: float = 0.0

    def charge(self, pipeline: InputPipeline, items: int) -> None:
        self.items_read += items
        self.bytes_read += items * pipeline.bytes_per_item


def drop_page_cache(files) -> None:
    """Asks the kernel to forget the files' cached pages (posix_fadvise DONTNEED: no root needed), so the next
    read comes from the device."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _rate(dataset: tf.data.Dataset) -> float:
    """Items per second of one pass (elements of rank-0 first components count 1; batches their first dim)."""
    timing = timed_pass(dataset)
    return timing.elements / timing.seconds


def _epoch_clock():
    """A Keras callback class timing each epoch (Keras is imported here, on first use)."""
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self, before_epoch=None):
            super().__init__()
            self.seconds, self._before = [], before_epoch

        def on_epoch_begin(self, epoch, logs=None):
            if self._before is not None:
                self._before()
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return EpochClock


def ingestion_rate(model, batch, steps: int) -> float:
    """G: items/s of `steps` train steps on `batch` (x, y) repeated from memory, after a warm-up epoch."""
    clock = _epoch_clock()()
    data = tf.data.Dataset.from_tensors(batch).repeat()
    model.fit(data, steps_per_epoch=steps, epochs=2, shuffle=False, verbose=0, callbacks=[clock])
    return steps * int(tf.nest.flatten(batch)[0].shape[0]) / clock.seconds[-1]


def training_rate(model, dataset: tf.data.Dataset, steps: int, batch_size: int, before_epoch=None) -> float:
    """Items/s of model.fit over `dataset` (repeated; `steps` batches an epoch), the second of two epochs (the
    first traces and warms up). `before_epoch` runs before each epoch, outside the timing (e.g. dropping
    caches)."""
    clock = _epoch_clock()(before_epoch)
    model.fit(dataset.repeat(), steps_per_epoch=steps, epochs=2, shuffle=False, verbose=0, callbacks=[clock])
    return steps * batch_size / clock.seconds[-1]


def cached_raw(pipeline: InputPipeline, items: int) -> tf.data.Dataset:
    """`items` raw elements read once and kept in memory (tf.data's cache): the prep stage's input without fetch."""
    raw = pipeline.reads().take(items).cache()
    for _ in raw:  # fill
        pass
    return raw


def prep_rate(
    pipeline: InputPipeline, raw: tf.data.Dataset, parallelism: int | None | str = "pipeline", passes: int = 2
) -> float:
    """P: items/s of the prep stage (and batching) over raw elements in memory, no model; best of `passes`."""
    batches = pipeline.prepared(raw, parallelism)
    return max(_rate(batches) for _ in range(passes))


def fetch_rate(pipeline: InputPipeline, items: int) -> float:
    """F: items/s of the read stage alone over `items` items, from storage: page cache dropped first."""
    drop_page_cache(pipeline.files)
    return _rate(pipeline.reads().take(items))


def cache_fetch_rate(pipeline: InputPipeline, items: int) -> float:
    """C: items/s of the read stage through a MinIO cache that holds every item read (its second pass)."""
    from tfliquid.cache import MinIOCache

    cache = MinIOCache(int(4 * items * pipeline.bytes_per_item) + (64 << 20))
    try:
        reads = pipeline.reads(cache=cache, shuffle=False).take(items)
        _rate(reads)  # fills
        return max(_rate(reads) for _ in range(2))
    finally:
        cache.release()


@dataclasses.dataclass(frozen=True)
class OpRow:
    name: str  # the tf.data op: "Prefetch", "MapAndBatch", ... (indented by its depth below the output)
    elements: int
    cpu_share: float  # of the CPU time all the pipeline's ops spent (self time)
    microseconds_per_element: float
    parallelism: float | None  # what AUTOTUNE chose (parallelism, or buffer_size for prefetch); None: not tuned


def op_table(dataset: tf.data.Dataset, batches: int) -> list[OpRow]:
    """`batches` elements of `dataset`, then tf.data's autotune model of its iterator: every op's self CPU time
    and what AUTOTUNE set, depth first from the output. Needs autotuning on (tf.data's default). The dataset must
    hold more than `batches` elements: an input that has reached its end leaves the model with its statistics."""
    iterator = iter(dataset)
    for _ in range(batches):
        next(iterator)
    model = tf.data.experimental.get_model_proto(iterator)
    total = sum(node.processing_time for node in model.nodes.values()) or 1
    rows = []

    def visit(node_id: int, depth: int) -> None:
        node = model.nodes[node_id]
        if node.name != "Root":
            tuned = [p.value for p in node.parameters if p.name in ("parallelism", "buffer_size")]
            rows.append(
                OpRow(
                    name="  " * depth + node.name,
                    elements=node.num_elements,
                    cpu_share=node.processing_time / total,
                    microseconds_per_element=node.processing_time / 1e3 / max(node.num_elements, 1),
                    parallelism=tuned[0] if tuned else None,
                )
            )
            depth += 1
        for child in node.inputs:
            if child in model.nodes:
                visit(child, depth)

    visit(model.output, 0)
    return rows
