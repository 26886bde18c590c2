"""What-if predictions from measured rates (DS-Analyzer, section 5): the training rate a change would reach is the
slowest of what the model ingests, what prep delivers and what storage (and the cache) fetches.

    fetch rate with a MinIO cache of a fraction f:  F'(f) = 1 / (h / C + (1 - h) / F)       (paper, Eq. 3-4)
      h: the share of the bytes a cache sized for f holds of whole records or files (cache_fill), <= f + 1%
    a scan group g reads bytes_per_item(g):        F'(g) = fetch bytes/s / bytes_per_item(g)
    a Liquid png:raw ratio w:(10-w), s = w/10:    P' = 1 / (s / P_png + (1 - s) / P_raw), bytes_per_item =
                                                   s * b_png + (1 - s) * b_raw    (the Liquid profiler's model)
    prep on k threads:                             P'(k) = P * fit(k) / fit(all cores)      (Lobster's hinge)
    predicted rate = min(G, P', F')                                                (the model on an accelerator)
                   = min(R'(k), n / c'(k), F_storage / (1 - h))                  (the model on the CPU)
with the reads from storage spread over the epoch; where a cache leaves whole records (or files) on storage that
are large against the epoch, its epochs replayed record by record instead (with_storage, record_reads).

On the CPU, train steps, prep and reads share the n cores; only storage waits overlap them. R(k) is the job
measured on the subset served by a MinIO cache (no fetch stall; the hits' CPU in it; its pipeline restarted every
epoch of the job's size) with prep on k threads (or AUTOTUNE), and c_R(k) the CPU seconds per item it took:
contention is measured, not modelled. (Measured over the subset in tf.data's memory instead, without the reads, the
job ran 3,600-3,900 items/s where the cache served it at 3,650, and the cores' budget that added the hits' CPU to
it predicted 3,000: CPU seconds counted include threads spinning for work, which yield it under contention.) Its
CPU seconds per item split between the model and prep as 1/G to 1/P, and a change of prep rate (another scan group,
L3, Liquid) scales prep's part; its time per item follows a share beta of the change in prep's, measured:
    c_R'(k) = c_R(k) * s,  s = m + (1 - m) * P / P',  m = (1/G) / (1/G + 1/P)
    R'(k) = R(k) / (1 + beta(k) * (P / P' - 1)),  beta = sum(x_v y_v) / sum(x_v^2), clamped to [0, 1],
    x_v = P / P_v - 1,  y_v = R / R_v - 1
with R_v / R the job's speed-up with a prep variant v (phases.variant_speedup: served by a cache as R is, for a scan
group; over the subsets in memory for L3 or raw, which no cache holds here), prep on every core: the variant whose
rate differs most from the pipeline's, and those the recommendation was checked with (recommendation); beta = 1 - m
(the split's) when no variant differs by a tenth. With prep on 1 thread, beta(1) is fitted to the first variant's
speed-up measured with both preps on 1 thread; between 1 thread and the cores, beta(k) is linear in k
(Measurements.prep_response_at). A variant's P' within a tenth of P is P (same_prep). The split alone
credits the job with the whole saving: scan group 2's prep 1.39x as fast (28% less time) made the benchmark's job
1.06x as fast where it predicted 1.13x (beta 0.22 against 1 - m = 0.41), the job's cores idler with the cheaper prep
(1.92 -> 1.81 of 2), while its CPU seconds per item fell as the split has them (505 -> 449-474 us, 460 predicted).
Reads that cost more CPU than the hits R was measured with (c_C at each scan group, c_F from storage, at another
scan group in the ratio measured between the groups' reads) add their difference:
    c'(k) = c_R'(k) + max(0, h c_C + (1-h) c_F - c_C(pipeline's group)),
and the cores' budget n / c'(k) bounds the rate once the job uses every core.
"""

from __future__ import annotations

import dataclasses
import math

from tfliquid.analysis.cache_fill import held_share
from tfliquid.analysis.monotone import scans_order
from tfliquid.analysis.record_reads import MAX_RECORDS, replayed_rate
from tfliquid.analysis.scaling import ScalingFit
from tfliquid.liquid.profiling import STEPS, predicted_rates

