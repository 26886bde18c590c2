"""The record job's "beam" runner (PCR and Liquid conversions on Apache Beam): the local runner's plan, image
preparation and record encoder (tfliquid.records.job), as a pipeline that runs unchanged on any Beam runner.

    records of the plan (their images' locations, keys, labels) -> Reshuffle (spread over the workers)
      -> per record: kept if complete on disk; else each image read and prepared (the job's graph function),
         the record built, checked (--verify) and written atomically, and a state fragment left
      -> one outcome per record
The process that launched it then writes the index, last, as the local runner does: the same seed gives the same
bytes whichever runner wrote them, and a killed run of either resumes with either.

A record's images are prepared by the worker that writes it: grouping prepared images by record instead would
send every encoded image through the runner's shuffle, which costs most with large items (raw pixels).
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from tfliquid._common import beam as beam_runner
from tfliquid._common.report import ConversionReport
from tfliquid.records import job as record_job

# The counts an outcome carries from a worker's ConversionReport into the launching process's.
_COUNTS = ("converted", "skipped", "files_written", "files_skipped", "input_bytes", "output_bytes")


@dataclasses.dataclass(frozen=True)
class _ImageTask:
    relative: str  # the record's file
    item: int
    location: tuple[str, int, int]
    label: int
    key: bytes
    origin: str


@dataclasses.dataclass(frozen=True)
class _Settings:
    dst: str
    spec: record_job.RecordJobSpec
    flags: int
    verify: bool
    overwrite: bool
    on_error: str
    fingerprint: str
    recorded: frozenset  # the records whose lossy count the state holds: only they may be kept (as locally)


def convert_records(source, plan, dst, state, report, spec, verify, overwrite, run, settled: set[str]):
    """record_job.convert_records on Beam: returns every record's WrittenRecord (None for a record none of whose
    images could be converted), fills in `report` and `state`, and adds every record to `settled` once the
    pipeline has run (a pipeline that fails settles none: what it rejected is not known). No progress is shown:
    Beam's own log is shown as `run.beam_log` says."""
    settings = _Settings(
        dst, spec, spec.job().flags, verify, overwrite, run.on_error, state.fingerprint, frozenset(state.lossy)
    )
    records = [
        [
            _ImageTask(
                relative, int(i), source.locate(int(i)), int(source.labels[i]), source.keys[i], source.origins[i]
            )
            for i in items
        ]
        for relative, items in zip(plan.relatives, plan.items)
    ]

    def build(pipeline):
        return (
            pipeline
            | "Records" >> beam.Create(records)
            | "Spread records" >> beam.Reshuffle()
            | "Convert records" >> beam.ParDo(_ConvertRecord(settings))
        )

    outcomes = {o["relative"]: o for o in beam_runner.run(build, dst, run.beam_options, run.beam_log)}
    state.merge_fragments()
    entries = []
    for relative in plan.relatives:
        outcome = outcomes[relative]
        for name in _COUNTS:
            setattr(report, name, getattr(report, name) + outcome["counts"][name])
        report.failures.extend(tuple(f) for f in outcome["failures"])
        entry = outcome["entry"]
        entries.append(None if entry is None else record_job.WrittenRecord(**entry))
    settled.update(plan.relatives)
    report.verified_images = report.images if verify else 0
    return entries


def _outcome(relative: str, entry, report: ConversionReport) -> dict:
    return {
        "relative": relative,
        "entry": None if entry is None else dataclasses.asdict(entry),
        "counts": {name: getattr(report, name) for name in _COUNTS},
        "failures": report.failures,
    }


class _ConvertRecord(beam.DoFn):
    """Keeps a record found complete on disk, or prepares its images and writes it as the local runner does."""

    def __init__(self, settings: _Settings):
        self.settings = settings

    def setup(self):
        self._job = self.settings.spec.job()
        self._prepare_one = self._job.prepare_one()

    def process(self, images: list[_ImageTask]):
        s = self.settings
        relative = images[0].relative
        keys, labels = [image.key for image in images], [image.label for image in images]
        kept = (
            None
            if s.overwrite or relative not in s.recorded
            else record_job.complete_record(s.dst, relative, keys, labels, s.flags)
        )
        if kept is not None and not s.verify:
            yield _outcome(relative, kept, ConversionReport(relative, skipped=len(images), files_skipped=1))
            return
        report = ConversionReport(relative)
        built = record_job.BuiltRecord()
        for image in images:
            prepared, reason = record_job.prepared_alone(
                self._prepare_one, image.item, image.location, image.label, image.key
            )
            if reason is None:
                built.add(prepared, image.origin, s.on_error, report)
            else:
                record_job.reject(image.origin, reason, s.on_error, report)
        entry = record_job.write_record(built, s.dst, relative, kept, self._job, s.verify, s.on_error, report)
        if entry is not None:
            record_job.write_state_fragment(s.dst, s.fingerprint, relative, built.lossy)
        yield _outcome(relative, entry, report)
