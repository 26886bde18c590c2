"""Lobster's thread planning (section 4.1): a preprocessing stage's rate rises with threads up to a knee, then
stays flat (more threads only add memory traffic, and past the cores they compete). The prep stage gets the fewest
threads that reach its measured peak, and gives up more while the reads, not prep, limit the pipeline; the rest of
the cores read."""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid.analysis import phases
from tfliquid.analysis.pipeline import InputPipeline

SUBSET_BATCHES = 8  # the default subset
PEAK_SHARE = 0.97  # "reaches its peak": within 3% of it, the noise of a rate measured on a shared machine


def _threads(count: int) -> str:
    return f"{count} thread{'s' if count != 1 else ''}"


@dataclasses.dataclass(frozen=True)
class ThreadPlan:
    prep_parallelism: int  # the prep map's num_parallel_calls
    read_parallelism: int  # the read stage's parallel reads
    cores: int
    prep_by_threads: dict[int, float]  # prep items/s measured on 1..cores+1 threads
    fetch: float  # the read stage's rate, items/s

    @property
    def peak_threads(self) -> int:
        """The thread count at which prep measured its highest rate (the fewest, where two measured it)."""
        return max(self.prep_by_threads, key=self.prep_by_threads.get)

    @property
    def threads_at_peak(self) -> int:
        """The fewest threads, at most `cores`, whose measured rate is within PEAK_SHARE of the peak (or the best
        of them, where only cores + 1 reached it)."""
        peak, allowed = self.prep_by_threads[self.peak_threads], range(1, self.cores + 1)
        near = [k for k in allowed if self.prep_by_threads[k] >= PEAK_SHARE * peak]
        return near[0] if near else max(allowed, key=self.prep_by_threads.get)

    @staticmethod
    def of(prep_by_threads: dict[int, float], fetch: float, cores: int) -> ThreadPlan:
        """The plan for these measurements (prep items/s on 1..cores+1 threads, the reads' items/s): prep on
        threads_at_peak, then one fewer while prep on one fewer still outpaces the reads; the reads the rest."""
        threads = ThreadPlan(1, 1, cores, prep_by_threads, fetch).threads_at_peak
        while threads > 1 and prep_by_threads[threads - 1] >= fetch:
            threads -= 1
        return ThreadPlan(threads, max(1, cores - threads), cores, prep_by_threads, fetch)

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
        peak, at_peak = self.peak_threads, self.threads_at_peak
        why = f"peak {self.prep_by_threads[peak]:.0f} items/s on {_threads(peak)}"
        if at_peak != peak:
            why += f", {_threads(at_peak)} within {1 - PEAK_SHARE:.0%} of it"
        if self.prep_parallelism < at_peak:
            verb = "outpaces" if self.prep_parallelism == 1 else "outpace"
            why += (
                f"; {_threads(self.prep_parallelism)} ({self.prep_by_threads[self.prep_parallelism]:.0f} items/s) "
                f"still {verb} the reads"
            )
        return (
            f"thread plan on {self.cores} core{'s' if self.cores != 1 else ''}: prep {_threads(self.prep_parallelism)},"
            f" reads {self.read_parallelism} (prep items/s by threads {rates}: {why}; reads {self.fetch:.0f} items/s)"
        )


def plan_threads(pipeline: InputPipeline, *, subset_items: int | None = None, cores: int | None = None) -> ThreadPlan:
    """Measures the prep stage on 1..cores+1 threads over a subset in memory (default: 8 batches) and the read stage
    from storage, and plans: prep on the fewest threads (at most `cores`) whose rate is within 3% of the highest
    measured, then one fewer while prep on one fewer, as measured, still outpaces the reads; the reads get the
    remaining cores (at least one). `cores`: the cores the pipeline may use (default: this machine's)."""
    if not isinstance(pipeline, InputPipeline):
        raise ArgumentError(f"plan_threads takes a tfliquid.analysis.InputPipeline, got {type(pipeline).__name__}")
    cores = (os.cpu_count() or 1) if cores is None else check_int("cores", cores, 1)
    job = phases.Job(None, pipeline, pipeline.subset_items(subset_items, SUBSET_BATCHES), 0, cores, 1, 1, 1.0)
    by_threads = {k: job.prep_pass(pipeline, job.subset(), k)() for k in range(1, cores + 2)}  # flat past the cores
    return ThreadPlan.of(by_threads, phases.FetchRate.measure(job).bytes_per_second / pipeline.bytes_per_item, cores)
