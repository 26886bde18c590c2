"""The record job: what every conversion into records (PCR's and Liquid's) does the same way, apart from what it
makes of each image.

A converter gives a `Plan` (which source items go to which record file, from its seed) and a `RecordJobSpec`
(plain settings, picklable) that makes its `RecordJob`: the graph function that prepares an image (read bytes ->
the record's parts of it) and the check of a written record. The record encoder (records.format.encode_record) is
the same for every converter. A runner then keeps the records a previous run completed (every planned image, every
CRC right), builds and writes the others atomically, rejects the images that cannot be prepared (listed in the
report with the reason, or raised with on_error="raise") and saves progress in DST/convert_state.json, so that
rerunning the same command resumes. A record that lacks a rejected image is not complete: a rerun tries that
image again. DST/rejected.tsv lists every source rejected (tfliquid._common.report.rejects_listed). The runners
(RUNNERS):
  - "local" (`convert_locally` here) runs one tf.data pipeline over every record to build, in parallel on every
    core (or on `workers` threads);
  - "beam" (tfliquid.records.job_beam) runs the same plan and encoders as a Beam pipeline.
One run at a time holds the destination (tfliquid._common.lock).
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from typing import Protocol

import numpy as np
import tensorflow as tf

from tfliquid._common import beam
from tfliquid._common.errors import ConversionError, OperandError, op_error_message
from tfliquid._common.files import write_atomically
from tfliquid._common.progress import Progress
from tfliquid._common.report import ConversionReport, rejects_listed
from tfliquid._common.run_options import Run, RunOptions
from tfliquid._lib import crc32c_fast
from tfliquid.io import sources
from tfliquid.io.sources import SourceOptions
from tfliquid.records import format as records_format
from tfliquid.records.dataset import RecordDataset

STATE_FILENAME = "convert_state.json"
# Per-record progress written by Beam workers (one small file each: they cannot share convert_state.json), merged
# into it by the next State.
STATE_FRAGMENTS_DIR = "convert_state.d"
RECORDS_DIR = "records"
SPOOL_FILENAME = "spool.tmp"


class ConversionOptions(RunOptions, SourceOptions, total=False):
    """The keyword arguments every conversion into records takes: how it runs (`RunOptions`: on_error, progress,
    runner, workers, beam_options) and how it reads its source (`SourceOptions`: source_format, image_key, label_key,
    key_feature, compression)."""


@dataclasses.dataclass(frozen=True)
class WrittenRecord:
    """A record file the job wrote or kept: what a dataset's index or manifest lists of it."""

    path: str  # relative to the dataset directory
    num_items: int
    payload_offset: int
    group_ends: list[int]  # absolute: one past group k at group_ends[k - 1]; the last is the file's size
    header_crc32c: int  # the preamble's header CRC32C: the record's identity, which readers check


@dataclasses.dataclass(frozen=True)
class RecordJob:
    """What a converter makes of each image.

    prepare: a graph function (item, image bytes, label, key) -> (item, the image as stored, int64 vector of the
      ends of its parts (a PCR image's scans; [len] for a whole item), label, key, lossy (bool), the bytes
      verify_record compares with (or ""), the source's size in bytes). An error rejects the image.
    flags: the records' preamble flags (records.format.WHOLE_ITEMS for records of whole items).
    verify_record: (the record's bytes, its WrittenRecord, the images' comparison bytes) -> [(index of an image
      that does not decode as its source makes it, why)] (`verify_items` does it); those images are rejected.
    """

    prepare: Callable
    flags: int
    verify_record: Callable[[bytes, WrittenRecord, list], list[tuple[int, str]]]

    def prepare_one(self) -> Callable:
        """`prepare` traced once for one image at a time, eagerly: (item, bytes, label, key) -> its tuple of
        tensors. What `prepared_alone` calls."""
        scalar = tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.string)
        return tf.function(self.prepare, input_signature=[scalar[0], scalar[1], scalar[0], scalar[1]])


class RecordJobSpec(Protocol):
    """A converter's settings for its RecordJob: plain values, so that they can be sent to Beam workers, each of
    which builds the job (its graph functions) once."""

    def job(self) -> RecordJob: ...


def check_destination(src: str, dst: str) -> None:
    """Refuses, before anything is written, a destination that is a file or lies in a source folder (it would be
    read as one more class, or as TFRecords)."""
    if os.path.exists(dst) and not os.path.isdir(dst):
        raise OperandError(f"{dst} is a file; the destination of a conversion is a directory")
    if os.path.isdir(src):
        source, destination = os.path.realpath(src), os.path.realpath(dst)
        if os.path.commonpath([source, destination]) == source:
            raise OperandError(f"the destination {dst} is inside the source folder {src}; choose one outside it")


