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

An image that cannot be converted (unreadable, truncated, corrupt, not an image, of a format not read) is
rejected: its record is written without it, the report lists it with the reason, DST/rejected.tsv lists every one,
and the CLI exits with status 1; a rerun tries it again. `on_error="raise"` stops at the first one instead.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Unpack

import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError, ConversionError
from tfliquid._common.lock import locked_destination
from tfliquid._common.report import ConversionReport
from tfliquid._common.run_options import take_run_options
from tfliquid._lib import crc32c_fast
from tfliquid._proto import pcr_pb2
from tfliquid._version import __version__
from tfliquid.io.image_headers import decode_bounded
from tfliquid.io.sources import check_source_options, open_source
from tfliquid.jpeg.ops import check_scan_script, jpeg_to_progressive
from tfliquid.jpeg.sized import decode_jpeg
from tfliquid.pcr import format as pcr_format
from tfliquid.records import format as records_format
from tfliquid.records import job as record_job
from tfliquid.records.job import RECORDS_DIR, SPOOL_FILENAME, ConversionOptions

SCAN_SCRIPTS = ("standard", "fast")
# The conversion's settings that its index records (ConversionInfo): the others are in its fingerprint only.
_RECORDED_SETTINGS = ("seed", "images_per_record", "quality", "scan_script", "rescript_progressive")


def convert(
    src: str,
    dst: str,
    *,
    images_per_record: int = 1024,
    seed: int = 0,
    quality: int = 90,
    keep_markers: bool = False,
    verify: bool = False,
    overwrite: bool = False,
    scan_script: str = "fast",
    rescript_progressive: bool = False,
    **options: Unpack[ConversionOptions],
) -> ConversionReport:
    """Converts an image folder tree or TFRecord files into a PCR dataset at `dst`.

    Args:
      src: a folder with one subfolder per class (sorted names = labels 0, 1, ...), or TFRecord files of
        tf.train.Example (a file, a glob or a directory). What of a folder is rejected or ignored, and how labels
        are counted: docs/cli.md, "Sources, rejects and labels of conversions".
      dst: the dataset directory to create or resume; not `src` or inside it.
      images_per_record: N, images per record file.
      seed: the shuffle that assigns images to records; same seed and source = same bytes out.
      quality: JPEG quality for images that are not JPEGs (re-encoding them is lossy; JPEGs are lossless).
      keep_markers: keep APPn/COM segments (EXIF, ICC) of transcoded JPEGs; they are dropped by default.
      verify: check that every record of the dataset, the ones a rerun keeps included, holds what the sources
        make: each image, read back through the C++ reader and decoded as PCRDataset decodes it, has at full
        fidelity the source's exact pixels (for non-JPEG sources: the pixels of the JPEG they were encoded to) and at
        every other scan group the pixels `tf.io.decode_jpeg` gives of the same bytes. An image that does not is
        rejected (the report lists it with the scan group and why) and its record is written without it. This
        decodes every image at every scan group with both decoders: a verifying run takes several times longer.
      overwrite: discard a different conversion found at `dst` instead of refusing to touch it.
      scan_script: the scans of the progressive JPEGs, hence the scan groups: "fast" (the default: spectral
        selection only, 7 groups for colour images; full fidelity decodes nearly as fast as baseline JPEG),
        "standard" (`jpegtran -progressive`, 10 groups with successive approximation: more quality per byte at
        low groups, half the decode speed at full fidelity), or the path of a file in jpegtran's -scans syntax
        (docs/formats/pcr.md, "Scan scripts"). Grey and colour images each get the
        built-in scripts' version for them; a file's script is for images of the components it names, and others
        are rejected.
      rescript_progressive: give progressive inputs the scan script too (losslessly), instead of keeping their own
        scans.
      **options: how the conversion runs and reads SRC (`tfliquid.records.job.ConversionOptions`): on_error,
        progress, runner, workers (threads of the local runner; default one per CPU), beam_options (a TFRecord
        source is spooled here first), source_format, image_key, label_key, key_feature, compression.

    Returns the ConversionReport; its `rejected_list` is DST/rejected.tsv when a source was rejected.
    Raises ConversionError (the destination is held by another run, holds another conversion, cannot be written)
    and ArgumentError, both before anything is written when they concern the arguments.
    """
    images_per_record = check_int("images_per_record", images_per_record, 1, records_format.MAX_ITEMS)
    quality = check_int("quality", quality, 1, 100)
    seed = check_int("seed", seed, 0, (1 << 64) - 1)
    run, source_options = take_run_options(options)
    check_source_options(source_options)
    script = _scan_script_text(scan_script)
    record_job.check_destination(src, dst)
    start = time.perf_counter()
    with locked_destination(dst):
        os.makedirs(os.path.join(dst, RECORDS_DIR), exist_ok=True)
        record_job.remove_temporaries(dst)
        source = open_source(src, os.path.join(dst, SPOOL_FILENAME), **source_options)
        settings = dict(
            images_per_record=images_per_record,
            seed=seed,
            quality=quality,
            keep_markers=keep_markers,
            scan_script=script,
            rescript_progressive=rescript_progressive,
            format_version=pcr_format.FORMAT_VERSION,
        )
        plan = record_job.shuffled_plan(source.num_items, images_per_record, seed, "pcr", "pcr")
        state = record_job.State(dst, source, settings, overwrite)
        report = ConversionReport(
            dst,
            file_kind="record",
            lossy_reason="re-encoded lossily (they were not JPEGs)",
            notes=source.label_notes(),
        )
        spec = PCRJobSpec(quality, keep_markers, script, rescript_progressive, verify)
        entries = record_job.convert_records(
            source, plan, dst, state, report, spec, verify, overwrite, run, pcr_format.INDEX_FILENAME
        )
        written = [pcr_format.index_entry(e) for e in entries if e is not None]
        if not written:
            raise ConversionError(f"{src}: no image could be converted (the report lists why):\n{report}")
        report.lossy_images = lossy_total = sum(state.lossy.get(e.path, 0) for e in written)
        index = pcr_pb2.DatasetIndex(
            format_version=pcr_format.FORMAT_VERSION,
            num_images=sum(e.num_images for e in written),
            num_scan_groups=max(len(e.prefix_ends) for e in written),
            class_names=source.class_names,
            num_classes=source.num_classes,
            records=written,
            has_keys=True,
            conversion=pcr_pb2.ConversionInfo(
                source=source.description,
                tfliquid_version=__version__,
                lossy_images=lossy_total,
                **{name: settings[name] for name in _RECORDED_SETTINGS},
            ),
        )
        record_job.write_or_explain(dst, pcr_format.write_index, dst, index, crc32c_fast)
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