# A change "removes the stall" when its predicted rate reaches this share of the best predicted: near ties, which
# the cost order then decides. The cost order ranks first the slowest of them (the most fidelity kept, the least
# cache), so a wider band is a shortfall by design. At 0.95 and 0.97 the recommendations were predicted 2.6-4% below
# the best; the predictions' errors relative to each other reach 4-5% on this machine, and such recommendations
# measured 0.90-0.91 of the best configuration (the benchmark's, stops 30 and 36).
NEAR_BEST = 0.99

# A prep variant whose rate is within this share of the pipeline's is predicted at the pipeline's (same_prep): the
# passes cannot tell them apart. In the benchmark's prep-bound setup, scan groups 1-6 measured 767-852 items/s
# against full fidelity's 831, in no order of their bytes, and the recommendation gave up fidelity for such noise.
# The job's speed-up is measured only with a variant that differs by more (for the response, and for the
# recommendation's check): the speed-up is known to about 2% (phases.job_speedup), and a smaller difference cannot
# tell how much of it reaches the job.
PREP_RESOLUTION = 0.1
LIQUID_MIX = "liquid"  # Change.prep_variant of a Liquid png:raw ratio
CACHE_SLACK = 1.01  # a cache's capacity over its measured need (Measurements.cache_capacity)


