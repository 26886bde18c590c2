"""What-if predictions from the phases' measurements (DS-Analyzer, section 5), and the recommendation.

The job without fetch, R(k) at prep parallelism k, is measured as a full cache serves it (phases.jobs); a change of
prep to P' (a scan group's, L3's, a Liquid png:raw mix's) scales it by the share of the job's time that is prep's,
and the reads bound it, storage's spread over the epoch beside the cache's hits:
    R'(k) = min(G, R(k) / (1 + s (P / P' - 1))),    fetch = min(F' / (1 - h), C' / h),    rate = min(R'(k), fetch)
On an accelerator the model runs beside the input pipeline and s = 1, the paper's min(G, P'); on the CPU train
steps and prep share the cores, and s = (1 / P) / (1 / G + 1 / P), their split as G and P measured alone. F' is
storage's bytes/s over the change's bytes per item, C' the cache's hits at the change's bytes per item, h the share
of the bytes a MinIO cache of the change's size holds (as many whole records or files as fit).
"""

from __future__ import annotations

import dataclasses
import math
import operator

from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.liquid.profiling import STEPS

NEAR_BEST = 0.99  # a change within this share of the best predicted rate ties with it: the cheapest tied wins
# (and a change predicted within it of the job as it is, measured or predicted, does not help)
PREP_RESOLUTION = 0.1  # a prep within this share of the pipeline's is the pipeline's, as far as passes can tell
# A partial cache is recommended where it reaches the best with storage this much slower, if any does: whole records
# are read in lumps, and where storage just keeps up the job waits for them (the what-if spreads them evenly).
LUMPY_READS = 1.25
CACHE_SLACK = 1.01  # a recommended cache's capacity over its measured need
_rate = operator.itemgetter("rate")


@dataclasses.dataclass(frozen=True)
class Measurements:
    """The phases' results (rates in items per second), and what they were measured on."""

    ingestion: phases.IngestionRate
    prep: phases.PrepRate
    fetch: phases.FetchRate
    cache: phases.CacheRate
    jobs: phases.JobRates
    variants: phases.VariantPreps
    ops: phases.OpTable
    pipeline: InputPipeline  # what was measured
    cores: int
    model_on_cpu: bool

    def bytes_per_item(self, scan_group) -> float:
        return self.pipeline.bytes_per_epoch(scan_group) / self.pipeline.num_items

    def stall_fractions(self) -> tuple[float, float]:
        """(fetch stall, prep stall), shares of the job's epoch time, by difference (paper, section 4.2): an item's
        time in the job beyond the job without fetch, and the job without fetch's beyond the model alone (G). The
        rest is the model's own. Each time is held between the next smaller and the job's, which noise can put out
        of that order: the three shares are never negative and add to 1."""
        epoch = 1 / self.jobs.training
        model = min(1 / self.ingestion.rate, epoch)
        without_fetch = min(max(1 / self.jobs.served[self.pipeline.prep_parallelism], model), epoch)
        return (epoch - without_fetch) / epoch, (without_fetch - model) / epoch

    def prep_ratio(self, change: Change) -> float:
        """P' / P (1 within phases.PREP_RESOLUTION, which the passes cannot tell apart)."""
        ratios = self.variants.ratios
        if change.liquid_ratio is not None:
            png = change.liquid_ratio / STEPS
            ratio = 1 / (png + (1 - png) / ratios["raw"])
        else:
            ratio = ratios["l3"] if change.l3 else ratios.get(change.group(self), 1.0)
        return 1.0 if abs(ratio - 1) < PREP_RESOLUTION else ratio

    def item_bytes(self, change: Change) -> float:
        """An item's bytes in storage with the change: at its scan group, in L3, or a Liquid png:raw mix."""
        now = self.bytes_per_item(self.pipeline.scan_group)
        if change.l3:
            return now * self.variants.stored_ratios["l3"]
        if change.liquid_ratio is not None:
            png = change.liquid_ratio / STEPS
            return now * (png + (1 - png) * self.variants.stored_ratios["raw"])
        return self.bytes_per_item(change.group(self))

    def cache_capacity(self, change: Change) -> int:
        """A MinIO cache's capacity for the change's fraction of the dataset as the change stores it: the bytes, and
        the headers and keys the cache counted per byte on the subset, CACHE_SLACK over."""
        return math.ceil(change.cache_fraction * self.pipeline.num_items * self._cached_item(change) * CACHE_SLACK)

    def _cached_item(self, change: Change) -> float:
        headers = self.bytes_per_item(self.pipeline.scan_group) * (self.cache.bytes_per_stored_byte - 1)
        return self.item_bytes(change) + headers

    def cache_share(self, change: Change) -> float:
        """h: the share of the bytes a filled cache of cache_capacity(change) holds, in as many whole records (or
        files) of the mean size as fit; the fraction itself where they are too small to matter."""
        records = self.pipeline.records
        if not records or not change.cache_fraction:
            return change.cache_fraction
        record = self.pipeline.num_items * self._cached_item(change) / records
        return min(1.0, math.floor(self.cache_capacity(change) / record) / records)