def remove_temporaries(dst: str) -> None:
    """What a killed run left: files being written (NAME.tmp-PID), a partial spool, a Beam pipeline's outcomes.
    Safe only under the lock: no other run writes here."""
    shutil.rmtree(os.path.join(dst, beam.OUTCOMES_DIR), ignore_errors=True)
    for pattern in (
        "*.tmp-*",
        os.path.join(RECORDS_DIR, "*.tmp-*"),
        os.path.join(STATE_FRAGMENTS_DIR, "*.tmp-*"),
        SPOOL_FILENAME + ".tmp",
    ):
        for path in glob.glob(os.path.join(glob.escape(dst), pattern)):
            os.remove(path)


def plan_fingerprint(source: sources.Source, settings: dict) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(source.labels.tobytes())
    for key in source.keys:
        digest.update(len(key).to_bytes(4, "little") + key)
    return digest.hexdigest()


@dataclasses.dataclass
class Plan:
    """Which items go to which record: record r holds items[r] in that order, in file relatives[r] (relative to the
    dataset directory)."""

    items: list[np.ndarray]
    relatives: list[str]


def shuffled_plan(num_items: int, images_per_record: int, seed: int, name: str, extension: str) -> Plan:
    """Items in a seeded random order, cut into records of `images_per_record`: RECORDS_DIR/NAME-00000.EXTENSION,
    ..."""
    order = np.random.default_rng(seed).permutation(num_items)
    return chunked_plan(order, images_per_record, name, extension)