@dataclasses.dataclass(frozen=True)
class Measurements:
    """The phases' rates, items per second, and what they were measured on."""

    ingestion: float  # G
    prep: float  # P, the pipeline's prep parallelism (AUTOTUNE by default), all cores
    prep_by_threads: dict[int, float]
    scaling: ScalingFit
    fetch_bytes_per_second: float  # what storage delivered meanwhile (bytes the process read / time)
    fetch_cpu_seconds_per_item: float  # CPU time (all threads) the reads took per item
    cache_fetch: float  # C, at the pipeline's scan group
    cache_fetch_by_scan_group: dict[int | None, float]  # C at each scan group measured
    cache_cpu_by_scan_group: dict[int | None, float]  # the CPU seconds per cache hit at each scan group
    training: float  # the job as it is, from storage (windows of the subset's size, in turns with the next)
    training_cached: float  # the job over the subset in memory: no fetch
    training_served_by_threads: dict[int | None, float]  # the job on the subset served by a MinIO cache, prep on
    # k threads (None: AUTOTUNE), the pipeline's scan group
    training_cpu_by_threads: dict[int | None, float]  # the CPU seconds per item those runs took (all threads)
    bytes_per_item: dict[int | None, float]  # scan group (None: full fidelity) -> bytes read per item
    scan_group: int | None  # the pipeline's
    scan_groups: int  # the PCR dataset's number of scan groups; 0: not PCR
    prep_by_scan_group: dict[int | None, float]  # prep on every core (not AUTOTUNE) at each scan group measured
    read_cpu_by_scan_group: dict[int | None, float]  # CPU seconds per item reading at each group (page cache warm)
    model_on_cpu: bool
    cores: int
    dataset_bytes: int  # at the pipeline's scan group
    l3_prep: float | None = None  # PNG pipelines: prep with decode_l3 instead of decode_png, on every core
    l3_bytes_ratio: float | None = None  # L3 bytes / PNG bytes on the sample
    raw_prep: float | None = None  # PNG pipelines: prep of the sample's pixels stored raw (Liquid's raw: no
    # decode), on every core
    raw_bytes_ratio: float | None = None  # raw bytes / PNG bytes on the sample
    cache_bytes_per_stored_byte: float = 1.0  # what a MinIO cache counts per byte stored: its items' headers, keys
    cache_item_bytes: dict[int | None, tuple[int, ...]] = dataclasses.field(default_factory=dict)  # scan group ->
    # the sizes of what a cache admits whole (PCR record prefixes, files); none: items too small to matter
    response_variant: int | str | None = None  # the prep variant the job's speed-up was measured with: a scan
    # group (None: full fidelity), "l3" or "raw"
    response_speedup: float | None = None  # R_v / R, the job served (or in memory: phases.variant_speedup); None:
    # not measured (no variant's prep differs enough, or the model is on an accelerator)
    checked_speedups: dict[int | str | None, float] = dataclasses.field(default_factory=dict)  # prep variant ->
    # R_v / R measured for it besides response_variant's: the recommendation's own, checked before it is made
    # (recommendation); prep_response is fitted to them all
    single_thread_speedup: float | None = None  # R_v / R with response_variant's prep, both preps on 1 thread
    # (response_speedup's are on every core); None: not measured (1 core, or no response measured)
    storage_idle_offset: float = 0.0  # seconds a read from idle storage takes beyond its bytes at
    # fetch_bytes_per_second (phases.idle_read_offset)
    read_ahead: int = 1  # records (or files) the read stage opens ahead (InputPipeline.records_ahead)

    def variant_prep(self, variant) -> float:
        """The prep rate on every core of a prep variant: a scan group, "l3" or "raw"."""
        if variant == "l3":
            return self.l3_prep
        if variant == "raw":
            return self.raw_prep
        return self.prep_by_scan_group[variant]

    @property
    def fetch(self) -> float:
        """F, items/s at the pipeline's scan group: storage's bytes/s over an item's bytes (phases.fetch_rate)."""
        return self.fetch_bytes_per_second / self.bytes_per_item[self.scan_group]

    @property
    def model_share(self) -> float:
        """m: the model's share of the job's work per item on the CPU, 1/G to 1/P (each alone on every core)."""
        return (1 / self.ingestion) / (1 / self.ingestion + 1 / self.prep)

    @property
    def measured_speedups(self) -> dict:
        """{prep variant: R_v / R}: the job's speed-ups measured, the response's and the recommendation's checks."""
        first = {} if self.response_speedup is None else {self.response_variant: self.response_speedup}
        return first | self.checked_speedups

    @property
    def prep_response(self) -> float:
        """beta: the share of a relative change in prep's time per item that the job's time per item follows on
        the CPU; 1 - m when no speed-up was measured. One response for every variant, fitted to the speed-ups
        measured (least squares through 0 of the job's relative change in time against prep's): each check adds a
        point. Taking each checked variant at its own speed-up instead let one check decide: a check is known to
        about 5% (analyses of the benchmark's job read scan group 2's at 1.02-1.13), the recommendation moved off
        a variant whose check read low and stayed on one whose check read high (scan group 5's prep 1.48x as fast,
        its job 1.034x; group 6's 1.30x and 1.107x), and that one's prediction came out 4% high."""
        if not self.measured_speedups:
            return 1 - self.model_share
        return self._fitted_response(self.measured_speedups)

    def prep_response_at(self, threads: int | None) -> float:
        """beta(k): prep_response with prep on `threads` threads (None: AUTOTUNE, which settles near the cores, as
        the speed-ups on every core were measured). With prep on 1 thread it is fitted to single_thread_speedup,
        and between 1 thread and the cores it moves linearly in k from that to prep_response. One response for
        every parallelism missed: with prep on fewer threads than cores, prep's thread is the job's bottleneck
        more often, and the job follows more of prep's change. In the benchmark's fetch-bound job, scan group 2's
        prep (1.28x as fast on 1 thread, 1.26x on 2) made the job 1.168x as fast on 1 thread (beta 0.66) and
        1.082x on 2 (beta 0.36), medians of 3 speed-ups each; with the one response of 0.27-0.48 measured on 2,
        scan group 2 all cached on 1 thread was predicted 18.6% below its measurement (stop 40)."""
        if threads is None or threads >= self.cores or self.single_thread_speedup is None:
            return self.prep_response
        on_one = self._fitted_response({self.response_variant: self.single_thread_speedup})
        return on_one + (threads - 1) / (self.cores - 1) * (self.prep_response - on_one)

    def _fitted_response(self, speedups: dict) -> float:
        """beta fitted to {prep variant: R_v / R} (see prep_response), clamped to [0, 1]."""
        points = [
            (self.prep_by_scan_group[self.scan_group] / self.variant_prep(variant) - 1, 1 / speedup - 1)
            for variant, speedup in speedups.items()
        ]
        spread = sum(x * x for x, _ in points)
        if not spread:
            return 0.0  # preps as fast as the pipeline's: no change to follow
        return min(1.0, max(0.0, sum(x * y for x, y in points) / spread))

    def cache_capacity(self, change: Change) -> int:
        """The capacity of a MinIO cache that holds the change's fraction of the dataset as the change stores it:
        its bytes, and the cache's headers and keys as measured on the subset (the same per item or record at
        any scan group), CACHE_SLACK over (the subset's items stand for the dataset's). Sized at the bytes
        alone, a cache for the whole dataset held 9 of its 10 PCR records."""
        return math.ceil(change.cache_fraction * (self.stored_bytes(change) + self.cache_headers) * CACHE_SLACK)

    @property
    def cache_headers(self) -> float:
        """The bytes a MinIO cache of the whole dataset counts besides the items' own: their headers and keys."""
        return self.dataset_bytes * (self.cache_bytes_per_stored_byte - 1)

    def cache_share(self, change: Change) -> float:
        """The share of the dataset's bytes (as the change stores them) that a cache of cache_capacity(change)
        holds once filled: its items are whole records or files (tfliquid.analysis.cache_fill)."""
        if not change.cache_fraction:
            return 0.0
        records = self.stored_records(change)
        if records is None:
            return change.cache_fraction
        return held_share(*records, self.cache_capacity(change))

    def stored_records(self, change: Change) -> tuple[list[float], float] | None:
        """(the sizes of what a cache admits whole, as the change stores them; the headers and keys a cache counts
        with each), or None: items too small to matter."""
        converted = change.l3 or change.liquid_ratio is not None
        items = self.cache_item_bytes.get(self.scan_group if converted else change.group(self))
        if not items:
            return None
        # Converted files (L3, Liquid) keep the records' proportions: the pipeline's sizes, scaled.
        scale = self.stored_bytes(change) / sum(items)
        header_per_item = self.cache_headers / len(self.cache_item_bytes[self.scan_group])
        return [size * scale for size in items], header_per_item

    @property
    def dataset_items(self) -> float:
        """The dataset's items: its bytes over the bytes per item, at the pipeline's scan group."""
        return self.dataset_bytes / self.bytes_per_item[self.scan_group]

    def stored_bytes(self, change: Change) -> float:
        """The dataset's bytes as the change stores them (its scan group, L3, or a Liquid mix)."""
        return self.dataset_items * stored_bytes_per_item(self, change)

    def stall_fractions(self) -> tuple[float, float]:
        """(fetch stall, prep stall) as shares of the job's epoch time, by difference (paper, section 4.2)."""
        epoch = 1 / self.training
        fetch_stall = max(0.0, epoch - 1 / self.training_cached) / epoch
        prep_stall = max(0.0, 1 / self.training_cached - 1 / self.ingestion) / epoch
        return fetch_stall, min(prep_stall, 1 - fetch_stall)