@dataclasses.dataclass(frozen=True)
class Change:
    """One configuration of the pipeline: what the what-if varies."""

    cache_fraction: float = 0.0
    scan_group: int | None = None  # None: the pipeline's own
    prep_parallelism: int | None = None  # None: AUTOTUNE
    l3: bool = False
    liquid_ratio: int | None = None  # a Liquid png:raw dataset with PNG's share in tenths (the rest raw)

    def group(self, measured: Measurements) -> int | None:
        return measured.pipeline.scan_group if self.scan_group is None else self.scan_group

    @staticmethod
    def as_it_is(measured: Measurements) -> Change:
        """The pipeline measured, unchanged: its own scan group and prep parallelism, no cache."""
        return Change(prep_parallelism=measured.pipeline.prep_parallelism)

    def changes_nothing(self, measured: Measurements) -> bool:
        return dataclasses.replace(self, scan_group=None) == Change.as_it_is(measured) and (
            self.group(measured) == measured.pipeline.scan_group
        )

    def cost(self, measured: Measurements) -> tuple:
        """Cheapest first: no conversion (L3, Liquid), the least fidelity given up, the least memory, then a fixed
        prep parallelism rather than AUTOTUNE. Threads cost nothing."""
        group, converted = self.group(measured), self.l3 or self.liquid_ratio is not None
        fidelity_lost = 0 if group is None else measured.pipeline.scan_groups - group
        return converted, fidelity_lost, self.cache_fraction, self.prep_parallelism is None


def predict(measured: Measurements, change: Change) -> dict[str, float]:
    """{"ingestion", "prep", "fetch", "rate"}: the stage rates with the change and the rate they allow. AUTOTUNE is
    predicted no faster than the fastest fixed parallelism: it settles at one of them."""
    if change.prep_parallelism is not None:
        return _predicted(measured, change)
    fixed = (dataclasses.replace(change, prep_parallelism=k) for k in range(1, measured.cores + 1))
    return min(_predicted(measured, change), max((_predicted(measured, c) for c in fixed), key=_rate), key=_rate)


def _predicted(m: Measurements, change: Change) -> dict[str, float]:
    k, ratio, stored = change.prep_parallelism, m.prep_ratio(change), m.item_bytes(change)
    prep = m.prep.rate * ratio
    g, storage, held = m.ingestion.rate, m.fetch.bytes_per_second / stored, m.cache_share(change)
    hits = m.cache.rate * m.bytes_per_item(m.pipeline.scan_group) / stored
    fetch = min(storage / (1 - held) if held < 1 else math.inf, hits / held if held > 0 else math.inf)
    share = (1 / m.prep.rate) / (1 / g + 1 / m.prep.rate) if m.model_on_cpu else 1.0
    compute = min(max(g, m.jobs.served[k]), m.jobs.served[k] / (1 + share * (1 / ratio - 1)))
    return {"ingestion": g, "prep": prep, "fetch": fetch, "rate": min(compute, fetch)}


def candidate_changes(measured: Measurements, memory_budget_bytes: float) -> list[Change]:
    """Every combination the what-if weighs whose cache fits the budget: cache fractions 0, 0.1, ..., 1, every scan
    group measured, prep AUTOTUNE or 1..cores threads; L3 and Liquid png:raw 0:10 ... 9:1 where measured."""
    groups = [measured.pipeline.scan_group, *(g for g in measured.variants.ratios if g not in ("l3", "raw"))]
    preps = [{"scan_group": g} for g in groups]
    if "l3" in measured.variants.ratios:
        preps += [{"l3": True}, *({"liquid_ratio": w} for w in range(STEPS))]
    parallelisms = [None, *range(1, measured.cores + 1)]
    changes = [Change(f / 10, prep_parallelism=k, **p) for f in range(11) for k in parallelisms for p in preps]
    return [change for change in changes if measured.cache_capacity(change) <= memory_budget_bytes]


def recommend(measured: Measurements, memory_budget_bytes: float) -> tuple[Change | None, dict | None, float]:
    """(the cheapest change predicted within NEAR_BEST of the best, its prediction, the best predicted rate); the
    change and its prediction None where it is not predicted faster than the job as it is, both as measured and as
    predicted, by more than NEAR_BEST: no change helps."""
    predictions = {change: predict(measured, change) for change in candidate_changes(measured, memory_budget_bytes)}
    best = max(map(_rate, predictions.values()))
    slower = dataclasses.replace(measured, fetch=phases.FetchRate(measured.fetch.bytes_per_second / LUMPY_READS))
    near = [change for change, prediction in predictions.items() if _rate(prediction) >= NEAR_BEST * best]
    near = [c for c in near if c.cache_fraction in (0, 1) or _rate(predict(slower, c)) >= NEAR_BEST * best] or near
    chosen = min(near, key=lambda change: (change.cost(measured), -_rate(predictions[change])))
    as_it_is = max(measured.jobs.training, _rate(predict(measured, Change.as_it_is(measured))))
    if chosen.changes_nothing(measured) or NEAR_BEST * _rate(predictions[chosen]) <= as_it_is:
        return None, None, best
    return chosen, predictions[chosen], best