def chunked_plan(items: np.ndarray, images_per_record: int, name: str, extension: str) -> Plan:
    """`items`, in this order, cut into records of `images_per_record`: RECORDS_DIR/NAME-00000.EXTENSION, ..."""
    count = -(-len(items) // images_per_record)
    return Plan(
        items=[items[r * images_per_record : (r + 1) * images_per_record] for r in range(count)],
        relatives=[os.path.join(RECORDS_DIR, f"{name}-{r:05d}.{extension}") for r in range(count)],
    )


class State:
    """DST/convert_state.json: the plan's fingerprint (of the source and `settings`), how many images of each
    record were lossy, and the settings and image count, which say what differs when a run finds another plan."""

    def __init__(self, dst: str, source: sources.Source, settings: dict, overwrite: bool):
        self.path = os.path.join(dst, STATE_FILENAME)
        self.fingerprint = plan_fingerprint(source, settings)
        self.settings = json.loads(json.dumps(settings))  # as saved: tuples are lists
        self.num_images = source.num_items
        self.lossy: dict[str, int] = {}
        if os.path.exists(self.path) and not overwrite:
            try:
                with open(self.path) as f:
                    previous = json.load(f)
            except (OSError, ValueError) as e:
                raise ConversionError(f"{self.path} is unreadable ({e}); rerun with the overwrite option") from None
            if previous.get("plan") != self.fingerprint:
                raise OperandError(
                    f"{dst} holds another conversion ({self._difference(previous)}); use another destination, or "
                    "the overwrite option to replace it"
                )
            self.lossy = previous.get("lossy", {})
        self.fragments_dir = os.path.join(dst, STATE_FRAGMENTS_DIR)
        self.merge_fragments(keep=not overwrite)
        self.save()

    def merge_fragments(self, keep: bool = True) -> None:
        """Takes in the records a Beam run (perhaps killed) reported done in fragments of this plan, and removes the
        fragments."""
        fragments_dir = self.fragments_dir
        for path in sorted(glob.glob(os.path.join(glob.escape(fragments_dir), "*.json"))):
            with open(path) as f:
                fragment = json.load(f)
            if keep and fragment["plan"] == self.fingerprint:
                self.lossy[fragment["record"]] = fragment["lossy"]
        if os.path.isdir(fragments_dir):
            self.save()  # before the fragments go: what they said is never lost
            shutil.rmtree(fragments_dir)

    def record_done(self, relative: str, lossy: int) -> None:
        self.lossy[relative] = lossy
        self.save()

    def _difference(self, previous: dict) -> str:
        """What the conversion in `previous` (its saved state) has that this one has not, in a few words."""
        if "settings" not in previous:  # saved by tfliquid 0.1
            return "of other images or settings"
        before = previous["settings"]
        changed = [
            _changed_setting(name, before.get(name), value)
            for name, value in self.settings.items()
            if before.get(name) != value
        ]
        if changed:
            return "; ".join(changed)
        if previous["images"] != self.num_images:
            return f"of {previous['images']} source images, this one of {self.num_images}"
        return f"of other source images or labels, {self.num_images} as here"

    def save(self) -> None:
        state = {"plan": self.fingerprint, "lossy": self.lossy, "settings": self.settings, "images": self.num_images}
        write_or_explain(
            os.path.dirname(self.path), write_atomically, self.path, json.dumps(state, sort_keys=True).encode()
        )


# Settings that messages name as the user gives them: (name, separator of a list's values).
_SHOWN_AS = {"weights": ("ratio", ":")}


def _changed_setting(name: str, before, now) -> str:
    """ "images per record 1024 there, 16 now": lists as "a,b" (a ratio as "3:7"), a long text (a scan script's)
    as the start of its first line."""
    label, separator = _SHOWN_AS.get(name, (name.replace("_", " "), ","))

    def shown(value) -> str:
        if isinstance(value, list):
            return separator.join(str(v) for v in value)
        if isinstance(value, str) and ("\n" in value or len(value) > 40):
            return repr(value.strip().splitlines()[0][:40] + " ...")
        return "none" if value is None else str(value)

    return f"{label} {shown(before)} there, {shown(now)} now"


def write_state_fragment(dst: str, fingerprint: str, relative: str, lossy: int) -> None:
    """What State.record_done saves, from a Beam worker: one file per record, merged by the next State."""
    fragments_dir = os.path.join(dst, STATE_FRAGMENTS_DIR)
    os.makedirs(fragments_dir, exist_ok=True)
    fragment = {"plan": fingerprint, "record": relative, "lossy": lossy}
    path = os.path.join(fragments_dir, relative.replace(os.sep, "_") + ".json")
    write_or_explain(dst, write_atomically, path, json.dumps(fragment).encode())


def write_or_explain(dst: str, write, *args) -> None:
    """write(*args), with a full disk or a write error said in one line: what was written stays, a rerun resumes."""
    try:
        write(*args)
    except OSError as e:
        raise ConversionError(
            f"cannot write into {dst}: {e.strerror or e}; what was written is kept, and "
            "rerunning the same command resumes"
        ) from None


def convert_records(
    source: sources.Source,
    plan: Plan,
    dst: str,
    state: State,
    report: ConversionReport,
    spec: RecordJobSpec,
    verify: bool,
    overwrite: bool,
    run: Run,
    index_filename: str,
) -> list[WrittenRecord | None]:
    """Keeps the complete records, converts the others (and, with `verify`, rebuilds the kept ones to check them);
    returns every record's WrittenRecord, None for a record none of whose images could be converted, on the runner
    (RUNNERS) that `run` names. The files of the source that are not items (`source.rejected`) are rejected first,
    and DST/rejected.tsv lists every rejected source as the run ends (`rejects_listed`). With `overwrite`, the
    index or manifest of the conversion it replaces (`index_filename` in `dst`) and the record files of its plan
    that this plan does not write go first, so that a run stopped midway never leaves the old index beside new
    records, and the dataset holds no record its index or manifest does not list."""
    if overwrite:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(dst, index_filename))
        _remove_records_outside(dst, plan)
    settled: set[str] = set()  # the records this run kept, wrote, or found no image of to write

    def untried() -> set[str]:
        return {
            source.origins[i]
            for relative, items in zip(plan.relatives, plan.items)
            if relative not in settled
            for i in items
        }

    with rejects_listed(dst, report, untried, keep_previous=not overwrite):
        for origin, reason in source.rejected:
            reject(origin, reason, run.on_error, report)
        return RUNNERS[run.runner]()(source, plan, dst, state, report, spec, verify, overwrite, run, settled)


