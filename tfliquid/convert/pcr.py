"""The PCR conversion job: an image folder or TFRecords -> a PCR dataset (docs/formats/pcr.md).

Per image (graph ops, in parallel on every core): read -> make progressive -> split into scans.
  - baseline JPEG: lossless transcode in-process (Liquid>JpegToProgressive, libjpeg coefficient copy);
  - progressive JPEG: kept;
  - anything else (PNG, ...): decoded and encoded as progressive JPEG at `quality` (lossy, counted).
Per record (Python): partials grouped by scan, header, CRCs, written to a temp file and renamed into place.

The plan (which image goes to which record) is a function of the source and the seed, and is saved in
DST/convert_state.json: a rerun of the same command skips the records already complete, so an interrupted job
resumes where it stopped and a finished one does nothing. The index is written last.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time

import numpy as np
import tensorflow as tf

from tfliquid import io as tfl_io
from tfliquid._proto import pcr_pb2
from tfliquid._version import __version__
from tfliquid.convert import common, sources
from tfliquid.convert.common import ConversionError
from tfliquid.formats import jpeg as jpeg_format
from tfliquid.formats import pcr as pcr_format

STATE_FILENAME = "convert_state.json"
RECORDS_DIR = "records"


@dataclasses.dataclass
class ConversionReport:
    path: str
    num_images: int
    num_records: int
    records_written: int
    records_skipped: int
    lossy_images: int
    verified_images: int
    seconds: float

    def __str__(self):
        verified = f", {self.verified_images} verified pixel-exact" if self.verified_images else ""
        return (f"{self.path}: {self.num_images} images in {self.num_records} records "
                f"({self.records_written} written, {self.records_skipped} already complete){verified}; "
                f"{self.lossy_images} re-encoded lossily; {self.seconds:.1f} s")


def _fast_crc(data: bytes) -> int:
    return int(tfl_io.crc32c(data))


def _open_source(src, source_format, dst, tfrecord_options) -> sources.Source:
    if source_format == "auto":
        is_folder = os.path.isdir(src) and any(e.is_dir() for e in os.scandir(src))
        source_format = "folder" if is_folder else "tfrecord"
    if source_format == "folder":
        return sources.image_folder(src)
    if source_format == "tfrecord":
        return sources.spool_tfrecords(src, os.path.join(dst, "spool.tmp"), **tfrecord_options)
    raise ValueError(f"source_format must be 'auto', 'folder' or 'tfrecord', got {source_format!r}")


def _plan_fingerprint(source: sources.Source, settings: dict) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(source.labels.tobytes())
    for key in source.keys:
        digest.update(len(key).to_bytes(4, "little") + key)
    return digest.hexdigest()


class _State:
    """DST/convert_state.json: the plan's fingerprint and how many images of each record were lossy."""

    def __init__(self, dst: str, fingerprint: str, overwrite: bool):
        self.path = os.path.join(dst, STATE_FILENAME)
        self.fingerprint = fingerprint
        self.lossy: dict[str, int] = {}
        if os.path.exists(self.path) and not overwrite:
            with open(self.path) as f:
                previous = json.load(f)
            if previous.get("plan") != fingerprint:
                raise ConversionError(f"{dst} holds a conversion of other images or settings; use a new "
                                      "destination or overwrite=True (--overwrite)")
            self.lossy = previous.get("lossy", {})
        self.save()

    def record_done(self, relative: str, lossy: int) -> None:
        self.lossy[relative] = lossy
        self.save()

    def save(self) -> None:
        state = {"plan": self.fingerprint, "lossy": self.lossy}
        common.write_atomically(self.path, json.dumps(state).encode())


def _prepare_images(quality: int, keep_markers: bool, verify: bool):
    """(image bytes, label, key) -> (progressive JPEG, scan ends, label, key, lossy, source bytes if verify)."""

    def encode_other(contents):
        image = tf.io.decode_image(contents, expand_animations=False)
        channels = tf.shape(image)[-1]
        image = tf.cond(channels >= 3, lambda: image[..., :3], lambda: image[..., :1])  # drop alpha
        return tf.io.encode_jpeg(image, quality=quality, progressive=True, optimize_size=True)

    def prepare(contents, label, key):
        is_jpeg = tf.io.is_jpeg(contents)
        jpeg = tf.cond(is_jpeg, lambda: contents, lambda: encode_other(contents))
        progressive, scan_ends = tfl_io.jpeg_to_progressive(jpeg, key, keep_markers=keep_markers)
        return progressive, scan_ends, label, key, tf.logical_not(is_jpeg), contents if verify else ""

    return prepare


