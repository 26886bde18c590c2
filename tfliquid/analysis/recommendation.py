"""The recommendation, with the job's response to its own prep measured before it is made (on the CPU)."""

from __future__ import annotations

import dataclasses

from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.analysis.whatif import LIQUID_MIX, Change, Measurements, recommend, same_prep

# The recommendations' prep variants whose job speed-up analyze measures before recommending, at most: each check
# takes 16-20 s (phases.job_speedup) and may move the recommendation to another variant.
RESPONSE_CHECKS = 2


def checked_recommendation(
    model,
    pipeline: InputPipeline,
    prep_variants: dict,
    items: int,
    measured: Measurements,
    memory_budget_bytes: float,
    rounds: int = phases.RESPONSE_ROUNDS,
    served: dict | None = None,
) -> tuple[Measurements, tuple[Change, dict[str, float], float]]:
    """(`measured` with the job's speed-up checked for the recommendation's prep variant, whatif.recommend's
    answer then). The job's speed-up with the variant a recommendation rests on is measured itself
    (phases.job_speedup over `items` items, `rounds` rounds), up to RESPONSE_CHECKS times as the recommendation
    moves: each check is one more point of the job's response to its prep (Measurements.prep_response), where it
    matters.
    `prep_variants` maps a variant (a scan group, "l3", "raw") to (its pipeline, its subset in memory), as analyze
    measured them, `served` a variant to its subset a cache serves (phases.variant_speedup). Trains `model`: the
    caller restores its weights."""
    choice = recommend(measured, memory_budget_bytes)
    for _ in range(RESPONSE_CHECKS):
        variant = choice[0].prep_variant(measured)
        if variant in (LIQUID_MIX, pipeline.scan_group, *measured.measured_speedups):
            break
        own = measured.prep_by_scan_group[measured.scan_group]
        if same_prep(own, measured.variant_prep(variant)):
            break  # the job's response to so small a change in prep is within its speed-up's noise
        speedup = phases.variant_speedup(model, pipeline, prep_variants, variant, items, measured.cores, rounds, served)
        measured = dataclasses.replace(measured, checked_speedups={**measured.checked_speedups, variant: speedup})
        choice = recommend(measured, memory_budget_bytes)
    return measured, choice
