"""The PCR conversion job: an image folder or TFRecords -> a PCR dataset (docs/formats/pcr.md).

Per image (graph ops, in parallel on every core): read -> make progressive -> split into scans.
  - baseline JPEG: lossless transcode in-process (Liquid>JpegToProgressive, libjpeg coefficient copy);
  - progressive JPEG: kept;
  - anything else (PNG, ...): decoded and encoded as progressive JPEG at `quality` (lossy, counted).
Per record (Python): partials grouped by scan, header, CRCs, written to a temp file and renamed into place.

The plan (which image goes to which record) is a function of the source and the seed, and its fingerprint is
saved in DST/convert_state.json: a rerun of the same command keeps the records that are complete (every planned
image, every CRC right) and converts the others, so an interrupted job resumes where it stopped and a finished one
only checks. The index is written last. One run at a time holds the destination (DST/.tfliquid-lock).

An image that cannot be converted (unreadable, truncated, corrupt, not an image) is rejected: its record is
written without it, the report lists it with the reason, and the CLI exits with status 1; a rerun tries it again.
`on_error="raise"` stops at the first one instead.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time

import numpy as np
import tensorflow as tf

from tfliquid._common import sources
from tfliquid._common.checks import check_int
from tfliquid._common.crc32c import crc32c_fast
from tfliquid._common.errors import ArgumentError, ConversionError, op_error_message
from tfliquid._common.files import write_atomically
from tfliquid._common.lock import DestinationLock
from tfliquid._common.progress import Progress
from tfliquid._common.report import ConversionReport
from tfliquid._proto import pcr_pb2
from tfliquid._version import __version__
from tfliquid.pcr import format as pcr_format
from tfliquid.pcr import jpeg as jpeg_format
from tfliquid.pcr.dataset import PCRRecordDataset
from tfliquid.pcr.jpeg_ops import check_scan_script, jpeg_to_progressive

STATE_FILENAME = "convert_state.json"
RECORDS_DIR = "records"
SPOOL_FILENAME = "spool.tmp"
SOURCE_FORMATS = ("auto", "folder", "tfrecord")
# Images that are not JPEGs are decoded (about 4 bytes a pixel) to be re-encoded: larger ones are rejected before
# that, as Pillow's decompression-bomb check (which the L3 conversion meets) does at the same size.
MAX_PIXELS = 178_956_970
ON_ERROR = ("reject", "raise")
SCAN_SCRIPTS = ("standard", "fast")


def convert(
    src: str,
    dst: str,
    *,
    images_per_record: int = 1024,
    seed: int = 0,
    quality: int = 90,
    keep_markers: bool = False,
    verify: bool = False,
    source_format: str = "auto",
    image_key: str = "image/encoded",
    label_key: str = "image/class/label",
    key_feature: str = "image/filename",
    compression: str | None = None,
    overwrite: bool = False,
    on_error: str = "reject",
    scan_script: str = "fast",
    rescript_progressive: bool = False,
    progress: bool = True,
) -> ConversionReport:
    """Converts an image folder tree or TFRecord files into a PCR dataset at `dst`.

    Args:
      src: a folder with one subfolder per class (sorted names = labels 0, 1, ...), or TFRecord files of
        tf.train.Example (a file, a glob or a directory).
      dst: the dataset directory to create or resume; not `src` or inside it.
      images_per_record: N, images per record file.
      seed: the shuffle that assigns images to records; same seed and source = same bytes out.
      quality: JPEG quality for images that are not JPEGs (re-encoding them is lossy; JPEGs are lossless).
      keep_markers: keep APPn/COM segments (EXIF, ICC) of transcoded JPEGs; they are dropped by default.
      verify: check that every record of the dataset, the ones a rerun keeps included, holds what the sources
        make, and that it decodes at full fidelity to the source's exact pixels (for non-JPEG sources: to the
        pixels of the JPEG they were encoded to).
      source_format: "auto", "folder" or "tfrecord".
      image_key, label_key, key_feature: tf.train.Example features of TFRecord sources.
      compression: of TFRecord sources: "", "GZIP" or "ZLIB"; None guesses from the file extension.
      overwrite: discard a different conversion found at `dst` instead of refusing to touch it.
      on_error: "reject" (default): an image that cannot be converted is left out, listed in the report's
        `failures` with the reason, and the others are converted; "raise": stop at the first one.
      scan_script: the scans of the progressive JPEGs, hence the scan groups: "fast" (the default: spectral
        selection only, 7 groups for colour images; full fidelity decodes nearly as fast as baseline JPEG),
        "standard" (`jpegtran -progressive`, 10 groups with successive approximation: more quality per byte at
        low groups, half the decode speed at full fidelity), or the path of a file in jpegtran's -scans syntax
        (docs/formats/pcr.md, "Scan scripts"). Grey and colour images each get the
        built-in scripts' version for them; a file's script is for images of the components it names, and others
        are rejected.
      rescript_progressive: give progressive inputs the scan script too (losslessly), instead of keeping their own
        scans.
      progress: show progress on stderr.

    Raises ConversionError (the destination is held by another run, holds another conversion, cannot be written)
    and ArgumentError, both before anything is written when they concern the arguments.
    """
    images_per_record = check_int("images_per_record", images_per_record, 1, pcr_format.MAX_IMAGES)
    quality = check_int("quality", quality, 1, 100)
    seed = check_int("seed", seed, 0, (1 << 64) - 1)
    if source_format not in SOURCE_FORMATS:
        raise ArgumentError(f"source_format must be one of {SOURCE_FORMATS}, got {source_format!r}")
    if on_error not in ON_ERROR:
        raise ArgumentError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    script = _scan_script_text(scan_script)
    _check_destination(src, dst)
    start = time.perf_counter()
    os.makedirs(dst, exist_ok=True)
    with DestinationLock(dst):
        os.makedirs(os.path.join(dst, RECORDS_DIR), exist_ok=True)
        _remove_temporaries(dst)
        source = _open_source(
            src,
            source_format,
            os.path.join(dst, SPOOL_FILENAME),
            dict(image_key=image_key, label_key=label_key, key_feature=key_feature, compression=compression),
        )
        settings = dict(
            images_per_record=images_per_record,
            seed=seed,
            quality=quality,
            keep_markers=keep_markers,
            scan_script=script,
            rescript_progressive=rescript_progressive,
            format_version=pcr_format.FORMAT_VERSION,
        )
        plan = _Plan(source, images_per_record, seed)
        state = _State(dst, _plan_fingerprint(source, settings), overwrite)
        report = ConversionReport(dst, file_kind="record", lossy_reason="re-encoded lossily (they were not JPEGs)")
        prepare = _prepare_images(quality, keep_markers, script, rescript_progressive, verify)
        entries = _convert_records(source, plan, dst, state, report, prepare, verify, overwrite, on_error, progress)
        written = [e for e in entries if e is not None]
        if not written:
            raise ConversionError(f"{src}: no image could be converted (the report lists why):\n{report}")
        report.lossy_images = lossy_total = sum(state.lossy.get(e.path, 0) for e in written)
        index = pcr_pb2.DatasetIndex(
            format_version=pcr_format.FORMAT_VERSION,
            num_images=sum(e.num_images for e in written),
            num_scan_groups=max(len(e.prefix_ends) for e in written),
            class_names=source.class_names,
            num_classes=len(source.class_names) or int(source.labels.max()) + 1,
            records=written,
            has_keys=True,
            conversion=pcr_pb2.ConversionInfo(
                source=source.description,
                seed=seed,
                images_per_record=images_per_record,
                quality=quality,
                tfliquid_version=__version__,
                lossy_images=lossy_total,
                scan_script=script,
                rescript_progressive=rescript_progressive,
            ),
        )
        _write(dst, pcr_format.write_index, dst, index, crc32c_fast)
        if os.path.exists(os.path.join(dst, SPOOL_FILENAME)):
            os.remove(os.path.join(dst, SPOOL_FILENAME))
    report.seconds = time.perf_counter() - start
    return report


def _scan_script_text(scan_script: str) -> str:
    """ "standard", "fast", or the text of the script file `scan_script` names, checked."""
    if not isinstance(scan_script, str):
        raise ArgumentError(f"scan_script must be 'standard', 'fast' or a file's path, got {scan_script!r}")
    if scan_script in SCAN_SCRIPTS:
        return scan_script
    try:
        with open(scan_script) as f:
            text = f.read()
    except OSError as e:
        raise ArgumentError(
            f"scan_script must be 'standard', 'fast' or a file's path; {scan_script}: {e.strerror}"
        ) from None
    check_scan_script(text)
    return text


def _check_destination(src: str, dst: str) -> None:
    """Refuses, before anything is written, a destination that is a file or lies in a source folder (it would be
    read as one more class, or as TFRecords)."""
    if os.path.exists(dst) and not os.path.isdir(dst):
        raise ConversionError(f"{dst} is a file; the destination of a PCR conversion is a directory")
    if os.path.isdir(src):
        source, destination = os.path.realpath(src), os.path.realpath(dst)
        if os.path.commonpath([source, destination]) == source:
            raise ConversionError(f"the destination {dst} is inside the source folder {src}; choose one outside it")


def _remove_temporaries(dst: str) -> None:
    """What a killed run left: files being written (NAME.tmp-PID) and a partial spool. Safe only under the lock:
    no other run writes here."""
    for pattern in ("*.tmp-*", os.path.join(RECORDS_DIR, "*.tmp-*"), SPOOL_FILENAME + ".tmp"):
        for path in glob.glob(os.path.join(glob.escape(dst), pattern)):
            os.remove(path)


def _open_source(src: str, source_format: str, spool_path: str, tfrecord_options: dict) -> sources.Source:
    if source_format == "auto":
        source_format = _guess_source_format(src)
    if source_format == "folder":
        return sources.image_folder(src)
    return sources.spool_tfrecords(src, spool_path, **tfrecord_options)


def _guess_source_format(src: str) -> str:
    """ "folder" for a folder of class subfolders, "tfrecord" for TFRecord files; a clear error for a folder that
    holds neither."""
    if not os.path.isdir(src):
        return "tfrecord"  # a file or a glob
    entries = [e for e in os.scandir(src) if not e.name.startswith(".")]
    if any(e.is_dir() for e in entries):
        return "folder"
    if not entries:
        raise ConversionError(f"{src} is an empty folder: expected class subfolders of images, or TFRecord files")
    if any(e.name.lower().endswith(sources.IMAGE_EXTENSIONS) for e in entries):
        raise ConversionError(
            f"{src} holds images but no class subfolders: put them in one subfolder per class (SRC/CLASS/IMAGE)"
        )
    return "tfrecord"


def _plan_fingerprint(source: sources.Source, settings: dict) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(source.labels.tobytes())
    for key in source.keys:
        digest.update(len(key).to_bytes(4, "little") + key)
    return digest.hexdigest()


class _Plan:
    """Which items go to which record, from the seed: record r holds items[r] in that order, in file relatives[r]."""

    def __init__(self, source: sources.Source, images_per_record: int, seed: int):
        order = np.random.default_rng(seed).permutation(source.num_items)
        count = -(-source.num_items // images_per_record)
        self.items = [order[r * images_per_record : (r + 1) * images_per_record] for r in range(count)]
        self.relatives = [os.path.join(RECORDS_DIR, f"pcr-{r:05d}.pcr") for r in range(count)]


class _State:
    """DST/convert_state.json: the plan's fingerprint and how many images of each record were lossy."""

    def __init__(self, dst: str, fingerprint: str, overwrite: bool):
        self.path = os.path.join(dst, STATE_FILENAME)
        self.fingerprint = fingerprint
        self.lossy: dict[str, int] = {}
        if os.path.exists(self.path) and not overwrite:
            try:
                with open(self.path) as f:
                    previous = json.load(f)
            except (OSError, ValueError) as e:
                raise ConversionError(f"{self.path} is unreadable ({e}); rerun with --overwrite") from None
            if previous.get("plan") != fingerprint:
                raise ConversionError(
                    f"{dst} holds a conversion of other images or settings; use a new "
                    "destination or overwrite=True (--overwrite)"
                )
            self.lossy = previous.get("lossy", {})
        self.save()

    def record_done(self, relative: str, lossy: int) -> None:
        self.lossy[relative] = lossy
        self.save()

    def save(self) -> None:
        state = {"plan": self.fingerprint, "lossy": self.lossy}
        _write(os.path.dirname(self.path), write_atomically, self.path, json.dumps(state).encode())


