"""Lobster's thread planning (section 4.1): the prep stage gets the fewest threads that reach its peak rate, and
gives up more while the read stage, not prep, limits the pipeline; the rest of the cores read."""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline
from tfliquid.analysis.scaling import ScalingFit, fit_scaling


@dataclasses.dataclass(frozen=True)
class ThreadPlan:
    prep_parallelism: int  # the prep map's num_parallel_calls
    read_parallelism: int  # the read stage's parallel reads
    cores: int
    scaling: ScalingFit  # prep rate against threads, fitted on prep_by_threads
    prep_by_threads: dict[int, float]
    fetch: float  # the read stage's rate, items/s

    def apply(self, pipeline: InputPipeline) -> InputPipeline:
        return pipeline.replace(prep_parallelism=self.prep_parallelism, read_parallelism=self.read_parallelism)

    def options(self) -> tf.data.Options:
        """tf.data options for the planned pipeline: one thread pool of `cores` threads, no autotuned
        parallelism elsewhere to compete with the plan."""
        options = tf.data.Options()
        options.threading.private_threadpool_size = self.cores
        options.autotune.enabled = False
        return options

    def __str__(self) -> str:
        rates = ", ".join(f"{k}: {r:.0f}" for k, r in sorted(self.prep_by_threads.items()))
        return (
            f"thread plan on {self.cores} cores: prep {self.prep_parallelism} thread(s), reads {self.read_parallelism}"
            f" (prep items/s by threads {rates}; peak {self.scaling.peak:.0f} from "
            f"{self.scaling.threads_at_peak(self.cores)} threads; reads {self.fetch:.0f} items/s)"
        )


def plan_threads(pipeline: InputPipeline, *, subset_items: int | None = None, cores: int | None = None) -> ThreadPlan:
    """Measures the prep stage on 1..cores+1 threads over a cached subset and the read stage from storage, fits
    Lobster's piecewise-linear model, and plans: prep on the fewest threads at its peak, then one fewer while
    prep on one fewer still outpaces the reads; the reads get the remaining cores (at least one)."""
    cores = cores or os.cpu_count() or 1
    items = min(pipeline.num_items, subset_items or 8 * pipeline.batch_size)
    raw, _ = phases.cached_raw(pipeline, items)
    threads = list(range(1, cores + 2))
    by_threads = {k: phases.prep_rate(pipeline, raw, k) for k in threads}
    scaling = fit_scaling(threads, [by_threads[k] for k in threads])
    fetch = phases.fetch_rate(pipeline, items).items_per_second
    prep = scaling.threads_at_peak(cores)
    while prep > 1 and scaling.rate(prep - 1) >= fetch:
        prep -= 1
    return ThreadPlan(prep, max(1, cores - prep), cores, scaling, by_threads, fetch)
