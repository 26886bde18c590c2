"""What a training window says about its input: how fast it trained, how much of it waited for batches, and which
stage held it up.

A window is the steps of one epoch, from the first's start to the last's end, as StallMonitor times an epoch (the
tuner traces the train step before the first window). Its steps waited `stall` of its time for their batches
(StallMonitor's op, timed where the step asks); without the waits they would have run at the one-batch upper
bound, `compute_rate`, the rate of `take(1).cache().repeat()` (FastFlow's bound), measured on the running job
rather than by a run of its own. The side probes time the reads alone and the prep (decode and the user's
preprocessing) alone, between windows:

  compute   stall < STALL_BOUND: the steps hardly wait, and no input change can make them faster;
  storage   input-bound, and the reads alone are slower than the prep alone;
  cpu       input-bound, and the prep alone is the slower.
"""

from __future__ import annotations

import dataclasses

STALL_BOUND = 0.1  # input-bound from this share of a window's time spent waiting for batches

COMPUTE, STORAGE, CPU = "compute", "storage", "cpu"


@dataclasses.dataclass(frozen=True)
class Window:
    """One window's training: `items` trained on in `seconds`, of which `waited` waiting for batches."""

    epoch: int
    items: int
    seconds: float
    waited: float

    @property
    def rate(self) -> float:
        return self.items / self.seconds

    @property
    def stall(self) -> float:
        return min(1.0, self.waited / self.seconds)

    @property
    def compute_rate(self) -> float:
        """The one-batch upper bound: the items over the time the steps did not wait."""
        return self.items / max(self.seconds - self.waited, 1e-9)


@dataclasses.dataclass(frozen=True)
class Probes:
    """The input's stages alone, in items per second: `fetch` the reads from storage, `prep` the decode and
    preprocessing of items held in memory, on every core."""

    fetch: float
    prep: float


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    kind: str  # COMPUTE, STORAGE or CPU
    window: Window
    probes: Probes | None  # None where the window was not input-bound (no probe needed)

    @property
    def input_bound(self) -> bool:
        return self.kind != COMPUTE

    def evidence(self) -> str:
        w = self.window
        text = (
            f"{w.rate:.0f} images/s, {w.stall:.0%} of the time waiting for input "
            f"(one-batch bound {w.compute_rate:.0f} images/s)"
        )
        if self.probes is not None:
            text += f"; reads alone {self.probes.fetch:.0f} images/s, prep alone {self.probes.prep:.0f} images/s"
        return text

    def __str__(self) -> str:
        return {COMPUTE: "compute-bound", STORAGE: "input-bound on storage", CPU: "input-bound on CPU"}[self.kind]


def diagnose(window: Window, probe) -> Diagnosis:
    """The diagnosis of `window`; `probe()` -> Probes is called only where the window was input-bound."""
    if window.stall < STALL_BOUND:
        return Diagnosis(COMPUTE, window, None)
    probes = probe()
    return Diagnosis(STORAGE if probes.fetch < probes.prep else CPU, window, probes)