def _write(dst: str, write, *args) -> None:
    """write(*args), with a full disk or a write error said in one line: what was written stays, a rerun resumes."""
    try:
        write(*args)
    except OSError as e:
        raise ConversionError(
            f"cannot write into {dst}: {e.strerror or e}; what was written is kept, and "
            "rerunning the same command resumes"
        ) from None


def _convert_records(
    source, plan, dst, state, report, prepare, verify, overwrite, on_error, progress
) -> list[pcr_pb2.RecordEntry | None]:
    """Keeps the complete records, converts the others (and, with `verify`, rebuilds the kept ones to check them);
    returns every record's index entry, None for a record none of whose images could be converted."""
    entries = [
        None if overwrite else _complete_record(dst, relative, source, items)
        for relative, items in zip(plan.relatives, plan.items)
    ]
    build = [r for r, entry in enumerate(entries) if entry is None or verify]
    kept = [r for r, entry in enumerate(entries) if entry is not None and not verify]
    report.skipped = sum(len(plan.items[r]) for r in kept)
    report.files_skipped = len(kept)
    with Progress(source.num_items, "image", progress) as bar:
        bar.update(report.skipped)
        if not build:
            return entries
        # One pipeline for every record to build: images of the next record transcode while this one is written.
        images = _Lookahead(_prepared_images(source, np.concatenate([plan.items[r] for r in build]), prepare))
        for r in build:
            built = _take_record(images, plan.items[r], source, prepare, on_error, report)
            path = os.path.join(dst, plan.relatives[r])
            if built.empty:
                entries[r] = None
                if os.path.exists(path):
                    os.remove(path)
            else:
                entries[r] = _store_record(built, path, plan.relatives[r], entries[r], verify, dst, report)
                state.record_done(plan.relatives[r], built.lossy)
            bar.update(report.images + len(report.failures))
    report.verified_images = report.images if verify else 0
    return entries