@dataclasses.dataclass(frozen=True)
class Change:
    """One configuration of the pipeline: what the what-if varies."""

    cache_fraction: float = 0.0
    scan_group: int | None = None  # None: the pipeline's own
    prep_parallelism: int | None = None  # None: the pipeline's own (AUTOTUNE)
    l3: bool = False
    liquid_ratio: int | None = None  # a Liquid png:raw dataset with PNG's share in tenths (the rest raw)

    def group(self, measured: Measurements) -> int | None:
        """The scan group the change reads: its own, or the pipeline's."""
        return measured.scan_group if self.scan_group is None else self.scan_group

    def prep_variant(self, measured: Measurements):
        """The prep the change runs: "l3", its scan group (None: full fidelity), or LIQUID_MIX (a png:raw mix of two
        preps, which the Liquid profiler's model rates; no single variant's response is measured for it)."""
        if self.liquid_ratio is not None:
            return LIQUID_MIX
        return "l3" if self.l3 else self.group(measured)

    def cost(self, measured: Measurements) -> tuple:
        """Cheapest first: no conversion (to L3 or Liquid), then the least fidelity given up, then the least
        memory, then a fixed prep parallelism rather than AUTOTUNE, which predict puts at most level with the
        fastest fixed one (and no faster than it settles). Threads cost nothing."""
        group = self.group(measured)
        fidelity_lost = 0 if group is None else measured.scan_groups - group  # scan groups left unread
        converted = self.l3 or self.liquid_ratio is not None
        return (converted, fidelity_lost, self.cache_fraction, self.prep_parallelism is None)


