"""How a conversion runs: the keyword arguments every converter takes (`tfliquid.pcr.convert`,
`tfliquid.liquid.convert`, `tfliquid.l3.convert`; the CLI's --fail-fast, --quiet, --runner, --workers,
--beam-options, --verbose), declared once."""

from __future__ import annotations

import dataclasses
from typing import TypedDict

from tfliquid._common.beam import check_runner
from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError

ON_ERROR = ("reject", "raise")


class RunOptions(TypedDict, total=False):
    """How a conversion runs.

    on_error: "reject" (the default): an image that cannot be converted is left out, listed in the report's
      `failures` with the reason, and the others are converted; "raise": stop at the first one.
    progress: show progress on stderr (default True).
    runner: "local" (the default: this process, every core) or "beam": an Apache Beam pipeline (`pip install
      tfliquid[beam]`) that writes the same bytes (docs/scale-out.md). SRC and DST must then be on a file
      system every Beam worker mounts.
    workers: with the local runner, the threads converting images at once (default None: one per CPU); the same
      bytes are written whatever their number. Beam's parallelism is set by its own options instead
      (beam_options="--direct_num_workers=N" on the DirectRunner).
    beam_options: Beam's pipeline options, e.g. "--runner=FlinkRunner --flink_master=HOST:8081"; default: the
      DirectRunner with one worker process per core.
    beam_log: with runner="beam", show on stderr what Beam and its worker processes (TensorFlow in them
      included) log, as they log it (the default). False holds it back while Beam runs and shows it only if the
      run fails: the CLI without --verbose. Holding back redirects this process's stderr (file descriptor 2),
      what its other threads write included.
    """

    on_error: str
    progress: bool
    runner: str
    workers: int | None
    beam_options: str | list[str] | None
    beam_log: bool


@dataclasses.dataclass(frozen=True)
class Run:
    """RunOptions with their defaults, checked."""

    on_error: str = "reject"
    progress: bool = True
    runner: str = "local"
    workers: int | None = None
    beam_options: str | list[str] | None = None
    beam_log: bool = True


def take_run_options(options: dict) -> tuple[Run, dict]:
    """The run options among a converter's keyword arguments, checked, and the other arguments."""
    names = RunOptions.__annotations__
    run = Run(**{name: value for name, value in options.items() if name in names})
    if run.on_error not in ON_ERROR:
        raise ArgumentError(f"on_error must be one of {ON_ERROR}, got {run.on_error!r}")
    if run.workers is not None:
        check_int("workers", run.workers, 1)
        if run.runner != "local":
            raise ArgumentError(
                "workers is the local runner's; a Beam pipeline's parallelism is set by its options, e.g. "
                "beam_options='--direct_num_workers=N' (--beam-options)"
            )
    check_runner(run.runner, run.beam_options, run.beam_log)
    return run, {name: value for name, value in options.items() if name not in names}