def _complete_record(dst: str, relative: str, source: sources.Source, items: np.ndarray):
    """The index entry of the record file `relative` if it is complete: every planned image (keys and labels in
    planned order) and every CRC right; None if it is missing, partial, corrupt or holds other images."""
    try:
        with open(os.path.join(dst, relative), "rb") as f:
            data = f.read()
        header = pcr_format.parse_header(data, crc=crc32c_fast)
    except (OSError, pcr_format.PCRFormatError, ValueError):  # ValueError: protobuf cannot parse the header
        return None
    payload_offset = pcr_format.PREAMBLE.size + pcr_format.PREAMBLE.unpack_from(data)[2]
    if payload_offset + header.group_ends[-1] != len(data):
        return None
    if list(header.keys) != [source.keys[i] for i in items] or list(header.labels) != source.labels[items].tolist():
        return None
    start = payload_offset
    for end, crc in zip(header.group_ends, header.group_crc32c):
        if crc32c_fast(data[start : payload_offset + end]) != crc:
            return None
        start = payload_offset + end
    return pcr_pb2.RecordEntry(
        path=relative,
        num_images=header.num_images,
        payload_offset=payload_offset,
        prefix_ends=[payload_offset + e for e in header.group_ends],
    )


def _prepare_images(quality: int, keep_markers: bool, scan_script: str, rescript_progressive: bool, verify: bool):
    """(item, image bytes, label, key) -> (item, progressive JPEG, scan ends, label, key, lossy, source bytes if
    verify, source size)."""

    def encode_other(contents):
        pixels = _claimed_pixels(contents)
        bounded = tf.debugging.assert_less_equal(
            pixels, tf.constant(MAX_PIXELS, tf.int64), message=f"the header claims more than {MAX_PIXELS} pixels"
        )
        with tf.control_dependencies([bounded]):  # before decode_image allocates them
            image = tf.io.decode_image(contents, expand_animations=False)
        channels = tf.shape(image)[-1]
        image = tf.cond(channels >= 3, lambda: image[..., :3], lambda: image[..., :1])  # drop alpha
        return tf.io.encode_jpeg(image, quality=quality)  # baseline: the transcode gives it the scan script

    def prepare(item, contents, label, key):
        is_jpeg = tf.io.is_jpeg(contents)
        jpeg = tf.cond(is_jpeg, lambda: contents, lambda: encode_other(contents))
        progressive, scan_ends = jpeg_to_progressive(
            jpeg, key, keep_markers=keep_markers, scan_script=scan_script, rescript_progressive=rescript_progressive
        )
        source_bytes = contents if verify else ""
        lossy = tf.logical_not(is_jpeg)
        return item, progressive, scan_ends, label, key, lossy, source_bytes, tf.strings.length(contents)

    return prepare