def same_prep(own: float, other: float) -> bool:
    """Whether a variant's prep rate is within PREP_RESOLUTION of the pipeline's: the same, as far as the passes
    can tell."""
    return abs(own / other - 1) < PREP_RESOLUTION


def fetch_with_cache(fetch: float, cache_fetch: float, fraction: float) -> float:
    """F'(f): items/s when a fraction f of the items comes from the cache and the rest from storage."""
    return 1.0 / (fraction / cache_fetch + (1.0 - fraction) / fetch)


def stored_bytes_per_item(measured: Measurements, change: Change) -> float:
    """The bytes an item takes in storage with the change: at its scan group, in L3, or a Liquid png:raw mix."""
    bytes_now = measured.bytes_per_item[measured.scan_group]
    if change.l3:
        return bytes_now * measured.l3_bytes_ratio
    if change.liquid_ratio is not None:
        png_share = change.liquid_ratio / STEPS
        return png_share * bytes_now + (1 - png_share) * bytes_now * measured.raw_bytes_ratio
    return measured.bytes_per_item[change.group(measured)]


def predict(measured: Measurements, change: Change) -> dict[str, float]:
    """{"ingestion", "prep", "fetch", "rate"} for the change: the three stage rates and the rate they allow.
    AUTOTUNE's (prep_parallelism None) is at most the fastest prediction on 1..cores fixed threads: it settles at
    one of them (a parallel map's at most the cores), each predicted from a measurement, and where the analysis'
    short runs measured it ahead of them that was noise. Over whole epochs of model.fit on 2 shared cores it settled
    below 2 fixed threads: in the benchmark's prep-bound job at 0.87-0.89 of their rate, all cached in its
    fetch-bound one at 0.86, where 4 analyses of 5 had predicted it ahead and recommended it."""
    as_measured = _predicted(measured, change)
    if change.prep_parallelism is not None:
        return as_measured
    fixed = (
        _predicted(measured, dataclasses.replace(change, prep_parallelism=k)) for k in range(1, measured.cores + 1)
    )
    return min(as_measured, max(fixed, key=_rate), key=_rate)


def _rate(prediction: dict[str, float]) -> float:
    return prediction["rate"]


def _predicted(measured: Measurements, change: Change) -> dict[str, float]:
    """predict's rates for the change as measured, AUTOTUNE's as its own runs measured it."""
    group = change.group(measured)
    bytes_now = measured.bytes_per_item[measured.scan_group]
    bytes_per_item = stored_bytes_per_item(measured, change)
    # Every variant's prep was measured alike, on all the cores (no autotuner warming up in the passes): their
    # ratio to the pipeline's own scales P.
    reference = measured.prep_by_scan_group[measured.scan_group]
    if change.l3:
        variant = measured.l3_prep
    elif change.liquid_ratio is not None:
        both = [bytes_now, bytes_now * measured.raw_bytes_ratio]
        _, variant = predicted_rates(
            change.liquid_ratio, both, [reference, measured.raw_prep], measured.fetch_bytes_per_second
        )
    else:
        variant = measured.prep_by_scan_group.get(group, reference)
    if same_prep(reference, variant):
        variant = reference
    base_prep = measured.prep * variant / reference
    prep = base_prep
    if change.prep_parallelism is not None:
        fit = measured.scaling
        prep *= fit.rate(change.prep_parallelism) / fit.rate(measured.cores)
    storage = measured.fetch_bytes_per_second / bytes_per_item
    if change.l3 or change.liquid_ratio is not None:
        # not measured for converted files: C scaled by the bytes, its CPU as at the pipeline's group
        cache, cache_cpu = measured.cache_fetch * bytes_now / bytes_per_item, measured.cache_cpu_by_scan_group[group]
    else:
        cache, cache_cpu = measured.cache_fetch_by_scan_group[group], measured.cache_cpu_by_scan_group[group]
    cached = measured.cache_share(change)
    fetch = fetch_with_cache(storage, cache, cached)
    g = measured.ingestion
    if not measured.model_on_cpu:
        rate = with_storage(measured, change, cached, min(g, prep, cache), fetch)
        return {"ingestion": g, "prep": prep, "fetch": fetch, "rate": rate}
    model_share = measured.model_share
    cpu_scale = model_share + (1 - model_share) * measured.prep / base_prep
    k = change.prep_parallelism if change.prep_parallelism in measured.training_served_by_threads else None
    time_scale = 1 + measured.prep_response_at(k) * (measured.prep / base_prep - 1)
    without_fetch = measured.training_served_by_threads[k] / time_scale
    # The base was measured with every read a cache hit at the pipeline's scan group; hits at another group, and
    # reads from storage instead of hits, cost the CPU seconds per item measured for them (storage reads at another
    # group in the ratio measured between the groups' reads: parsing, checksums, copies).
    by_group = measured.read_cpu_by_scan_group
    storage_cpu = measured.fetch_cpu_seconds_per_item * by_group.get(group, by_group[measured.scan_group])
    storage_cpu /= by_group[measured.scan_group]
    served_cpu = measured.cache_cpu_by_scan_group[measured.scan_group]
    read_cpu = cached * cache_cpu + (1 - cached) * storage_cpu
    job_cpu = measured.training_cpu_by_threads[k] * cpu_scale + max(0.0, read_cpu - served_cpu)
    compute = min(without_fetch, measured.cores / job_cpu)
    from_storage = storage / (1.0 - cached) if cached < 1 else float("inf")
    return {
        "ingestion": g,
        "prep": prep,
        "fetch": fetch,
        "rate": with_storage(measured, change, cached, compute, from_storage),
    }


