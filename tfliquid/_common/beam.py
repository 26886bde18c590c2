"""Running a conversion's per-image and per-record work on Apache Beam, and bringing its outcomes back.

A converter builds the pipeline from its plan (tasks: plain picklable values) and its pure encoders; the last
PCollection holds one JSON-able outcome per task (what was written, skipped or rejected, and why). Outcomes are
written as text under DST/.beam-outcomes and read back by the process that launched the pipeline, which then
finishes the conversion as the local runner does (state, index, report). Text files rather than anything
runner-specific, so that the same pipeline runs on the DirectRunner here and unchanged on Dataflow, Flink or Spark
(there, SRC and DST must be on a file system every worker mounts).

apache-beam is optional (`pip install tfliquid[beam]`) and imported only when a conversion asks for it.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import re
import shlex
import shutil
from collections.abc import Callable

from tfliquid._common import stderr
from tfliquid._common.errors import ArgumentError, ConversionError

RUNNERS = ("local", "beam")
OUTCOMES_DIR = ".beam-outcomes"


def import_beam():
    try:
        import apache_beam
    except ImportError:
        raise ArgumentError("runner='beam' needs Apache Beam: pip install 'tfliquid[beam]'") from None
    return apache_beam


def log_shown(beam_log: bool):
    """A context in which Beam runs: its log and its worker processes' shown on stderr (beam_log=True) or held
    back, shown only if the block raises (RunOptions.beam_log)."""
    return contextlib.nullcontext() if beam_log else stderr.held_back()


def check_runner(runner: str, beam_options, beam_log: bool = True) -> None:
    """Refuses, before anything is written, a runner that is not one of RUNNERS, and Beam options that Beam would
    discard (a misspelt flag) or a Beam runner it does not know."""
    if runner not in RUNNERS:
        raise ArgumentError(f"runner must be one of {RUNNERS}, got {runner!r}")
    if beam_options is not None and runner != "beam":
        raise ArgumentError("beam_options are for runner='beam'")
    if runner == "beam":
        with log_shown(beam_log):  # importing Beam logs warnings about its optional dependencies
            import_beam()
        from apache_beam.runners.runner import create_runner

        options = pipeline_options(beam_options)
        beam_log = logging.getLogger("apache_beam.options.pipeline_options")
        level = beam_log.level
        beam_log.setLevel(logging.ERROR)  # its "Discarding unparseable args": the error below says it
        try:
            known = options.get_all_options()
        finally:
            beam_log.setLevel(level)
        unknown = sorted(set(options.get_all_options(retain_unknown_options=True)) - set(known))
        if unknown:
            raise ArgumentError(f"beam_options: Beam knows no option {', '.join('--' + u for u in unknown)}")
        try:
            create_runner(known["runner"])
        except ValueError as e:  # Beam's message lists the runners it knows
            raise ArgumentError(f"beam_options: {e}") from None


def pipeline_options(beam_options: str | list[str] | None):
    """Beam's PipelineOptions from a command-line string or list ("--runner=FlinkRunner ..."). Without a runner
    named, the DirectRunner with one worker process per core: each worker process loads TensorFlow and tfliquid's
    ops once (a few seconds) and then encodes in parallel with the others."""
    from apache_beam.options.pipeline_options import PipelineOptions

    if isinstance(beam_options, str):
        try:
            flags = shlex.split(beam_options)
        except ValueError as e:
            raise ArgumentError(f"beam_options cannot be split into flags ({e}): {beam_options!r}") from None
    elif beam_options is None or (
        isinstance(beam_options, list | tuple) and all(isinstance(f, str) for f in beam_options)
    ):
        flags = list(beam_options or [])
    else:
        raise ArgumentError(f"beam_options must be a string or a list of strings, got {beam_options!r}")
    if not any(flag.startswith("--runner") for flag in flags):
        flags = [
            "--runner=DirectRunner",
            "--direct_running_mode=multi_processing",
            f"--direct_num_workers={os.cpu_count() or 1}",
            "--default_sdk_harness_log_level=WARNING",
            *flags,
        ]
    return PipelineOptions(flags)


def run(build: Callable, dst: str, beam_options, beam_log: bool = True) -> list[dict]:
    """Runs the pipeline `build(root)` makes (its result: a PCollection of JSON-able outcomes) and returns the
    outcomes; Beam's log shown or held back as `beam_log` says (RunOptions). An error inside the pipeline (a
    rejected image with on_error="raise", a full disk) is raised here as a ConversionError with the message of the
    error that stopped it."""
    beam = import_beam()
    outcomes_dir = os.path.join(dst, OUTCOMES_DIR)
    shutil.rmtree(outcomes_dir, ignore_errors=True)  # a killed run's: its records are found on disk instead
    try:
        with log_shown(beam_log), beam.Pipeline(options=pipeline_options(beam_options)) as pipeline:
            (
                build(pipeline)
                | "Outcomes as JSON" >> beam.Map(json.dumps)
                | "Write outcomes" >> beam.io.WriteToText(os.path.join(outcomes_dir, "outcome"))
            )
        paths = sorted(glob.glob(os.path.join(outcomes_dir, "outcome*")))
        return [outcome for path in paths for outcome in _read_outcomes(path)]
    except ConversionError:
        raise
    except Exception as e:  # the runner wraps the DoFn's error in its own types
        raise ConversionError(f"the Beam pipeline failed: {_root_message(e)}") from e
    finally:
        shutil.rmtree(outcomes_dir, ignore_errors=True)


def _read_outcomes(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def _root_message(error: BaseException) -> str:
    """The message of the error that stopped a pipeline: runners re-raise it wrapped, with its traceback in text
    and the step's name appended."""
    text = str(error)
    raised = re.search(r"ConversionError: (.*?)(?: \[while running '[^']*'\])?(?:\n|$)", text)
    if raised:
        return raised.group(1)
    return text.strip().splitlines()[-1] if text.strip() else type(error).__name__