def _claimed_pixels(contents: tf.Tensor) -> tf.Tensor:
    """Width x height from the header of a PNG, GIF or BMP (what tf.io.decode_image reads besides JPEG), read
    before decoding; 0 for anything else (decode_image refuses it)."""
    data = contents + b"\0" * 26  # every field below lies in the first 26 bytes: short data reads zeros

    def number(offset: int, size: int, big_endian: bool) -> tf.Tensor:
        raw = tf.cast(tf.io.decode_raw(tf.strings.substr(data, offset, size), tf.uint8), tf.int64)
        weights = [256 ** (size - 1 - i) if big_endian else 256**i for i in range(size)]
        return tf.reduce_sum(raw * tf.constant(weights, tf.int64))

    def bmp_side(offset: int) -> tf.Tensor:  # an int32: BMP heights are negative for top-down images
        side = number(offset, 4, big_endian=False)
        return tf.where(side >= 2**31, 2**32 - side, side)

    magic = tf.strings.substr(data, 0, 8)
    return tf.case(
        [
            (tf.equal(magic, b"\x89PNG\r\n\x1a\n"), lambda: number(16, 4, True) * number(20, 4, True)),
            (tf.equal(tf.strings.substr(magic, 0, 3), b"GIF"), lambda: number(6, 2, False) * number(8, 2, False)),
            (tf.equal(tf.strings.substr(magic, 0, 2), b"BM"), lambda: bmp_side(18) * bmp_side(22)),
        ],
        default=lambda: tf.constant(0, tf.int64),
    )