def convert_locally(source, plan, dst, state, report, spec, verify, overwrite, run: Run, settled: set[str]):
    """The local runner: one tf.data pipeline over every record to build, on every core of this process (on
    run.workers threads, if given). Adds each record to `settled` once it is kept or written (or found to have no
    image left)."""
    job = spec.job()
    # A record is kept only if the state knows its lossy count: a Beam worker killed between writing a record and
    # reporting it leaves a complete file that nothing counted, which is built again.
    entries = [
        None
        if overwrite or relative not in state.lossy
        else complete_record(dst, relative, keys_of(source, items), labels_of(source, items), job.flags)
        for relative, items in zip(plan.relatives, plan.items)
    ]
    build = [r for r, entry in enumerate(entries) if entry is None or verify]
    kept = [r for r, entry in enumerate(entries) if entry is not None and not verify]
    report.skipped = sum(len(plan.items[r]) for r in kept)
    report.files_skipped = len(kept)
    settled.update(plan.relatives[r] for r in kept)
    with Progress(source.num_items, "image", run.progress, initial=report.skipped) as bar:
        if not build:
            return entries
        # One pipeline for every record to build: images of the next record transcode while this one is written.
        items = np.concatenate([plan.items[r] for r in build])
        images = _Lookahead(_prepared_images(source, items, job.prepare, run.workers))
        prepare_one = job.prepare_one()  # why an image the pipeline left out was rejected
        for r in build:
            built = _take_record(images, plan.items[r], source, prepare_one, run.on_error, report, bar)
            entries[r] = write_record(built, dst, plan.relatives[r], entries[r], job, verify, run.on_error, report)
            if entries[r] is not None:
                state.record_done(plan.relatives[r], built.lossy)
            settled.add(plan.relatives[r])
    report.verified_images = report.images if verify else 0
    return entries


def _beam_runner():
    from tfliquid.records import job_beam  # apache-beam is optional: imported when a conversion asks for it

    return job_beam.convert_records


# The runners of the record job, by name (tfliquid._common.beam.RUNNERS); each resolved when used.
RUNNERS = {"local": lambda: convert_locally, "beam": _beam_runner}


def _remove_records_outside(dst: str, plan: Plan) -> None:
    planned = {os.path.normpath(relative) for relative in plan.relatives}
    for path in glob.glob(os.path.join(glob.escape(dst), RECORDS_DIR, "*")):
        if os.path.isfile(path) and os.path.relpath(path, dst) not in planned:
            os.remove(path)


def keys_of(source: sources.Source, items: np.ndarray) -> list[bytes]:
    return [source.keys[i] for i in items]


def labels_of(source: sources.Source, items: np.ndarray) -> list[int]:
    return source.labels[items].tolist()


def complete_record(dst: str, relative: str, keys: list[bytes], labels: list[int], flags: int):
    """The WrittenRecord of the record file `relative` if it is complete: the planned images (`keys` and `labels`
    in planned order) and every CRC right; None if it is missing, partial, corrupt or holds other images."""
    try:
        with open(os.path.join(dst, relative), "rb") as f:
            data = f.read()
        header = records_format.check_record(data, crc=crc32c_fast)
    except (OSError, records_format.RecordFormatError):
        return None
    preamble = records_format.parse_preamble(data)
    if preamble.flags != flags or list(header.keys) != keys or list(header.labels) != labels:
        return None
    return WrittenRecord(
        relative,
        header.num_items,
        preamble.payload_offset,
        [preamble.payload_offset + e for e in header.group_ends],
        preamble.header_crc32c,
    )


_BATCH = 32


def _prepared_images(source, items, prepare, workers: int | None):
    """Yields (item, as stored, part ends, label, key, lossy, source bytes, source size) per item that could be
    prepared, in order; the others are left out (the caller finds out why). Read and prepared on a thread pool of
    `workers` threads, or with None on tf.data's own (one thread per CPU).

    Batched through the iterator: per-element iterator calls would cost more Python time than assembling."""
    batches = (
        source.read(items)
        .map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .ignore_errors()
        .padded_batch(_BATCH, padding_values=(np.int64(0), b"", np.int64(-1), np.int64(0), b"", False, b"", 0))
        .prefetch(2)
    )
    if workers is not None:
        options = tf.data.Options()
        options.threading.private_threadpool_size = workers
        batches = batches.with_options(options)
    for item, stored, part_ends, label, key, lossy, contents, size in batches.as_numpy_iterator():
        for i in range(len(label)):
            ends = part_ends[i]
            yield (
                int(item[i]),
                stored[i],
                ends[ends >= 0].tolist(),
                int(label[i]),
                key[i],
                bool(lossy[i]),
                contents[i],
                int(size[i]),
            )


class _Lookahead:
    """An iterator whose next element can be looked at without taking it."""

    _END = object()

    def __init__(self, iterator):
        self._iterator = iterator
        self._next = next(iterator, self._END)

    def peek(self):
        return None if self._next is self._END else self._next

    def take(self):
        taken, self._next = self._next, next(self._iterator, self._END)
        return taken


