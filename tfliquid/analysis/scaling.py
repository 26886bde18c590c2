"""Lobster's model of a preprocessing stage: its rate rises linearly with threads up to a knee, then stays flat
(section 4.1: more threads only add memory traffic). Fitted here as a hinge, r(k) = a + s * min(k, t)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

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
    k = np.asarray(threads, float)
    r = np.asarray(rates, float)
    if len(k) < 2 or len(set(k.tolist())) < 2:
        raise ValueError(f"fit_scaling needs rates at two or more thread counts, got {list(zip(threads, rates))}")
    best = None
    for knee in np.linspace(k.min(), k.max(), 200 * int(math.ceil(k.max() - k.min()))):
        design = np.column_stack([np.ones_like(k), np.minimum(k, knee)])
        (intercept, slope), *_ = np.linalg.lstsq(design, r, rcond=None)
        if slope < 0:  # more threads never make the stage faster past its knee: a falling fit is flat
            intercept, slope, knee = r.mean(), 0.0, k.min()
        error = float(((intercept + slope * np.minimum(k, knee) - r) ** 2).sum())
        if best is None or error < best[0] - 1e-12:
            best = (error, ScalingFit(float(intercept), float(slope), float(knee)))
    return best[1]
