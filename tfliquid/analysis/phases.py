"""DS-Analyzer's differential phases (paper, sections 4.2 and 5.1) on stock TensorFlow. Each phase runs one part of
the job alone over a small subset; its result type measures it (`measure(job)`). Rates are items per second.

  ingestion G    train steps on one batch repeated in memory (no input pipeline)
  prep P         the prep stage over the subset in memory, no model
  fetch F        the read stage alone from storage (page cache dropped first, or through the read throttle)
  cache C        the read stage through a MinIO cache that holds the subset
  training       the job from storage, and as the full cache serves it at each prep parallelism
  prep variants  prep at every other scan group (PNG files: in L3, raw pixels) against the pipeline's own
  tf.data ops    what tf.data's autotuner measured and chose, per op (tf.data.experimental.get_model_proto)

Runs compared with each other are made in turns (every peer once a round, the order reversed every other round):
a shared machine's speed drifts, and turns expose every peer to it alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import statistics
import time
from collections.abc import Callable

import keras
import tensorflow as tf

from tfliquid._common.timing import timed_pass, turn_order
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.cache import MinIOCache
from tfliquid.io.storage import drop_page_cache
from tfliquid.io.storage import process_bytes_read as bytes_read
from tfliquid.l3 import decode_l3, encode_l3

PREP_PASS_SHARE = 0.4  # a prep pass lasts this share of a timed run: much shorter ones read low


class EpochClock(keras.callbacks.Callback):
    """Times each epoch; stops the fit once `enough(seconds)` holds. `before_epoch` runs before each, untimed."""

    def __init__(self, enough=lambda seconds: False, before_epoch=None):
        super().__init__()
        self.seconds, self._enough, self._before = [], enough, before_epoch or (lambda: None)

    def on_epoch_begin(self, epoch, logs=None):
        self._before()
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)
        self.model.stop_training = self._enough(self.seconds)


def training_rate(model, dataset, steps: int, batch_size: int, min_seconds=0.0, before_epoch=None) -> float:
    """model.fit over `dataset` repeated on one iterator, `steps` batches an epoch: a first epoch that traces and
    warms up, then epochs until they last `min_seconds` (one at least); their items over their time."""
    clock = EpochClock(lambda seconds: len(seconds) >= 2 and sum(seconds[1:]) >= min_seconds, before_epoch)
    model.fit(dataset.repeat(), steps_per_epoch=steps, epochs=10_000, shuffle=False, verbose=0, callbacks=[clock])
    return steps * batch_size * (len(clock.seconds) - 1) / sum(clock.seconds[1:])


def in_turns(runs: dict[object, Callable], rounds: int) -> dict[object, list]:
    """{key: what runs[key]() returned, round by round}, the runs made in turns."""
    results = {key: [] for key in runs}
    for round_ in range(rounds):
        for key in turn_order(list(runs), round_):
            results[key].append(runs[key]())
    return results


@dataclasses.dataclass
class Job:
    """What the phases share: the model and pipeline, the subset, and what earlier phases left for later ones."""

    model: object
    pipeline: InputPipeline
    items: int  # in the subset, whole batches
    steps: int  # train steps timed for G
    cores: int
    rounds: int  # of the model.fit runs made in turns
    prep_turns: int  # of the prep passes made in turns
    seconds: float  # a timed run lasts, after its warm-up
    caches: contextlib.ExitStack = dataclasses.field(default_factory=contextlib.ExitStack)
    subsets: dict = dataclasses.field(default_factory=dict)  # prep variant -> (its pipeline, its subset in memory)
    served: tuple | None = None  # (the subset's reads through a MinIO cache that holds them, the cache)
    results: dict = dataclasses.field(default_factory=dict)  # Measurements field -> a phase's result

    @property
    def windows(self) -> int:
        return self.items // self.pipeline.batch_size

    def fit_rate(self, dataset, steps: int | None = None, before_epoch=None) -> float:
        """training_rate of the job's model, `steps` batches a window (default: the subset's), a run's seconds."""
        batch, steps = self.pipeline.batch_size, steps or self.windows
        return training_rate(self.model, dataset, steps, batch, self.seconds, before_epoch)

    def subset(self, pipeline: InputPipeline | None = None) -> tf.data.Dataset:
        """The subset's raw elements at `pipeline`'s scan group (default: the job's), read once and kept in memory."""
        pipeline = pipeline or self.pipeline
        if pipeline.scan_group not in self.subsets:
            self.subsets[pipeline.scan_group] = (pipeline, pipeline.reads().take(self.items).cache())
            timed_pass(self.subsets[pipeline.scan_group][1])
        return self.subsets[pipeline.scan_group][1]

    def prep_pass(self, pipeline: InputPipeline, raw, parallelism="pipeline") -> Callable[[], float]:
        """A pass of the prep stage over `raw` in memory, repeated through one pipeline (as a job's epochs run it)
        until it lasts PREP_PASS_SHARE of a timed run at a first pass's rate; it returns items/s."""
        first = timed_pass(pipeline.prepared(raw, parallelism))
        repeats = max(1, min(64, round(PREP_PASS_SHARE * self.seconds / first.seconds)))
        return lambda: timed_pass(pipeline.prepared(raw.repeat(repeats), parallelism)).rate


