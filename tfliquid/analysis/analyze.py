"""analyze(): DS-Analyzer's phases over a subset, the what-if over every change tfliquid offers, and the
recommendation."""

from __future__ import annotations

import os
import time

import tensorflow as tf

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._common.progress import Progress
from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.analysis.report import Report
from tfliquid.analysis.whatif import Measurements, recommend

SUBSET_BATCHES = 16  # the default subset
# Of the measurements made in turns: rounds of model.fit runs and of prep passes, and the seconds each timed run lasts.
TURNS, QUICK_TURNS = (5, 5, 1.0), (1, 2, 0.3)


def analyze(
    model,
    pipeline: InputPipeline,
    *,
    subset_items: int | None = None,
    steps: int = 20,
    memory_budget_bytes: float | None = None,
    quick: bool = False,
    progress: bool = True,
) -> Report:
    """Measures where `model` trained on `pipeline` stalls (tfliquid.analysis.phases, over a subset of `subset_items`
    items, default 16 batches, and `steps` train steps on one batch), predicts the rate each change would reach, and
    recommends the cheapest within 1% of the best. The model's weights are restored afterwards, not its optimizer's.

    `model` is a compiled Keras model; `pipeline` an `InputPipeline` (pcr_pipeline(...), file_pipeline(...)), not
    a tf.data.Dataset: the phases take its reads and its prep apart. `memory_budget_bytes`: the largest MinIO cache
    the recommendation may use (default: half this machine's memory). `quick`: runs made in turns once or twice, not
    5 times, and shorter: a first look in less than half the time, whose predictions scatter more.
    """
    if not isinstance(pipeline, InputPipeline):
        raise ArgumentError(
            "analyze takes a tfliquid.analysis.InputPipeline (pcr_pipeline(...), file_pipeline(...)), got "
            f"{type(pipeline).__name__}: its phases rebuild the reads and the prep apart"
        )
    if not callable(getattr(model, "fit", None)) or not getattr(model, "compiled", False):
        raise ArgumentError(f"analyze takes a compiled Keras model, got {type(model).__name__}")
    items, steps = pipeline.subset_items(subset_items, SUBSET_BATCHES), check_int("steps", steps, 1)
    budget = memory_budget_bytes
    if budget is None:  # half this machine's memory
        budget = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2
    budget = check_number("memory_budget_bytes", budget, 0, what="a number of bytes")
    job = phases.Job(model, pipeline, items, steps, os.cpu_count() or 1, *(QUICK_TURNS if quick else TURNS))
    bar, start = Progress(len(phases.PHASES), "phase", enabled=progress), time.perf_counter()
    weights = model.get_weights()
    try:
        with job.caches:
            for done, phase in enumerate(phases.PHASES, 1):
                job.results[phase.field] = phase.result.measure(job)
                bar.update(done)
    finally:
        model.set_weights(weights)
        bar.close()
    model_on_cpu = not tf.config.list_logical_devices("GPU")
    measured = Measurements(**job.results, pipeline=pipeline, cores=job.cores, model_on_cpu=model_on_cpu)
    change, prediction, best = recommend(measured, budget)
    return Report(measured, change, prediction, best, budget, items, time.perf_counter() - start, quick)