def _record_entry(path: str, relative: str) -> pcr_pb2.RecordEntry | None:
    """The index entry of a complete, valid record file, or None if it is missing, partial or corrupt."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(pcr_format.PREAMBLE.size)
            header_length = pcr_format.parse_preamble(head)
            header = pcr_format.parse_header(head + f.read(header_length), crc=_fast_crc)
    except (OSError, pcr_format.PCRFormatError, ValueError):
        return None
    payload_offset = pcr_format.PREAMBLE.size + header_length
    if payload_offset + header.group_ends[-1] != size:
        return None
    return pcr_pb2.RecordEntry(path=relative, num_images=header.num_images, payload_offset=payload_offset,
                               prefix_ends=[payload_offset + e for e in header.group_ends])


def _verify_record(path: str, entry: pcr_pb2.RecordEntry, expected_sources: list[bytes], keys: list[bytes]):
    """Reads the written record back through the C++ reader and compares full-fidelity pixels."""
    from tfliquid.data.pcr_dataset import _PCRRecordDataset  # the reader under test; avoids an import cycle

    written = _PCRRecordDataset(path, list(entry.prefix_ends), len(entry.prefix_ends), 0, False)
    pairs = tf.data.Dataset.zip(written, tf.data.Dataset.from_tensor_slices(expected_sources))

    def same_pixels(record_element, source):
        decoded, expected = tf.io.decode_jpeg(record_element["image"]), tf.io.decode_jpeg(source)
        same_shape = tf.reduce_all(tf.equal(tf.shape(decoded), tf.shape(expected)))
        return tf.cond(same_shape, lambda: tf.reduce_all(tf.equal(decoded, expected)), lambda: False)

    results = pairs.map(same_pixels, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    mismatched = [keys[i].decode(errors="replace") for i, ok in enumerate(results.as_numpy_iterator()) if not ok]
    if mismatched:
        raise ConversionError(f"{path}: {len(mismatched)} images do not decode to their source pixels at full "
                              f"fidelity, e.g. {mismatched[:3]}")


def convert(src: str, dst: str, *, images_per_record: int = 1024, seed: int = 0, quality: int = 90,
            keep_markers: bool = False, verify: bool = False, source_format: str = "auto",
            image_key: str = "image/encoded", label_key: str = "image/class/label",
            key_feature: str = "image/filename", compression: str | None = None, overwrite: bool = False,
            progress: bool = True) -> ConversionReport:
    """Converts an image folder tree or TFRecord files into a PCR dataset at `dst`.

    Args:
      src: a folder with one subfolder per class (sorted names = labels 0, 1, ...), or TFRecord files of
        tf.train.Example (a file, a glob or a directory).
      dst: the dataset directory to create or resume.
      images_per_record: N, images per record file.
      seed: the shuffle that assigns images to records; same seed and source = same bytes out.
      quality: JPEG quality for images that are not JPEGs (re-encoding them is lossy; JPEGs are lossless).
      keep_markers: keep APPn/COM segments (EXIF, ICC) of transcoded JPEGs; they are dropped by default.
      verify: read every record back and check that full fidelity decodes to the source's exact pixels (for
        non-JPEG sources: to the pixels of the JPEG they were encoded to).
      source_format: "auto", "folder" or "tfrecord".
      image_key, label_key, key_feature: tf.train.Example features of TFRecord sources.
      compression: of TFRecord sources: "", "GZIP" or "ZLIB"; None guesses from the file extension.
      overwrite: discard a different conversion found at `dst` instead of refusing to touch it.
      progress: show a progress bar.
    """
    if not 1 <= images_per_record <= pcr_format.MAX_IMAGES:
        raise ValueError(f"images_per_record must be in 1..{pcr_format.MAX_IMAGES}, got {images_per_record}")
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be in 1..100, got {quality}")
    start = time.perf_counter()
    os.makedirs(os.path.join(dst, RECORDS_DIR), exist_ok=True)
    source = _open_source(src, source_format, dst,
                          dict(image_key=image_key, label_key=label_key, key_feature=key_feature,
                               compression=compression))
    settings = dict(images_per_record=images_per_record, seed=seed, quality=quality, keep_markers=keep_markers,
                    format_version=pcr_format.FORMAT_VERSION)
    state = _State(dst, _plan_fingerprint(source, settings), overwrite)

    order = np.random.default_rng(seed).permutation(source.num_items)
    num_records = -(-source.num_items // images_per_record)
    record_items = [order[r * images_per_record:(r + 1) * images_per_record] for r in range(num_records)]
    relatives = [os.path.join(RECORDS_DIR, f"pcr-{r:05d}.pcr") for r in range(num_records)]
    entries = [None if overwrite else _record_entry(os.path.join(dst, rel), rel) for rel in relatives]
    pending = [r for r in range(num_records) if entries[r] is None or entries[r].num_images != len(record_items[r])]

    bar = common.progress_bar(source.num_items, "image", progress)
    done_images = source.num_items - sum(len(record_items[r]) for r in pending)
    bar.update(done_images)
    if pending:
        # One pipeline for every pending record: images of the next record transcode while this one is written.
        images = _prepared_images(source, np.concatenate([record_items[r] for r in pending]),
                                  _prepare_images(quality, keep_markers, verify))
        for r in pending:
            path = os.path.join(dst, relatives[r])
            entries[r], lossy = _write_record(images, len(record_items[r]), path, relatives[r], verify)
            state.record_done(relatives[r], lossy)
            done_images += len(record_items[r])
            bar.update(done_images)
    written = len(pending)
    verified = sum(len(record_items[r]) for r in pending) if verify else 0

    lossy_total = sum(state.lossy.get(e.path, 0) for e in entries)
    index = pcr_pb2.DatasetIndex(
        format_version=pcr_format.FORMAT_VERSION,
        num_images=source.num_items,
        num_scan_groups=max(len(e.prefix_ends) for e in entries),
        class_names=source.class_names,
        num_classes=len(source.class_names) or int(source.labels.max()) + 1,
        records=entries,
        has_keys=True,
        conversion=pcr_pb2.ConversionInfo(source=source.description, seed=seed,
                                          images_per_record=images_per_record, quality=quality,
                                          tfliquid_version=__version__, lossy_images=lossy_total),
    )
    pcr_format.write_index(dst, index)
    spool = os.path.join(dst, "spool.tmp")
    if os.path.exists(spool):
        os.remove(spool)
    return ConversionReport(dst, source.num_items, num_records, written, num_records - written, lossy_total,
                            verified, time.perf_counter() - start)


_BATCH = 32


def _prepared_images(source, items, prepare):
    """Yields (progressive, scan ends, label, key, lossy, source bytes) per item, in order.

    Batched through the iterator: per-element iterator calls would cost more Python time than assembling."""
    batches = (source.read(items).map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
               .padded_batch(_BATCH, padding_values=(b"", np.int64(-1), np.int64(0), b"", False, b""))
               .prefetch(2))
    for progressive, scan_ends, label, key, lossy, contents in batches.as_numpy_iterator():
        for i in range(len(label)):
            ends = scan_ends[i]
            yield progressive[i], ends[ends >= 0].tolist(), int(label[i]), key[i], bool(lossy[i]), contents[i]


def _write_record(images, count, path, relative, verify):
    """Takes `count` images from the `images` stream and writes them as one record, atomically."""
    partials, labels, keys, lossy, source_bytes = [], [], [], 0, []
    try:
        for _ in range(count):
            progressive, ends, label, key, is_lossy, contents = next(images)
            partials.append([progressive[a:b] for a, b in zip([0, *ends], ends)])
            labels.append(label)
            keys.append(key)
            lossy += is_lossy
            if verify:
                source_bytes.append(progressive if is_lossy else contents)
    except tf.errors.OpError as e:
        raise ConversionError(f"converting record {relative}: {e.message}") from None
    if any(len(p) > pcr_format.MAX_SCAN_GROUPS for p in partials):
        raise ConversionError(f"{relative}: an image has more than {jpeg_format.MAX_SCANS} scans")
    record = pcr_format.encode_record(partials, labels, keys, crc=_fast_crc)
    entry = pcr_pb2.RecordEntry(path=relative, num_images=record.num_images, payload_offset=record.payload_offset,
                                prefix_ends=record.prefix_ends)
    check = (lambda tmp: _verify_record(tmp, entry, source_bytes, keys)) if verify else None
    common.write_atomically(path, record.data, check)
    return entry, lossy