class BuiltRecord:
    """The images of one record that could be prepared, in planned order."""

    def __init__(self):
        self.parts, self.labels, self.keys, self.verify_against = [], [], [], []
        self.origins, self.lossy_flags, self.sizes = [], [], []

    @property
    def empty(self) -> bool:
        return not self.keys

    @property
    def lossy(self) -> int:
        return sum(self.lossy_flags)

    @property
    def input_bytes(self) -> int:
        return sum(self.sizes)

    def remove(self, indexes: set[int]) -> None:
        """Leaves out the images at these indexes."""
        for name in ("parts", "labels", "keys", "verify_against", "origins", "lossy_flags", "sizes"):
            setattr(self, name, [x for i, x in enumerate(getattr(self, name)) if i not in indexes])

    def add(self, prepared: tuple, origin: str, on_error: str, report: ConversionReport) -> None:
        """Adds a prepared image (as stored, the ends of its parts, label, key, lossy, what --verify compares it
        with, source size), unless it has more parts than a record's groups (then it is rejected)."""
        stored, ends, label, key, is_lossy, expected, size = prepared
        if len(ends) > records_format.MAX_GROUPS:
            reject(origin, f"more than the {records_format.MAX_GROUPS} parts a record's item holds", on_error, report)
            return
        self.parts.append([stored[a:b] for a, b in zip([0, *ends], ends)])
        self.labels.append(label)
        self.keys.append(key)
        self.lossy_flags.append(is_lossy)
        self.sizes.append(size)
        self.verify_against.append(expected)
        self.origins.append(origin)


def _take_record(images: _Lookahead, items, source, prepare_one, on_error, report, bar: Progress) -> BuiltRecord:
    """Takes the prepared images of `items` from the stream, advancing `bar` by each; an item the stream lacks was
    rejected, and why is found out by preparing it alone (with `prepare_one`, RecordJob.prepare_one's)."""
    built = BuiltRecord()
    for item in items:
        head = images.peek()
        if head is None or head[0] != item:
            item = int(item)
            _, reason = prepared_alone(
                prepare_one, item, source.locate(item), int(source.labels[item]), source.keys[item]
            )
            reason = reason or "could not be prepared in the conversion pipeline, but was when retried alone"
            reject(source.origins[item], reason, on_error, report)
        else:
            built.add(images.take()[1:], source.origins[item], on_error, report)
        bar.advance()
    return built


def reject(origin: str, reason: str, on_error: str, report: ConversionReport) -> None:
    """An image left out of its record: listed in the report, or raised with on_error="raise"."""
    if on_error == "raise":
        raise ConversionError(f"{origin}: {reason}")
    report.failures.append((origin, reason))


def prepared_alone(prepare_one, item: int, location: tuple[str, int, int], label: int, key: bytes):
    """(the prepared image as BuiltRecord.add takes it, None), or (None, why it cannot be prepared): one image read
    from where it lies (`Source.locate`) and prepared by `prepare_one` (RecordJob.prepare_one's)."""
    try:
        contents = sources.read_located(location)
    except OSError as e:
        return None, f"{e.strerror or e}"
    try:
        result = prepare_one(item, contents, label, key)
    except tf.errors.OpError as e:
        return None, "empty file (0 bytes)" if not contents else op_error_message(e)
    _, stored, ends, label, key, lossy, expected, size = (t.numpy() for t in result)
    return (stored, ends.tolist(), int(label), key, bool(lossy), expected, int(size)), None


def write_record(built: BuiltRecord, dst, relative, kept_entry, job, verify, on_error, report) -> WrittenRecord | None:
    """Writes the record atomically, unless the complete record `kept_entry` on disk is already these bytes (a
    verifying rerun). With `verify`, the record's bytes are read back through the C++ reader first and its images
    that do not decode as their sources make them are rejected (listed in the report with the reason, or raised
    with on_error="raise"); the file written is then compared with those bytes. A record none of whose images are
    left is not written (a previous file of that name is removed): its entry is None."""
    path = os.path.join(dst, relative)
    record = _verified_record(built, relative, job, on_error, report) if verify else _encoded(built, job)
    if record is None:
        if os.path.exists(path):
            os.remove(path)
        return None
    entry = _written(relative, record)
    if kept_entry is not None and _file_bytes(path) == record.data:
        report.skipped += record.num_items
        report.files_skipped += 1
        return entry
    check = (lambda written: _check_written(written, path, record.data)) if verify else None
    write_or_explain(dst, write_atomically, path, record.data, check)
    report.converted += record.num_items
    report.files_written += 1
    report.input_bytes += built.input_bytes
    report.output_bytes += len(record.data)
    return entry


