"""A cache on trial: the first window's reads admitted to a MinIO cache from the moment its steps are seen waiting
for storage, so that a storage-bound job does not spend a second epoch at storage's rate filling the cache the
window's diagnosis then asks for.

The cache is in the first window's pipeline from its start, closed to admission (a miss is fetched as without it).
Every eighth of the window's steps (at least MIN_CHECK_STEPS), up to three quarters of them, the steps since the
end of the first (whose wait is the pipeline's start) are checked: the cache opens when they waited at least
STALL_BOUND of their time while the process kept under CPU_BUSY_BOUND of the cores busy, waiting with idle cores
being waiting for reads. (The first steps may be served by the records read ahead at the start, hence more than
one check.) At the window's end the diagnosis decides: the cache lever, if applied at the trial's capacity and scan
group, adopts an opened cache with what it holds; otherwise it is released.
"""

from __future__ import annotations

import time

from tfliquid.cache import MinIOCache
from tfliquid.keras.tuner.diagnosis import STALL_BOUND

CPU_BUSY_BOUND = 0.5  # the share of the cores busy under which a waiting window waits for storage
CHECK_SHARE = 8  # a check every 1 / CHECK_SHARE of the window's steps
MIN_CHECK_STEPS = 3  # steps between checks at least
LAST_CHECK_SHARE = 0.75  # no check after this share of the window's steps: too little of it left to fill


class CacheTrial:
    """A cache of `capacity` bytes at `scan_group`, closed, for a window of `steps` steps; `after_batch` at each
    step's end opens it when a check says the steps wait for storage."""

    def __init__(self, capacity: int, scan_group: int, steps: int, cores: int):
        self.capacity, self.scan_group, self.cores = capacity, scan_group, cores
        self.check_every = max(MIN_CHECK_STEPS, steps // CHECK_SHARE)
        self.next_check = self.check_every
        self.last_check = int(steps * LAST_CHECK_SHARE)  # a window too short for one check is not checked
        self.cache = MinIOCache(capacity)
        self.cache.admit(False)
        self.opened_after = None  # the step after which admission opened
        self.evidence = None  # what the last check measured
        self._start = None  # (wall clock, process CPU time, seconds waited) at the first step's end

    @property
    def key(self) -> tuple[int, int]:
        return self.capacity, self.scan_group

    def after_batch(self, step: int, waited: float) -> bool:
        """Called at each step's end with the seconds the window's steps waited so far; True when it opened the
        cache's admission now."""
        if self.opened_after is not None or self.next_check > self.last_check:
            return False
        now = (time.perf_counter(), time.process_time(), waited)
        if self._start is None:
            self._start = now
            return False
        if step < self.next_check:
            return False
        self.next_check = step + self.check_every
        wall, cpu, wait = (b - a for a, b in zip(self._start, now))
        stall, busy = wait / max(wall, 1e-9), cpu / max(wall, 1e-9) / self.cores
        self.evidence = (
            f"steps 1-{step} waited {stall:.0%} of their time for input with {busy:.0%} of the cores busy "
            f"(opened from {STALL_BOUND:.0%} waiting under {CPU_BUSY_BOUND:.0%} busy)"
        )
        if stall < STALL_BOUND or busy >= CPU_BUSY_BOUND:
            return False
        self.cache.admit(True)
        self.opened_after = step
        return True

    def held_bytes(self) -> int:
        return self.cache.stats().bytes if self.opened_after is not None else 0