@dataclasses.dataclass(frozen=True)
class IngestionRate:
    rate: float  # G

    @staticmethod
    def measure(job: Job) -> IngestionRate:
        data = tf.data.Dataset.from_tensors(next(iter(job.pipeline.prepared(job.subset()))))
        return IngestionRate(max(job.fit_rate(data, job.steps) for _ in range(job.rounds)))  # noise only slows


@dataclasses.dataclass(frozen=True)
class PrepRate:
    rate: float  # P, at the pipeline's prep parallelism

    @staticmethod
    def measure(job: Job) -> PrepRate:
        return PrepRate(max(job.prep_pass(job.pipeline, job.subset())() for _ in range(2)))


@dataclasses.dataclass(frozen=True)
class FetchRate:
    bytes_per_second: float  # storage's: the bytes the process read over the time it read them

    @staticmethod
    def measure(job: Job) -> FetchRate:
        """The bytes the process read over the time it read them: readers read whole records ahead of the items they
        yield, so storage's bytes/s, not the items yielded, is F. Timed from the subset's first quarter on where the
        reads went on well past it (readers start up; a throttle lets a burst through after idling), else from the
        start (a small subset read at once). The start's clock runs from the iterator built, its bytes from before:
        building an iterator takes longer than reading a small subset from memory, and its readers start at its end."""
        drop_page_cache(job.pipeline.files)
        before = bytes_read()
        reads = iter(job.pipeline.reads().take(job.items))
        marks = [(time.perf_counter(), before)]
        for _ in reads:
            marks.append((time.perf_counter(), bytes_read()))
        end, quarter = next(mark for mark in marks if mark[1] == marks[-1][1]), marks[len(marks) // 4]
        start = quarter if end[0] - quarter[0] > (end[0] - marks[0][0]) / 2 else marks[0]
        return FetchRate((end[1] - start[1]) / max(end[0] - start[0], 1e-6))


@dataclasses.dataclass(frozen=True)
class CacheRate:
    rate: float  # C
    bytes_per_stored_byte: float  # what the cache counts per byte stored: its items' headers and keys

    @staticmethod
    def measure(job: Job) -> CacheRate:
        """A MinIO cache filled with the subset by one pass (every later read a hit), and passes of its reads."""
        pipeline, before = job.pipeline, bytes_read()
        memory = job.caches.enter_context(MinIOCache(int(4 * job.items * pipeline.bytes_per_item) + (64 << 20)))
        reads = pipeline.reads(cache=memory, shuffle=False).take(job.items)
        timed_pass(reads)
        stored, job.served = bytes_read() - before, (reads, memory)
        return CacheRate(timed_pass(reads.repeat(4)).rate, max(1.0, memory.stats().bytes / stored))


@dataclasses.dataclass(frozen=True)
class JobRates:
    training: float  # the job as it is, from storage
    served: dict  # prep parallelism (None: AUTOTUNE) -> R(k), the job as a full cache serves it: no fetch stall

    @staticmethod
    def measure(job: Job) -> JobRates:
        """The job from storage (page cache dropped before each window), and as the cache serves the subset
        (restarted every epoch of the job's size, as its pipeline is) at every prep parallelism, in turns; each
        timed from its second window on. On the CPU, train steps, prep and reads share the cores: the job without
        fetch is measured, not modelled. The fetch stall is the difference (paper, section 4.2)."""
        pipeline, served = job.pipeline, job.served[0].repeat(max(1, round(job.pipeline.num_items / job.items)))
        parallelisms = dict.fromkeys([None, *range(1, job.cores + 1), pipeline.prep_parallelism])
        runs = {k: functools.partial(job.fit_rate, pipeline.prepared(served, k)) for k in parallelisms}
        drop = functools.partial(drop_page_cache, pipeline.files)
        runs["storage"] = functools.partial(job.fit_rate, pipeline.dataset(), before_epoch=drop)
        rates = in_turns(runs, job.rounds)
        # The served runs compared within each round (the machine's speed drifts between rounds): each one's median
        # ratio to its round's geometric mean, at the median of those means.
        means = [statistics.geometric_mean(round_) for round_ in zip(*(rates[k] for k in parallelisms))]
        level = {k: statistics.median(rate / mean for rate, mean in zip(rates[k], means)) for k in parallelisms}
        return JobRates(statistics.median(rates["storage"]), {k: statistics.median(means) * level[k] for k in level})


@dataclasses.dataclass(frozen=True)
class VariantPreps:
    ratios: dict  # prep variant (a scan group, "l3", "raw") -> its prep rate over the pipeline's, on every core
    stored_ratios: dict  # "l3", "raw" -> their bytes over the PNG files' on the subset

    @staticmethod
    def measure(job: Job) -> VariantPreps:
        pipeline, own, stored_ratios = job.pipeline, job.pipeline.scan_group, {}
        for group in pipeline.fidelities:
            job.subset(pipeline.replace(scan_group=group))
        if pipeline.png:
            for name, store, decode in (("l3", encode_l3, decode_l3), ("raw", tf.identity, tf.identity)):
                sample, stored_ratios[name] = _stored_sample(pipeline, job.subset(), store)
                job.subsets[name] = (pipeline.replace(decode=decode), sample)
        passes = {key: job.prep_pass(variant, raw, job.cores) for key, (variant, raw) in job.subsets.items()}
        rates = in_turns(passes, job.prep_turns)
        ratios = {key: statistics.median(a / b for a, b in zip(rates[key], rates[own])) for key in job.subsets}
        # A lower scan group decodes a part of what a higher one decodes, so it preps at least as fast: groups that
        # break that order by noise share their mean time per item (pooling adjacent violators).
        blocks = []  # [time per item summed, groups], group 1 first
        for group in sorted(pipeline.fidelities, key=lambda g: math.inf if g is None else g):
            blocks.append([1 / ratios[group], [group]])
            while len(blocks) > 1 and blocks[-2][0] / len(blocks[-2][1]) > blocks[-1][0] / len(blocks[-1][1]):
                seconds, groups = blocks.pop()
                blocks[-1] = [blocks[-1][0] + seconds, blocks[-1][1] + groups]
        ratios |= {group: len(groups) / seconds for seconds, groups in blocks for group in groups}
        return VariantPreps({key: ratio / ratios[own] for key, ratio in ratios.items() if key != own}, stored_ratios)


def _stored_sample(pipeline: InputPipeline, raw: tf.data.Dataset, store) -> tuple[tf.data.Dataset, float]:
    """The subset's PNGs decoded and stored again as `store(pixels)`, in memory; and its bytes over the PNGs'."""

    def stored(element):
        image = store(pipeline.decode(element["image"]))
        size = tf.strings.length(image) if image.dtype == tf.string else tf.size(image)
        return {"image": image, "label": element["label"], "bytes": size, "png": tf.strings.length(element["image"])}

    converted = raw.map(stored).cache()
    sizes = [(int(e["bytes"]), int(e["png"])) for e in converted]
    ratio = sum(size for size, _ in sizes) / sum(png for _, png in sizes)
    return converted.map(lambda e: {"image": e["image"], "label": e["label"]}), ratio


@dataclasses.dataclass(frozen=True)
class OpRow:
    name: str  # the tf.data op ("Prefetch", "ParallelMapV2", ...), indented by its depth below the output
    elements: int
    cpu_share: float  # of the CPU time all the pipeline's ops spent (self time)
    microseconds_per_element: float
    parallelism: float | None  # what AUTOTUNE chose (parallelism, or buffer_size for prefetch); None: not tuned


@dataclasses.dataclass(frozen=True)
class OpTable:
    rows: list[OpRow]

    @staticmethod
    def measure(job: Job) -> OpTable:
        return OpTable.of(job.pipeline.prepared(job.pipeline.reads().take(job.items)), max(1, job.windows - 1))

    @staticmethod
    def of(dataset: tf.data.Dataset, batches: int) -> OpTable:
        """`batches` elements of `dataset` (which must hold more: an input at its end leaves the model without its
        statistics), then tf.data's autotune model of its iterator, depth first from the output."""
        iterator = iter(dataset)
        for _ in range(batches):
            next(iterator)
        model = tf.data.experimental.get_model_proto(iterator)
        total, rows = sum(node.processing_time for node in model.nodes.values()) or 1, []

        def visit(node_id: int, depth: int) -> None:
            node = model.nodes[node_id]
            if node.name != "Root":
                tuned = [p.value for p in node.parameters if p.name in ("parallelism", "buffer_size")] or [None]
                per_element = node.processing_time / 1e3 / max(node.num_elements, 1)
                share = node.processing_time / total
                rows.append(OpRow("  " * depth + node.name, node.num_elements, share, per_element, tuned[0]))
            for child in (child for child in node.inputs if child in model.nodes):
                visit(child, depth + (node.name != "Root"))

        visit(model.output, 0)
        return OpTable(rows)


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    field: str  # the Measurements field its result fills
    result: type  # which measures itself: result.measure(job)


PHASES = [
    Phase("ingestion G", "ingestion", IngestionRate),
    Phase("prep P", "prep", PrepRate),
    Phase("fetch F", "fetch", FetchRate),
    Phase("cache C", "cache", CacheRate),
    Phase("training", "jobs", JobRates),
    Phase("prep variants", "variants", VariantPreps),
    Phase("tf.data ops", "ops", OpTable),
]
