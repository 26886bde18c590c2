"""DS-Analyzer's differential phases on stock TensorFlow (paper, sections 4.2 and 5.1): each phase runs one part of
the job in isolation over a small subset and returns a rate in items per second.

  ingestion_rate       G: train steps on one batch repeated in memory (no input pipeline)
  prep_rate            P: the prep stage over raw items cached in memory, no model
  fetch_rate           F: the read stage alone, from storage (page cache dropped first, or the read throttle)
  idle_read_offset     how much longer (or shorter) a read from idle storage takes than its bytes at F
  cache_fetch_rate     C: the read stage through a MinIO cache holding the subset (served_subset)
  training_rate        the whole job (or the job over a subset the cache serves: fetch stalls removed)
  job_with_and_without_fetch   the job on a subset from storage and from memory, in turns: the stall split
  op_table             what tf.data's autotuner measured and chose, per op (tf.data.experimental.get_model_proto)
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import resource
import statistics
import time

import tensorflow as tf

from tfliquid._common.timing import timed_pass, turn_order
from tfliquid.analysis.pipeline import InputPipeline


@dataclasses.dataclass
class Ledger:
    """What the analysis cost: items it read from storage, the time its phases took, and the rounds of its
    measurements made in turns."""

    rounds: Rounds
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


def epoch_clock():
    """A Keras callback class timing each epoch (Keras is imported here, on first use)."""
    import keras

    class EpochClock(keras.callbacks.Callback):
        """Times each epoch (seconds and the process' CPU seconds); stops the fit once `enough(seconds)` holds
        after an epoch."""

        def __init__(self, enough, before_epoch=None):
            super().__init__()
            self.seconds, self.cpu_seconds = [], []
            self._enough, self._before = enough, before_epoch

        def on_epoch_begin(self, epoch, logs=None):
            if self._before is not None:
                self._before()
            self._start, self._cpu_start = time.perf_counter(), _cpu_seconds()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)
            self.cpu_seconds.append(_cpu_seconds() - self._cpu_start)
            if self._enough(self.seconds):
                self.model.stop_training = True

    return EpochClock


@dataclasses.dataclass(frozen=True)
class TrainingRate:
    items_per_second: float
    cpu_seconds_per_item: float  # CPU time of the whole process (all threads) per item trained
    epochs: int  # that ran, the first (not timed) included


# An epoch of the analysis' subset, or of a small dataset, can take a tenth of a second on a fast job: single
# epochs' rates spread by +-10% on 2 shared cores (the benchmark's job served by a cache: 2,675-3,547 items/s over 60
# epochs), medians of 3 by as much, medians of 10 by +-3.5%. A measurement with `min_seconds` runs as many epochs
# as fill them; MAX_EPOCHS only bounds a fit whose epochs take no time.
MAX_EPOCHS = 10_000


def training_rate(
    model,
    dataset: tf.data.Dataset,
    steps: int,
    batch_size: int,
    before_epoch=None,
    epochs: int = 2,
    callbacks=(),
    min_seconds: float = 0.0,
    pooled: bool = False,
) -> TrainingRate:
    """model.fit over `dataset` (repeated, on one iterator; `steps` batches an epoch): the median of the epochs
    after the first (which traces and warms up), of which there are `epochs` - 1, or more until they last
    `min_seconds`; `pooled`: their items over their time instead (see STORAGE_SECONDS). `before_epoch` runs before
    each epoch, outside the timing (e.g. dropping caches); `callbacks` run besides the clock."""
    if epochs < 2:
        raise ValueError(f"epochs must be at least 2 (the first is not timed), got {epochs}")
    # the first epoch traces and warms up: the timed ones follow it
    clock = epoch_clock()(lambda seconds: len(seconds) >= epochs and sum(seconds[1:]) >= min_seconds, before_epoch)
    model.fit(
        dataset.repeat(),
        steps_per_epoch=steps,
        epochs=epochs if min_seconds <= 0 else MAX_EPOCHS,
        shuffle=False,
        verbose=0,
        callbacks=[*callbacks, clock],
    )
    seconds, cpu_seconds, epochs = clock.seconds[1:], clock.cpu_seconds[1:], len(clock.seconds)
    items = steps * batch_size
    if pooled:
        timed = items * len(seconds)
        return TrainingRate(timed / sum(seconds), sum(cpu_seconds) / timed, epochs)
    return TrainingRate(items / statistics.median(seconds), statistics.median(cpu_seconds) / items, epochs)


# Rounds of the job's differential pair (from storage and from memory) made in turns: windows of a small subset
# (tens of milliseconds in the tests) on 2 shared cores, so each rate is a median of rounds.
TRAINING_ROUNDS = 3

# Rounds of the served job. The what-if's prediction at k threads is R(k) itself where the job is all cached, and on
# 2 shared cores prep on 1 thread runs some windows at about 2,400 items/s and others at 3,400-3,800, beside 2
# threads' and AUTOTUNE's 3,400-4,100 (the benchmark's fetch-bound job, stop 39). Four measurements of 3 rounds put
# its R(1)/R(2) at 0.790-0.977 (median 0.870), four of 8 rounds beside them at 0.932-1.021 (0.984; 42-47 s on 3
# parallelisms); its whole dataset measured 1.00 in stop 38.
SERVED_ROUNDS = 8

# The job from storage, when storage limits it, receives its items in bursts of a record (or file) each, and a
# window of the subset (a few records) starts and ends on a burst's edge, one record more or less: timed over one
# window, the benchmark's throttled job (records of 64 items, windows of 128) ran at 400 items/s or at 836-855 by
# the bursts' phase (3 windows of 12, and the median of one set of 3 in 4). The storage turn is timed over windows
# that last STORAGE_SECONDS, its rate their items over their time: the medians of 8 analyses' turns read 402-457.
STORAGE_SECONDS = 1.0


def _rates_in_turns(model, runs: dict, steps: int, batch_size: int, rounds: int) -> dict:
    """{key: its `rounds` TrainingRates, round by round}: `runs` maps a key to (dataset, its training_rate options:
    before_epoch, min_seconds, pooled), and each round runs every one of them in turn, a model.fit of its own, in
    turn_order, so that no run always follows the same neighbour (in one fixed order, the served job's R(1)/R(2) read
    0.98 in analyze's order and 0.85-0.89 in two others, stop 38; within what such measurements scatter by: with a
    gc.collect() before each run, 0.83-1.06 in stop 39)."""
    rates = {key: [] for key in runs}
    for round_ in range(rounds):
        for key in turn_order(list(runs), round_):
            dataset, options = runs[key]
            rates[key].append(training_rate(model, dataset, steps, batch_size, **options))
    return rates


def _median_run(runs_of: list[TrainingRate]) -> TrainingRate:
    return sorted(runs_of, key=lambda r: r.items_per_second)[len(runs_of) // 2]


def _items_per_second(rates: dict) -> dict:
    """{key: its runs' items/s, round by round} from _rates_in_turns' {key: its TrainingRates}."""
    return {key: [run.items_per_second for run in runs] for key, runs in rates.items()}


def _median_ratio(rates: list[float], anchors: list[float]) -> float:
    """The median over the rounds of a rate over the same round's anchor: measurements paired within their rounds,
    where this machine's speed shifts by up to 15% for tens of seconds between rounds."""
    return statistics.median(rate / anchor for rate, anchor in zip(rates, anchors))


def job_with_and_without_fetch(
    model, pipeline: InputPipeline, raw: tf.data.Dataset, items: int, rounds: int = TRAINING_ROUNDS
) -> tuple[float, float, int]:
    """(the job as it is, the job without fetch, items/s; the items read from storage): model.fit over the dataset
    read from storage (page cache dropped before each window; timed over STORAGE_SECONDS of windows, pooled) and
    over the subset `raw` in memory, `items` a window, in turns for `rounds` rounds; the medians. Each turn is one
    pipeline timed from its second window on, so neither rate counts a pipeline's start (which a job's epoch pays
    once, not once per subset): the fetch stall is their difference (paper, section 4.2). One run after the other,
    with the storage run restarting its pipeline per subset, put 0.27 of a prep-bound job's time down as fetch
    stall."""
    from_storage = dict(before_epoch=lambda: drop_page_cache(pipeline.files), min_seconds=STORAGE_SECONDS, pooled=True)
    runs = {
        "storage": (pipeline.prepared(pipeline.reads().repeat()), from_storage),
        "memory": (pipeline.prepared(raw.repeat()), {}),
    }
    rates = _rates_in_turns(model, runs, items // pipeline.batch_size, pipeline.batch_size, rounds)
    items_read = sum(run.epochs for run in rates["storage"]) * items
    return _median_run(rates["storage"]).items_per_second, _median_run(rates["memory"]).items_per_second, items_read


# The job's speed-up with another prep (the what-if's response of the job to its prep on the CPU) is a ratio of
# two jobs whose rates move by up to 10% from round to round on 2 shared cores, and of which the ratio is a few
# percent: each round pairs them, and the speed-up is the median of the rounds' ratios. 16 such rounds of 1.5 s put
# scan group 2's speed-up on the benchmark's job at 1.06 (1.01-1.14). With 4 rounds, analyses of the benchmark's
# fetch-bound job measured beta at 0.00 (scan group 3's prep 1.24x as fast, its job 0.971x) to 0.36 (group 1's,
# 1.27x and 1.08x); at 0 the what-if saw no gain in any lower scan group where group 2 all cached ran 6% faster than
# full fidelity. Rounds of half a second: the pairs closer in time, where this machine's speed drifts over tens of
# seconds. With 8 of them (at AUTOTUNE), three analyses in a row measured beta at 0.00, 0.51 and 0.32, and the one
# at 0 recommended full fidelity all cached, which stop 36's grid measured at 0.935 of scan group 2 all cached; with
# 16, four at 0.10, 0.34, 0.22 and 0.00 (for the zeros, see job_speedup's parallelism). 16 rounds, 16-20 s a
# speed-up on 2 cores, halve the variance of their median.
RESPONSE_ROUNDS = 16
RESPONSE_SECONDS = 0.5


# The what-if scales the job as a cache serves it (its base on the CPU) by the job's response to its prep, so the
# response is measured served where it can be: on the benchmark's fetch-bound job, scan group 2's speed-up on 2
# threads read 1.091 (1.035-1.099) over the subsets in memory, 1.006 (0.994-1.052) served, and the grid's
# measurements 0.985-1.019 (stop 41's probe, 3 repeats in turns; runs 40 and 41).
def variant_speedup(
    model,
    pipeline: InputPipeline,
    prep_variants: dict,
    variant,
    items: int,
    parallelism: int,
    rounds: int,
    served: dict | None = None,
) -> float:
    """job_speedup with the prep variant `variant` against the pipeline's own, both from `prep_variants` (a variant
    -> (its pipeline, its subset in memory), the pipeline's own under its scan group). Where `served` (a variant ->
    its ServedSubset: the scan groups) has both, the jobs run as a cache serves them (served_epoch), as the
    what-if's base does; else over their subsets in memory, without restarts."""
    (_, raw), (variant_pipeline, variant_raw) = prep_variants[pipeline.scan_group], prep_variants[variant]
    if served and variant in served and pipeline.scan_group in served:
        reads = served_epoch(pipeline, served[pipeline.scan_group])
        variant_reads = served_epoch(variant_pipeline, served[variant])
    else:
        reads, variant_reads = raw.repeat(), variant_raw.repeat()
    return job_speedup(model, pipeline, reads, variant_pipeline, variant_reads, items, parallelism, rounds)


# The job's speed-up is measured with both preps on a fixed parallelism (analyze: every core), not AUTOTUNE, which
# settles each prep at a parallelism of its own run by run: at AUTOTUNE the speed-up read below 1 in one analysis of
# three or four of the benchmark's fetch-bound job (scan group 1's prep 1.26x as fast, its job 0.983x; group 5's
# 1.34x, 0.981x), where on 2 fixed threads the same check of scan group 2 read 1.03-1.13 in 5 runs of 5.
def job_speedup(
    model,
    pipeline: InputPipeline,
    reads: tf.data.Dataset,
    variant: InputPipeline,
    variant_reads: tf.data.Dataset,
    items: int,
    parallelism: int,
    rounds: int = RESPONSE_ROUNDS,
) -> float:
    """R_variant / R: the job over the variant's read stage (`variant_reads`, prepared by `variant`) against the
    job over the pipeline's (`reads`), both with prep on `parallelism` threads, `items` a window, each a model.fit
    of a warm-up window and as many more as last RESPONSE_SECONDS, in turns for `rounds` rounds; the median of the
    rounds' ratios. Each read stage restarts where it ends (training_rate repeats it)."""
    timed = dict(min_seconds=RESPONSE_SECONDS)
    runs = {
        "pipeline": (pipeline.prepared(reads, parallelism), timed),
        "variant": (variant.prepared(variant_reads, parallelism), timed),
    }
    rates = _rates_in_turns(model, runs, items // pipeline.batch_size, pipeline.batch_size, rounds)
    per_second = _items_per_second(rates)
    return _median_ratio(per_second["variant"], per_second["pipeline"])


def ingestion_rate(model, batch, steps: int) -> float:
    """G: items/s of `steps` train steps on `batch` (x, y) repeated from memory, after a warm-up epoch."""
    batch_size = int(tf.nest.flatten(batch)[0].shape[0])
    return training_rate(model, tf.data.Dataset.from_tensors(batch), steps, batch_size).items_per_second


# A prep measurement reads the cached subset over and over through ONE pipeline (training runs repeat the subset
# endlessly under the prep stage): repeating the prepared pipeline instead restarted its parallel map every pass
# (4 batches in benchmarks.analyzer), and its refills cut the rate measured: prep on 2 cores 4,912-4,922 items/s
# that way against 6,690 through one pipeline, on 1 thread 2,536-2,755 against 4,047. A pass lasts at least
# PREP_PASS_SECONDS: light prep read 128 items 4 times in 60-70 ms, 12% below its rate over passes of 0.4 s and
# 10% apart between passes, which put scan group 5 below full fidelity.
SUBSET_REPEATS = 4  # at least
PREP_PASS_SECONDS = 0.4
MAX_SUBSET_REPEATS = 64

# The times cached_raw reads its items from storage: the fill, then once and once repeated for the CPU per item.
CACHED_RAW_READS = 4


def cached_raw(pipeline: InputPipeline, items: int) -> tuple[tf.data.Dataset, float]:
    """`items` raw elements read once and kept in memory (tf.data's cache): the prep stage's input without fetch;
    and the CPU seconds per item that reading them again takes (page cache warm, marginal: see
    _marginal_read_rate)."""
    reads = pipeline.reads().take(items)
    raw = reads.cache()
    for _ in raw:  # fill
        pass
    return raw, _marginal_read_rate(pipeline, reads, CACHED_RAW_READS - 2).cpu_seconds_per_item


def _prep_pass(pipeline: InputPipeline, raw: tf.data.Dataset, parallelism, repeats: int):
    return timed_pass(pipeline.prepared(raw.repeat(repeats), parallelism))


def _sized_prep_pass(pipeline: InputPipeline, raw: tf.data.Dataset, parallelism) -> tuple[int, list]:
    """(the repeats of the subset a pass needs to last PREP_PASS_SECONDS, [a first pass of SUBSET_REPEATS if it
    lasted that long: it counts])."""
    first = _prep_pass(pipeline, raw, parallelism, SUBSET_REPEATS)
    if first.seconds >= PREP_PASS_SECONDS:
        return SUBSET_REPEATS, [first]
    return min(MAX_SUBSET_REPEATS, math.ceil(SUBSET_REPEATS * PREP_PASS_SECONDS / first.seconds)), []


def prep_rate(
    pipeline: InputPipeline, raw: tf.data.Dataset, parallelism: int | None | str = "pipeline", passes: int = 2
) -> float:
    """P: items/s of the prep stage (and batching) over raw elements in memory, no model; best of `passes`, each
    reading the elements through one pipeline SUBSET_REPEATS times, or as many more (up to MAX_SUBSET_REPEATS)
    as fill PREP_PASS_SECONDS at the rate of a first pass of SUBSET_REPEATS, which then does not count."""
    repeats, timings = _sized_prep_pass(pipeline, raw, parallelism)
    timings += [_prep_pass(pipeline, raw, parallelism, repeats) for _ in range(passes - len(timings))]
    return max(t.rate for t in timings)


# This machine's speed shifts by up to 15% for tens of seconds at a time (the prep-bound job ran near 710 or near
# 815 items/s on the same 1.95 cores of CPU), so prep variants compared with each other are measured in turns. With
# 3 turns, nine analyses of the benchmark's fetch-bound job reported scan group 1's prep at 1.05x to 1.53x full
# fidelity's (median 1.31x), and at 1.05x the what-if saw no gain in any scan group; 5 turns.
PREP_TURNS = 5


def prep_rates_in_turns(variants: dict, reference, parallelism: int, rounds: int = PREP_TURNS) -> dict:
    """P of each variant (key -> (InputPipeline, its raw elements in memory)) on `parallelism` threads, in turns:
    `rounds` rounds of one pass of each (sized as prep_rate's; the order reversed every other round). The
    `reference` variant's rate is its best pass; each other's is that times the median of its passes' ratios to
    the reference's pass of the same round."""
    repeats = {key: _sized_prep_pass(pipeline, raw, parallelism)[0] for key, (pipeline, raw) in variants.items()}
    rates, order = {key: [] for key in variants}, list(variants)
    for round_ in range(rounds):
        for key in turn_order(order, round_):
            pipeline, raw = variants[key]
            rates[key].append(_prep_pass(pipeline, raw, parallelism, repeats[key]).rate)
    best, by_round = max(rates[reference]), rates[reference]
    return {key: best * _median_ratio(rates[key], by_round) for key in variants}


@dataclasses.dataclass(frozen=True)
class Rounds:
    """How often analyze repeats its measurements made in turns, of which the what-if takes medians: the job with
    and without fetch (`training`), the job served by the cache (`served`), each job speed-up (`response`), the
    prep variants (`prep_turns`). The defaults are the rounds benchmarks.analyzer validates the predictions with."""

    training: int = TRAINING_ROUNDS
    served: int = SERVED_ROUNDS
    response: int = RESPONSE_ROUNDS
    prep_turns: int = PREP_TURNS


# analyze(quick=True): one round of each but the speed-ups' (3: a median), less than half the time of an analysis. For
# a first look: the tests' fetch-bound and prep-bound setups are classified as by the default, the predictions
# scatter more (single runs of 2 shared cores' jobs spread by +-10%, see MAX_EPOCHS).
QUICK_ROUNDS = Rounds(training=1, served=1, response=3, prep_turns=1)


def bytes_read_by_this_process() -> int | None:
    """Bytes this process has read through read/pread calls so far (Linux /proc/self/io `rchar`), or None."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
    except (OSError, StopIteration, ValueError):
        return None


@dataclasses.dataclass(frozen=True)
class ReadRate:
    items_per_second: float
    bytes_per_second: float  # what the process read meanwhile
    cpu_seconds_per_item: float  # CPU time the process spent per item (all threads): the reads' share of cores


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _pass_totals(dataset: tf.data.Dataset) -> tuple[int, float, int | None, float]:
    """(elements, seconds, bytes read, CPU seconds) of one pass over `dataset`."""
    bytes_before, cpu_before = bytes_read_by_this_process(), _cpu_seconds()
    timing = timed_pass(dataset)
    bytes_after = bytes_read_by_this_process()
    read = bytes_after - bytes_before if bytes_before is not None and bytes_after is not None else None
    return timing.elements, timing.seconds, read, _cpu_seconds() - cpu_before


def _marginal_read_rate(pipeline: InputPipeline, dataset: tf.data.Dataset, times: int) -> ReadRate:
    """The read stage's rate and CPU per item over one epoch of the whole dataset, from a pass over `dataset` (a
    subset) and one over it repeated `times` times: their difference gives the cost per item, the rest the cost
    of starting and stopping the stage (threads, first reads), which an epoch pays once, not once per subset."""
    once = _pass_totals(dataset)
    repeated = _pass_totals(dataset.repeat(times))
    items, seconds = repeated[0] - once[0], repeated[1] - once[1]
    if items <= 0:
        raise ValueError(f"the read stage yielded {once[0]} items once and {repeated[0]} repeated {times} times")
    if seconds <= 0 or repeated[3] <= once[3]:
        # The passes' noise outweighed the items' cost (fast reads, a busy machine): no start-up to tell apart,
        # so the repeated pass's own averages, which count its start-up once.
        once = (0, 0.0, 0 if repeated[2] is not None else None, 0.0)
        items, seconds = repeated[0], repeated[1]
    cpu_per_item = (repeated[3] - once[3]) / items
    start_seconds = max(0.0, once[1] - once[0] * seconds / items)
    start_cpu = max(0.0, once[3] - once[0] * cpu_per_item)
    epoch = pipeline.num_items
    epoch_seconds = start_seconds + epoch * seconds / items
    read = repeated[2] - once[2] if once[2] is not None and repeated[2] is not None else None
    bytes_per_second = (read if read is not None else items * pipeline.bytes_per_item) / seconds
    return ReadRate(epoch / epoch_seconds, bytes_per_second, cpu_per_item + start_cpu / epoch)


def fetch_rate(pipeline: InputPipeline, items: int) -> ReadRate:
    """F: the read stage alone over `items` items from storage (page cache dropped first), timed from its first
    quarter on: a read throttle lets a burst through after idling, and readers start up. The bytes are those the
    process read meanwhile; without /proc/self/io, items times their mean size. Its items/s are storage's bytes/s
    over an item's bytes, not the items the stage yielded meanwhile: a reader reads whole records or blocks ahead
    of the items it yields, so over a subset of a few records its own count lags (one 64-image PCR record: 50
    items/s yielded where storage delivered the bytes of 133)."""
    drop_page_cache(pipeline.files)
    skip, count, mark = max(1, items // 4), 0, None
    for _ in pipeline.reads().take(items):
        count += 1
        if count == skip:
            mark = (time.perf_counter(), bytes_read_by_this_process(), _cpu_seconds())
    end = (time.perf_counter(), bytes_read_by_this_process(), _cpu_seconds())
    if mark is None or count <= skip:
        raise ValueError(f"the read stage yielded {count} items, fewer than the {items} asked")
    seconds, timed = end[0] - mark[0], count - skip
    read = end[1] - mark[1] if mark[1] is not None else timed * pipeline.bytes_per_item
    return ReadRate(read / seconds / pipeline.bytes_per_item, read / seconds, (end[2] - mark[2]) / timed)


IDLE_SECONDS = 0.2  # storage left idle before the timed read: longer than a read throttle banks (50 ms)
FIRST_READS = 3


def idle_read_offset(pipeline: InputPipeline, bytes_per_second: float) -> tuple[float, int]:
    """How much later (negative: sooner) a read from storage left idle ends than its bytes take at the steady rate
    `bytes_per_second`: a disk's seek, or a read throttle that lets a burst through after idling. The read stage
    reads one record (or file) at a time in stored order from a cold page cache; after the first record's items,
    storage idles for IDLE_SECONDS, and the next item (the second record, opened and read) is timed, less its
    bytes at the steady rate. Timed mid-stream: a first item's time would count the stage's start (its iterator
    and threads, 30-40 ms here), which an epoch pays once, not every read. The median of FIRST_READS; 0 with
    fewer than 2 records. The replay of partly cached epochs takes it (tfliquid.analysis.record_reads). Returns
    (the offset, seconds; the items of the records it read from storage, the second taken as large as the
    first)."""
    sizes = pipeline.cache_item_bytes(pipeline.scan_group)
    if len(sizes) < 2:
        return 0.0, 0
    options = tf.data.Options()
    # Neither a prefetch tf.data injects nor a map it makes parallel reads the next record ahead.
    options.experimental_optimization.inject_prefetch = False
    options.experimental_optimization.map_parallelization = False
    one_at_a_time = pipeline.replace(read_parallelism=1)
    offsets = []
    for _ in range(FIRST_READS):
        drop_page_cache(pipeline.files)
        items = iter(one_at_a_time.reads(shuffle=False).with_options(options))
        for _ in range(pipeline.first_read_items):
            next(items)
        time.sleep(IDLE_SECONDS)
        start = time.perf_counter()
        next(items)
        offsets.append(time.perf_counter() - start - sizes[1] / bytes_per_second)
    return statistics.median(offsets), FIRST_READS * 2 * pipeline.first_read_items


@dataclasses.dataclass(frozen=True)
class ServedSubset:
    reads: tf.data.Dataset  # the subset's read stage, every item a hit of a filled MinIO cache
    items: int  # in the subset
    cache_bytes_per_stored_byte: float  # what the cache counts per byte stored (its items' headers and keys)
    cache: object  # the MinIOCache serving it: its stats count every pass's hits


@contextlib.contextmanager
def served_subset(pipeline: InputPipeline, items: int):
    """A MinIO cache filled with the subset's `items` items by one pass from storage, and the subset's read stage
    served from it (the same items every pass: shuffle off); the cache is released on exit."""
    from tfliquid.cache import MinIOCache

    with MinIOCache(int(4 * items * pipeline.bytes_per_item) + (64 << 20)) as cache:
        reads = pipeline.reads(cache=cache, shuffle=False).take(items)
        stored = _pass_totals(reads)[2]  # the fill: bytes read from storage
        if not stored:
            stored = items * pipeline.bytes_per_item
        yield ServedSubset(reads, items, max(1.0, cache.stats().bytes / stored), cache)


# The job served by the cache is the what-if's base on the CPU: each of its runs lasts SERVED_SECONDS after a
# warm-up window. With one window a run (a tenth of a second on the benchmark's fetch-bound job), two analyses of
# one setup predicted 3,469 and 3,873 items/s for one configuration. Its pipeline restarts where the job's epochs
# would, every num_items items, as model.fit's do: prep on 2 threads over the subset repeated without end (a
# pipeline that never restarts) ran 7-9% slower than the benchmark's whole dataset of 640 items an epoch served by
# a cache (3,123 against 3,347 items/s, 5 rounds in turns), and as fast with the subset's pipeline restarted every
# 640 items (3,431); on 1 thread all three alike.
SERVED_SECONDS = 1.0


def served_epoch(pipeline: InputPipeline, served: ServedSubset) -> tf.data.Dataset:
    """The served subset's reads repeated to an epoch of the job's size (num_items), after which a job's pipeline
    starts again."""
    return served.reads.repeat(max(1, round(pipeline.num_items / served.items)))


def served_training_rates(
    model, pipeline: InputPipeline, served: ServedSubset, parallelisms: list, steps: int, rounds: int = SERVED_ROUNDS
) -> dict[int | None, TrainingRate]:
    """The job on the subset the cache serves, prep at each of `parallelisms` (None: AUTOTUNE), `steps` batches a
    window, its pipeline started again every epoch of the job's size (the subset repeated to num_items): a
    model.fit per parallelism of a warm-up window and as many more as last SERVED_SECONDS, in turns for `rounds`
    rounds (each run's rate the median of its windows); paired within the rounds (_paired_runs)."""
    epoch = served_epoch(pipeline, served)
    runs = {k: (pipeline.prepared(epoch, k), dict(min_seconds=SERVED_SECONDS)) for k in parallelisms}
    return _paired_runs(_rates_in_turns(model, runs, steps, pipeline.batch_size, rounds))


def _paired_runs(rates: dict) -> dict:
    """{key: a TrainingRate} from `rates` ({key: its runs, round by round}, every key run once a round): each
    key's rate the median over the rounds of its ratio to the round's geometric mean over the keys, times the
    median of those means; its CPU seconds per item its median run's. The what-if takes one parallelism's job
    relative to another's, and this machine's speed shifts by up to 15% for tens of seconds at a time: a round's
    runs are seconds apart, the medians of each key's own runs come from different rounds."""
    per_second = _items_per_second(rates)
    means = [statistics.geometric_mean(round_) for round_ in zip(*per_second.values())]
    level = statistics.median(means)
    return {
        key: dataclasses.replace(
            _median_run(rates[key]), items_per_second=level * _median_ratio(per_second[key], means)
        )
        for key in rates
    }


def cache_fetch_rate(pipeline: InputPipeline, served: ServedSubset) -> ReadRate:
    """C: the read stage through a MinIO cache that holds every item read (marginal: see _marginal_read_rate)."""
    return _marginal_read_rate(pipeline, served.reads, 4)


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
