"""What-if predictions from measured rates (DS-Analyzer, section 5): the training rate a change would reach is the
slowest of what the model ingests, what prep delivers and what storage (and the cache) fetches.

    fetch rate with a MinIO cache of a fraction f:  F'(f) = 1 / (f / C + (1 - f) / F)       (paper, Eq. 3-4)
    a scan group g reads bytes_per_item(g):        F'(g) = fetch bytes/s / bytes_per_item(g)
    prep on k threads:                             P'(k) = P * fit(k) / fit(all cores)      (Lobster's hinge)
    predicted rate = min(G, P', F')                 (the model on an accelerator)
                   = min(R' , F')                  (the model on the CPU, where train steps and prep share cores)

On the CPU, R' starts from R, the job measured without fetch (training over a cached subset), whose time per
item is split between the model and prep in the ratio of 1/G to 1/P; a change of prep rate scales prep's part:
1/R' = (1/R) * (m + (1 - m) * P / P'), m = (1/G) / (1/G + 1/P).
"""

from __future__ import annotations

import dataclasses

from tfliquid.analysis.scaling import ScalingFit

NEAR_BEST = 0.95  # a change "removes the stall" when it reaches this share of the best predicted rate


@dataclasses.dataclass(frozen=True)
class Measurements:
    """The phases' rates, items per second, and what they were measured on."""

    ingestion: float  # G
    prep: float  # P, the pipeline's prep parallelism (AUTOTUNE by default), all cores
    prep_by_threads: dict[int, float]
    scaling: ScalingFit
    fetch: float  # F, at the pipeline's scan group
    cache_fetch: float  # C
    training: float  # the job as it is
    training_cached: float  # the job over a cached subset: no fetch
    bytes_per_item: dict[int | None, float]  # scan group (None: full fidelity) -> bytes read per item
    scan_group: int | None  # the pipeline's
    scan_groups: int  # the PCR dataset's number of scan groups; 0: not PCR
    prep_by_scan_group: dict[int | None, float]
    model_on_cpu: bool
    cores: int
    dataset_bytes: int  # at the pipeline's scan group
    l3_prep: float | None = None  # PNG pipelines: prep with decode_l3 instead of decode_png
    l3_bytes_ratio: float | None = None  # L3 bytes / PNG bytes on the sample

    @property
    def fetch_bytes_per_second(self) -> float:
        return self.fetch * self.bytes_per_item[self.scan_group]

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

    def cost(self, measured: Measurements) -> tuple:
        """Cheapest first: no conversion to L3, then the least fidelity given up, then the least memory. Threads
        are free (they are already there)."""
        group = measured.scan_group if self.scan_group is None else self.scan_group
        fidelity_lost = 0 if group is None else measured.scan_groups - group  # scan groups left unread
        return (self.l3, fidelity_lost, self.cache_fraction)


def _group_order(group):
    return float("inf") if group is None else group


def fetch_with_cache(fetch: float, cache_fetch: float, fraction: float) -> float:
    """F'(f): items/s when a fraction f of the items comes from the cache and the rest from storage."""
    return 1.0 / (fraction / cache_fetch + (1.0 - fraction) / fetch)


def predict(measured: Measurements, change: Change) -> dict[str, float]:
    """{"ingestion", "prep", "fetch", "rate"} for the change: the three stage rates and the rate they allow."""
    group = measured.scan_group if change.scan_group is None else change.scan_group
    bytes_now = measured.bytes_per_item[measured.scan_group]
    if change.l3:
        prep = measured.l3_prep
        bytes_per_item = bytes_now * measured.l3_bytes_ratio
    else:
        prep = measured.prep_by_scan_group.get(group, measured.prep)
        bytes_per_item = measured.bytes_per_item[group]
    if change.prep_parallelism is not None:
        fit = measured.scaling
        prep *= fit.rate(change.prep_parallelism) / fit.rate(measured.cores)
    storage = measured.fetch_bytes_per_second / bytes_per_item
    cache = measured.cache_fetch * bytes_now / bytes_per_item
    fetch = fetch_with_cache(storage, cache, change.cache_fraction)
    g = measured.ingestion
    if measured.model_on_cpu:
        model_share = (1 / g) / (1 / g + 1 / measured.prep)
        compute = measured.training_cached / (model_share + (1 - model_share) * measured.prep / prep)
    else:
        compute = min(g, prep)
    return {"ingestion": g, "prep": prep, "fetch": fetch, "rate": min(compute, fetch)}


def candidate_changes(measured: Measurements, memory_budget_bytes: float) -> list[Change]:
    """Every combination the what-if weighs: cache fractions 0, 0.1, ..., 1 (as far as the memory budget
    allows), every scan group measured, prep parallelism AUTOTUNE or 1..cores, and L3 when it was measured."""
    fractions = [f / 10 for f in range(11) if f / 10 * measured.dataset_bytes <= memory_budget_bytes]
    groups = sorted(measured.prep_by_scan_group, key=_group_order)
    parallelisms = [None, *range(1, measured.cores + 1)]
    changes = [
        Change(cache_fraction=f, scan_group=g, prep_parallelism=k)
        for f in fractions
        for g in groups
        for k in parallelisms
    ]
    if measured.l3_prep is not None:
        changes += [Change(cache_fraction=f, l3=True, prep_parallelism=k) for f in fractions for k in parallelisms]
    return changes


def recommend(measured: Measurements, memory_budget_bytes: float) -> tuple[Change, dict[str, float], float]:
    """The cheapest change whose predicted rate is within NEAR_BEST of the best any candidate reaches; returns
    (change, its prediction, the best predicted rate)."""
    changes = candidate_changes(measured, memory_budget_bytes)
    predictions = {change: predict(measured, change) for change in changes}
    best = max(p["rate"] for p in predictions.values())
    good = [c for c in changes if predictions[c]["rate"] >= NEAR_BEST * best]
    chosen = min(good, key=lambda c: (c.cost(measured), -predictions[c]["rate"]))
    return chosen, predictions[chosen], best