@dataclasses.dataclass(frozen=True)
class PCRJobSpec:
    """The settings of what the PCR conversion makes of each image (record_job.RecordJobSpec)."""

    quality: int
    keep_markers: bool
    scan_script: str
    rescript_progressive: bool
    verify: bool

    def job(self) -> record_job.RecordJob:
        prepare = _prepare_images(
            self.quality, self.keep_markers, self.scan_script, self.rescript_progressive, self.verify
        )
        return record_job.RecordJob(prepare=prepare, flags=0, verify_record=_verify_record)


def _prepare_images(quality: int, keep_markers: bool, scan_script: str, rescript_progressive: bool, verify: bool):
    """(item, image bytes, label, key) -> (item, progressive JPEG, scan ends, label, key, lossy, what --verify
    compares with if verify, source size)."""

    def encode_other(contents):
        image = decode_bounded(contents)
        channels = tf.shape(image)[-1]
        image = tf.cond(channels >= 3, lambda: image[..., :3], lambda: image[..., :1])  # drop alpha
        return tf.io.encode_jpeg(image, quality=quality)  # baseline: the transcode gives it the scan script

    def prepare(item, contents, label, key):
        is_jpeg = tf.io.is_jpeg(contents)
        jpeg = tf.cond(is_jpeg, lambda: contents, lambda: encode_other(contents))
        progressive, scan_ends = jpeg_to_progressive(
            jpeg, key, keep_markers=keep_markers, scan_script=scan_script, rescript_progressive=rescript_progressive
        )
        lossy = tf.logical_not(is_jpeg)
        # What --verify compares with: the source JPEG, or the JPEG a non-JPEG source became.
        expected = tf.where(lossy, progressive, contents) if verify else ""
        return item, progressive, scan_ends, label, key, lossy, expected, tf.strings.length(contents)

    return prepare


def _verify_record(record: bytes, entry: record_job.WrittenRecord, expected_sources: list[bytes]):
    """The images of a record that PCRDataset's decoder (`tfliquid.jpeg.sized.decode_jpeg`) does not decode, read
    whole, to the pixels of their sources (or of the JPEGs non-JPEG sources became) and, at every other scan
    group, to the pixels `tf.io.decode_jpeg` gives of the same bytes: [(index, why)]."""
    return record_job.verify_items(
        record,
        entry,
        expected_sources,
        "jpeg",
        decode_jpeg,
        _decode_like_tensorflow,
        decode_prefix=_decode_like_tensorflow,
        group_name="scan group",
    )


def _decode_like_tensorflow(jpeg):
    return tf.io.decode_jpeg(jpeg, channels=3)
