"""Lobster's thread planning (section 4.1). A preprocessing stage's rate rises linearly with threads up to a knee,
then stays flat (more threads only add memory traffic): fitted as a hinge, r(k) = a + s * min(k, t). The prep stage
gets the fewest threads that reach its peak, and gives up more while the reads, not prep, limit the pipeline; the
rest of the cores read."""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline

SUBSET_BATCHES = 8  # the default subset
PEAK_SHARE = 0.97  # "reaches its peak": within 3% of it, the noise of a rate measured on a shared machine


@dataclasses.dataclass(frozen=True)
class ScalingFit:
    """r(k) = intercept + slope * min(k, knee): the rate on k threads."""

    intercept: float
    slope: float
    knee: float  # threads at which the rate stops rising

    @property
    def peak(self) -> float:
        return self.intercept + self.slope * self.knee

    def rate(self, threads: float) -> float:
        return self.intercept + self.slope * min(threads, self.knee)

    def threads_at_peak(self, max_threads: int | None = None) -> int:
        """The smallest whole number of threads whose rate is within PEAK_SHARE of the peak."""
        k = 1
        while self.rate(k) < PEAK_SHARE * self.peak and (max_threads is None or k < max_threads):
            k += 1
        return k


def fit_scaling(threads: list[float], rates: list[float]) -> ScalingFit:
    """Least-squares hinge over measured (threads, rate) points: the knee is searched on a fine grid between the
    smallest and largest thread count, and (intercept, slope) solved exactly for each candidate knee."""
    k, r = np.asarray(threads, float), np.asarray(rates, float)
    if len(k) != len(r) or len(set(k.tolist())) < 2:
        raise ArgumentError(f"fit_scaling needs rates at two or more thread counts, got {list(zip(threads, rates))}")
    best = None
    for knee in np.linspace(k.min(), k.max(), 200 * int(math.ceil(k.max() - k.min()))):
        (intercept, slope), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(k), np.minimum(k, knee)]), r)
        if slope < 0:  # more threads never make the stage faster past its knee: a falling fit is flat
            intercept, slope, knee = r.mean(), 0.0, k.min()
        error = float(((intercept + slope * np.minimum(k, knee) - r) ** 2).sum())
        if best is None or error < best[0] - 1e-12:
            best = (error, ScalingFit(float(intercept), float(slope), float(knee)))
    return best[1]


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
        """tf.data options for the planned pipeline: one thread pool of `cores` threads, and no autotuned
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
    """Measures the prep stage on 1..cores+1 threads over a subset in memory (default: 8 batches) and the read stage
    from storage, fits Lobster's hinge, and plans: prep on the fewest threads at its peak, then one fewer while
    prep on one fewer still outpaces the reads; the reads get the remaining cores (at least one). `cores`: the
    cores the pipeline may use (default: this machine's)."""
    if not isinstance(pipeline, InputPipeline):
        raise ArgumentError(f"plan_threads takes a tfliquid.analysis.InputPipeline, got {type(pipeline).__name__}")
    cores = (os.cpu_count() or 1) if cores is None else check_int("cores", cores, 1)
    job = phases.Job(None, pipeline, pipeline.subset_items(subset_items, SUBSET_BATCHES), 0, cores, 1, 1, 1.0)
    by_threads = {k: job.prep_pass(pipeline, job.subset(), k)() for k in range(1, cores + 2)}  # flat past the cores
    scaling = fit_scaling(list(by_threads), list(by_threads.values()))
    fetch = phases.FetchRate.measure(job).bytes_per_second / pipeline.bytes_per_item
    threads = scaling.threads_at_peak(cores)
    while threads > 1 and scaling.rate(threads - 1) >= fetch:
        threads -= 1
    return ThreadPlan(threads, max(1, cores - threads), cores, scaling, by_threads, fetch)