_BATCH = 32


def _prepared_images(source, items, prepare):
    """Yields (item, progressive, scan ends, label, key, lossy, source bytes, source size) per item that could be
    prepared, in order; the others are left out (the caller finds out why).

    Batched through the iterator: per-element iterator calls would cost more Python time than assembling."""
    batches = (
        source.read(items)
        .map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .ignore_errors()
        .padded_batch(_BATCH, padding_values=(np.int64(0), b"", np.int64(-1), np.int64(0), b"", False, b"", 0))
        .prefetch(2)
    )
    for item, progressive, scan_ends, label, key, lossy, contents, size in batches.as_numpy_iterator():
        for i in range(len(label)):
            ends = scan_ends[i]
            yield (
                int(item[i]),
                progressive[i],
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


class _BuiltRecord:
    """The images of one record that could be prepared, in planned order."""

    def __init__(self):
        self.partials, self.labels, self.keys, self.verify_against = [], [], [], []
        self.lossy = 0
        self.input_bytes = 0

    @property
    def empty(self) -> bool:
        return not self.keys


def _take_record(images: _Lookahead, items, source, prepare, on_error, report) -> _BuiltRecord:
    """Takes the prepared images of `items` from the stream; an item the stream lacks was rejected, and why is
    found out by preparing it alone."""
    built = _BuiltRecord()
    for item in items:
        head = images.peek()
        if head is None or head[0] != item:
            reason = _rejection_reason(source, int(item), prepare)
            if on_error == "raise":
                raise ConversionError(f"{source.origins[item]}: {reason}")
            report.failures.append((source.origins[item], reason))
            continue
        _, progressive, ends, label, key, is_lossy, contents, size = images.take()
        if len(ends) > pcr_format.MAX_SCAN_GROUPS:
            reason = f"more than {jpeg_format.MAX_SCANS} scans"
            if on_error == "raise":
                raise ConversionError(f"{source.origins[item]}: {reason}")
            report.failures.append((source.origins[item], reason))
            continue
        built.partials.append([progressive[a:b] for a, b in zip([0, *ends], ends)])
        built.labels.append(label)
        built.keys.append(key)
        built.lossy += is_lossy
        built.input_bytes += size
        built.verify_against.append(progressive if is_lossy else contents)
    return built


def _rejection_reason(source: sources.Source, item: int, prepare) -> str:
    """Why an item could not be prepared: the error of reading it, or of preparing it alone."""
    read = source.read(np.array([item], np.int64))
    try:
        _, contents, _, _ = read.get_single_element()
        if len(contents.numpy()) == 0:
            return "empty file (0 bytes)"
        read.map(prepare).get_single_element()
    except tf.errors.OpError as e:
        return op_error_message(e)
    return "could not be prepared in the conversion pipeline, but was when retried alone"


def _store_record(built: _BuiltRecord, path, relative, kept_entry, verify, dst, report) -> pcr_pb2.RecordEntry:
    """Writes the record atomically, unless the complete record `kept_entry` on disk is already these bytes (a
    verifying rerun); with `verify`, the file is read back through the C++ reader first."""
    record = pcr_format.encode_record(built.partials, built.labels, built.keys, crc=crc32c_fast)
    entry = pcr_pb2.RecordEntry(
        path=relative,
        num_images=record.num_images,
        payload_offset=record.payload_offset,
        prefix_ends=record.prefix_ends,
    )
    check = (lambda written: _verify_record(written, entry, built.verify_against, built.keys)) if verify else None
    if kept_entry is not None and _file_bytes(path) == record.data:
        check(path)
        report.skipped += record.num_images
        report.files_skipped += 1
        return entry
    _write(dst, write_atomically, path, record.data, check)
    report.converted += record.num_images
    report.files_written += 1
    report.input_bytes += built.input_bytes
    report.output_bytes += len(record.data)
    return entry


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _verify_record(path: str, entry: pcr_pb2.RecordEntry, expected_sources: list[bytes], keys: list[bytes]):
    """Reads the record back through the C++ reader and compares full-fidelity pixels with the sources'."""
    written = PCRRecordDataset(path, list(entry.prefix_ends))
    pairs = tf.data.Dataset.zip(written, tf.data.Dataset.from_tensor_slices(expected_sources))

    def same_pixels(record_element, source):
        decoded, expected = tf.io.decode_jpeg(record_element["image"]), tf.io.decode_jpeg(source)
        same_shape = tf.reduce_all(tf.equal(tf.shape(decoded), tf.shape(expected)))
        return tf.cond(same_shape, lambda: tf.reduce_all(tf.equal(decoded, expected)), lambda: False)

    results = pairs.map(same_pixels, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    try:
        mismatched = [keys[i].decode(errors="replace") for i, ok in enumerate(results.as_numpy_iterator()) if not ok]
    except tf.errors.OpError as e:
        raise ConversionError(f"verifying {path}: {op_error_message(e)}") from None
    if mismatched:
        raise ConversionError(
            f"{path}: {len(mismatched)} images do not decode to their source pixels at full "
            f"fidelity, e.g. {mismatched[:3]}"
        )