def with_storage(measured: Measurements, change: Change, cached: float, compute: float, fetch: float) -> float:
    """The job's rate where it would run at `compute` but for its reads from storage, which alone allow `fetch`
    spread over the epoch: min(compute, fetch); or, where a cache (holding a share `cached` of the bytes) leaves
    some of a few hundred records or files on storage, its epochs replayed record by record
    (tfliquid.analysis.record_reads): the job waits for a large record the pipeline reaches before its read
    ends."""
    records = measured.stored_records(change)
    if records is None or len(records[0]) > MAX_RECORDS or not 0 < cached < 1:
        return min(compute, fetch)
    sizes, header = records
    return replayed_rate(
        sizes,
        header,
        measured.cache_capacity(change),
        round(measured.dataset_items),
        compute,
        measured.fetch_bytes_per_second,
        measured.storage_idle_offset,
        measured.read_ahead,
    )


def candidate_changes(measured: Measurements, memory_budget_bytes: float) -> list[Change]:
    """Every combination the what-if weighs (as far as the memory budget holds its cache): cache fractions 0, 0.1,
    ..., 1, every scan group measured, prep parallelism AUTOTUNE or 1..cores, and L3 and the Liquid png:raw
    ratios 0:10 ... 9:1 when they were measured."""
    fractions = [f / 10 for f in range(11)]
    groups = sorted(measured.prep_by_scan_group, key=scans_order)
    parallelisms = [None, *range(1, measured.cores + 1)]
    changes = [
        Change(cache_fraction=f, scan_group=g, prep_parallelism=k)
        for f in fractions
        for g in groups
        for k in parallelisms
    ]
    if measured.l3_prep is not None:
        changes += [Change(cache_fraction=f, l3=True, prep_parallelism=k) for f in fractions for k in parallelisms]
    if measured.raw_prep is not None:
        changes += [
            Change(cache_fraction=f, liquid_ratio=w, prep_parallelism=k)
            for f in fractions
            for w in range(STEPS)
            for k in parallelisms
        ]
    return [change for change in changes if measured.cache_capacity(change) <= memory_budget_bytes]


def recommend(measured: Measurements, memory_budget_bytes: float) -> tuple[Change, dict[str, float], float]:
    """The cheapest change whose predicted rate is within NEAR_BEST of the best any candidate reaches; returns
    (change, its prediction, the best predicted rate)."""
    changes = candidate_changes(measured, memory_budget_bytes)
    predictions = {change: predict(measured, change) for change in changes}
    best = max(p["rate"] for p in predictions.values())
    good = [c for c in changes if predictions[c]["rate"] >= NEAR_BEST * best]
    chosen = min(good, key=lambda c: (c.cost(measured), -predictions[c]["rate"]))
    return chosen, predictions[chosen], best