def _encoded(built: BuiltRecord, job: RecordJob) -> records_format.EncodedRecord | None:
    if built.empty:
        return None
    return records_format.encode_record(built.parts, built.labels, built.keys, crc=crc32c_fast, flags=job.flags)


def _written(relative: str, record: records_format.EncodedRecord) -> WrittenRecord:
    return WrittenRecord(relative, record.num_items, record.payload_offset, record.group_ends, record.header_crc32c)


def _verified_record(built: BuiltRecord, relative, job, on_error, report) -> records_format.EncodedRecord | None:
    """The record of the images of `built` that verify (job.verify_record); the others are rejected and left out
    of `built`."""
    while (record := _encoded(built, job)) is not None:
        failures = job.verify_record(record.data, _written(relative, record), built.verify_against)
        if not failures:
            return record
        for i, reason in failures:
            reject(built.origins[i], f"fails verification {reason}", on_error, report)
        built.remove({i for i, _ in failures})
    return None


def _check_written(written: str, path: str, data: bytes) -> None:
    if _file_bytes(written) != data:
        raise ConversionError(f"{path}: the file read back is not what was written (the storage lost data)")


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def verify_items(
    record: bytes,
    entry: WrittenRecord,
    expected_sources: list[bytes],
    item_format: str,
    decode_stored: Callable,
    decode_expected: Callable,
    decode_prefix: Callable | None = None,
    group_name: str = "group",
) -> list[tuple[int, str]]:
    """Reads a record's bytes back through the C++ reader (its items as `item_format` emits them) and decodes each
    image with `decode_stored`: read whole, it must have the pixels of its expected source decoded by
    `decode_expected`; with `decode_prefix`, read at every earlier group, the pixels `decode_prefix` gives of the
    same bytes. Returns (index, why) for each image that does not, at the first group where it does not."""
    num_groups = len(entry.group_ends)
    failures: dict[int, str] = {}
    for group in range(1 if decode_prefix else num_groups, num_groups + 1):
        source = tf.data.Dataset.from_tensors(tf.constant(record))
        read = RecordDataset(source, entry.path, group, item_format=item_format)
        items = [x["item"] for x in read.as_numpy_iterator()]
        whole = group == num_groups
        if whole:
            references, decode_reference = expected_sources, decode_expected
            where, other_pixels = "when read whole", "it decodes to other pixels than its source's"
        else:
            references, decode_reference = items, decode_prefix
            where, other_pixels = f"at {group_name} {group}", "it decodes to other pixels than the reference decoder"
        for i, reason in _mismatches(items, references, decode_stored, decode_reference, set(failures)):
            failures[i] = f"{where}: {reason or other_pixels}"
    return sorted(failures.items())


def _mismatches(items, references, decode_stored, decode_reference, skip: set[int]):
    """Yields (index, why) for each item whose decode_stored pixels are not decode_reference's of its reference
    (why: ""), or that either cannot decode (why: the error), leaving out the indexes in `skip`."""

    def same_pixels(i, item, reference):
        decoded, expected = decode_stored(item), decode_reference(reference)
        same_shape = tf.reduce_all(tf.equal(tf.shape(decoded), tf.shape(expected)))
        return i, tf.cond(same_shape, lambda: tf.reduce_all(tf.equal(decoded, expected)), lambda: False)

    indexes = [i for i in range(len(items)) if i not in skip]
    if not indexes:
        return
    pairs = tf.data.Dataset.from_tensor_slices((indexes, [items[i] for i in indexes], [references[i] for i in indexes]))
    compared = pairs.map(same_pixels, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).ignore_errors()
    same = dict(compared.as_numpy_iterator())
    for i in indexes:
        if i not in same:  # an error left it out: decoded alone, it says which
            yield i, _decode_error(items[i], references[i], decode_stored, decode_reference)
        elif not same[i]:
            yield i, ""


def _decode_error(item, reference, decode_stored, decode_reference) -> str:
    """Why an item or its reference cannot be decoded (eagerly, alone)."""
    for what, decode, data in (("it", decode_stored, item), ("its reference", decode_reference, reference)):
        try:
            decode(tf.constant(data))
        except tf.errors.OpError as e:
            return f"{what} cannot be decoded: {op_error_message(e)}"
    return "it could not be decoded with the others, but was alone"
