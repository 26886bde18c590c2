"""The Liquid conversion job: an image folder or TFRecords -> a Liquid dataset (docs/formats/liquid.md).

The plan gives each image exactly one format, from the seed, in exact counts (`format.assignment`), and cuts each
format's images into records. Per image (graph ops, in parallel on every core): read -> decode to C channels ->
the item of its format (raw, PNG, the JPEG as it is, L3). Records, resumption, rejections and `--verify` are the
record job's (tfliquid.records.job): Liquid records are record containers of whole items.

Before writing, the size of the dataset is predicted from every image decoded as the conversion decodes it (the
images it rejects left out, exact pixel counts, JPEG file sizes) and a seeded sample encoded in each compressed
format; `size_only=True` stops there.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
import time
from typing import Unpack

import numpy as np
import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError, ConversionError
from tfliquid._common.files import write_atomically
from tfliquid._common.lock import locked_destination
from tfliquid._common.report import ConversionReport
from tfliquid._common.run_options import take_run_options
from tfliquid._common.words import counted
from tfliquid._proto import liquid_pb2
from tfliquid._version import __version__
from tfliquid.io.image_headers import (
    bits_per_sample,
    decode_bounded,
    png_has_transparency_chunk,
)
from tfliquid.io.sources import check_source_options, open_source
from tfliquid.jpeg.ops import check_jpeg
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid import items as liquid_items
from tfliquid.records import format as records_format
from tfliquid.records import job as record_job
from tfliquid.records.job import RECORDS_DIR, SPOOL_FILENAME, ConversionOptions

L3_PROFILES = ("default", "paper")
_LOSSY_REASON = (
    "stored with a loss (alpha or a transparent colour dropped, colour dropped, 16-bit samples reduced to 8, "
    "or re-encoded as JPEG)"
)
# Images encoded per compressed format to predict its bytes per pixel (all of them when there are fewer).
SIZE_SAMPLE = 256


@dataclasses.dataclass
class SizePrediction:
    """The dataset's size predicted before writing: total and per format, in bytes, of the images the conversion
    will accept (`left_out` lists the others, which do not decode as the conversion decodes them)."""

    total: int
    per_format: dict[str, int]
    sampled: dict[str, int]  # images encoded per format to predict it (0: its size is exact)
    left_out: list[str] = dataclasses.field(default_factory=list)  # origins of the images not counted

    def __str__(self) -> str:
        parts = ", ".join(
            f"{name} {size / 1e6:,.1f} MB"
            + (f" (from {counted(self.sampled[name], 'image')})" if self.sampled[name] else "")
            for name, size in self.per_format.items()
        )
        line = f"predicted size {self.total / 1e6:,.1f} MB: {parts}"
        if self.left_out:
            line += (
                f"\n  {len(self.left_out)} images not counted: the conversion will reject them, they do not decode "
                f"(damaged, not an image, 16-bit, or claiming more pixels than allowed), e.g. "
                f"{', '.join(self.left_out[:3])}"
            )
        return line


@dataclasses.dataclass
class LiquidReport(ConversionReport):
    """A ConversionReport with the size predicted before writing and the size written."""

    prediction: SizePrediction | None = None
    dataset_bytes: int = 0

    def __str__(self) -> str:
        lines = [super().__str__()]
        if self.prediction is not None:
            lines.append(f"  {self.prediction}")
            if self.dataset_bytes:
                error = self.dataset_bytes / self.prediction.total - 1
                lines.append(f"  written {self.dataset_bytes / 1e6:,.1f} MB: {error:+.2%} against the prediction")
        return "\n".join(lines)


def convert(
    src: str,
    dst: str,
    *,
    formats=("png", "raw"),
    ratio=None,
    channels: int = 3,
    images_per_record: int = 16,
    seed: int = 0,
    png_compression: int = 6,
    l3_profile: str = "default",
    jpeg_quality: int = 90,
    reduce_16bit: bool = False,
    size_only: bool = False,
    verify: bool = False,
    overwrite: bool = False,
    **options: Unpack[ConversionOptions],
) -> LiquidReport:
    """Converts the images of `src` (a folder with a subfolder per class, whose sorted names are the labels, or
    TFRecord files of tf.train.Example: a file, a glob or a directory) into a Liquid dataset at `dst`, a directory
    to create or resume outside `src`.

    Args:
      formats: the formats to mix, e.g. ("l3", "raw") or "l3,raw": raw, png, jpeg, l3 (each at most once).
      ratio: one integer weight per format, e.g. "3:7" or (3, 7): each format holds exactly its share of the
        images (largest remainder). Needed for two formats or more; `tfliquid.liquid.profile` finds the best.
      channels: 3 (RGB) or 1 (grey): every image is stored and decodes with this many channels; dropping alpha
        (an alpha channel, or the colour a PNG's tRNS chunk marks transparent) or colour is counted lossy.
      images_per_record: images per record file (one read each). Small records keep reads steady: a stream
        that must read a whole large record before it yields anything stalls the mix (docs/liquid.md).
      seed: which image gets which format, and the order of records; same seed and source = same bytes out.
      png_compression: zlib level 0-9 of png items.
      l3_profile: "default" or "paper", of l3 items.
      jpeg_quality: for jpeg items whose source is not a JPEG (lossy; JPEG sources are kept as they are).
      reduce_16bit: store 16-bit PNGs by the high byte of each sample (counted lossy) instead of refusing them:
        every format holds 8 bits per sample.
      size_only: predict the dataset's size and return without writing anything.
      verify: read every record back through the C++ reader and check that each image decodes to its source's
        pixels (lossless formats) or to the JPEG stored.
      overwrite: discard a different conversion found at `dst` instead of refusing to touch it.
      **options: how the conversion runs and reads SRC (`tfliquid.records.job.ConversionOptions`), as in
        `tfliquid.pcr.convert`.

    Returns a LiquidReport (its `prediction` is the size predicted; `dataset_bytes` the size written; its
    `failures` the sources rejected, all listed in DST/rejected.tsv, as docs/cli.md says in "Sources, rejects and
    labels of conversions").
    """
    names = _check_formats(formats)
    weights = liquid_format.parse_ratio(ratio if ratio is not None else [1] * len(names), len(names))
    if ratio is None and len(names) > 1:
        raise ArgumentError("a ratio is needed to mix formats, e.g. ratio='3:7' (tfliquid profile liquid finds one)")
    channels = check_int("channels", channels, 1, 3)
    if channels not in liquid_format.CHANNELS:
        raise ArgumentError(f"channels must be 1 or 3, got {channels}")
    images_per_record = check_int("images_per_record", images_per_record, 1, records_format.MAX_ITEMS)
    seed = check_int("seed", seed, 0, (1 << 64) - 1)
    png_compression = check_int("png_compression", png_compression, 0, 9)
    jpeg_quality = check_int("jpeg_quality", jpeg_quality, 1, 100)
    if l3_profile not in L3_PROFILES:
        raise ArgumentError(f"l3_profile must be one of {L3_PROFILES}, got {l3_profile!r}")
    run, source_options = take_run_options(options)
    check_source_options(source_options)
    record_job.check_destination(src, dst)
    encoding = _Encoding(channels, png_compression, l3_profile, jpeg_quality, bool(reduce_16bit))
    start = time.perf_counter()
    if size_only:  # nothing is written at dst: a TFRecord source is spooled in a temporary directory
        with tempfile.TemporaryDirectory(prefix="tfliquid-size-") as spool_dir:
            source = open_source(src, os.path.join(spool_dir, SPOOL_FILENAME), **source_options)
            assigned = liquid_format.assignment(source.num_items, weights, seed)
            prediction = predict_size(source, names, assigned, encoding, images_per_record, seed)
        return LiquidReport(dst, prediction=prediction, seconds=time.perf_counter() - start)
    with locked_destination(dst):
        record_job.remove_temporaries(dst)
        source = open_source(src, os.path.join(dst, SPOOL_FILENAME), **source_options)
        assigned = liquid_format.assignment(source.num_items, weights, seed)
        prediction = predict_size(source, names, assigned, encoding, images_per_record, seed)
        report = LiquidReport(
            dst, file_kind="record", lossy_reason=_LOSSY_REASON, prediction=prediction, notes=source.label_notes()
        )
        os.makedirs(os.path.join(dst, RECORDS_DIR), exist_ok=True)
        plans = [record_job.chunked_plan(items, images_per_record, name, "lqr") for name, items in zip(names, assigned)]
        plan = record_job.Plan(
            items=[items for p in plans for items in p.items], relatives=[r for p in plans for r in p.relatives]
        )
        settings = dict(
            formats=names,
            weights=weights,
            images_per_record=images_per_record,
            seed=seed,
            format_version=liquid_format.FORMAT_VERSION,
            **dataclasses.asdict(encoding),
        )
        state = record_job.State(dst, source, settings, overwrite)
        format_of_item = np.zeros(source.num_items, np.int32)
        for name, items in zip(names, assigned):
            format_of_item[items] = liquid_items.FORMAT_INDEX[name]
        spec = LiquidJobSpec(format_of_item, encoding, verify)
        entries = record_job.convert_records(
            source, plan, dst, state, report, spec, verify, overwrite, run, liquid_format.MANIFEST_FILENAME
        )
        if not any(e is not None for e in entries):
            raise ConversionError(f"{src}: no image could be converted (the report lists why):\n{report}")
        manifest = _manifest(source, names, weights, plans, entries, state, encoding, images_per_record, seed)
        manifest.conversion.predicted_bytes = prediction.total
        report.lossy_images = manifest.conversion.lossy_images
        record_job.write_or_explain(dst, liquid_format.write_manifest, dst, manifest, write_atomically)
        report.dataset_bytes = liquid_format.dataset_bytes(manifest)
        _remove_spool(dst)
    report.seconds = time.perf_counter() - start
    return report


@dataclasses.dataclass(frozen=True)
class _Encoding:
    channels: int
    png_compression: int
    l3_profile: str
    jpeg_quality: int
    reduce_16bit: bool


def _check_formats(formats) -> list[str]:
    names = formats.split(",") if isinstance(formats, str) else list(formats)
    names = [n.strip() for n in names]
    unknown = [n for n in names if n not in liquid_format.FORMATS]
    if unknown or not names or len(set(names)) != len(names):
        raise ArgumentError(
            f"formats must be distinct names of {', '.join(liquid_format.FORMATS)}, e.g. 'l3,raw'; got {formats!r}"
        )
    return names


def _remove_spool(dst: str) -> None:
    spool = os.path.join(dst, SPOOL_FILENAME)
    if os.path.exists(spool):
        os.remove(spool)


def _decoded(contents: tf.Tensor, channels: int, reduce_16bit: bool):
    """Source bytes -> (pixels with `channels` channels, is JPEG, lossy), refusing what a strict reader refuses: a
    header that claims more than MAX_PIXELS pixels or a PNG's more than it holds (before decoding), a JPEG whose
    data libjpeg would pad with grey (read strictly by check_jpeg first), and 16-bit samples unless `reduce_16bit`
    (then their high byte is kept, a loss). The size prediction decodes every image by it too: an image it refuses
    is one the conversion rejects."""
    is_jpeg = tf.io.is_jpeg(contents)
    sixteen_bit = tf.equal(bits_per_sample(contents), 16)
    if not reduce_16bit:
        contents = _refused_if(
            sixteen_bit,
            contents,
            "16-bit samples; Liquid stores 8 bits per sample (reduce_16bit=True, --reduce-16bit, keeps the high byte)",
        )

    image = tf.cond(is_jpeg, lambda: tf.io.decode_jpeg(check_jpeg(contents)), lambda: decode_bounded(contents))
    pixels, lossy_channels = liquid_items.to_channels(image, channels)
    # Liquid holds no alpha: a PNG's transparent colour is dropped as its alpha channel would be
    transparency_dropped = png_has_transparency_chunk(contents)
    return pixels, is_jpeg, lossy_channels | sixteen_bit | transparency_dropped


def _refused_if(refused: tf.Tensor, contents: tf.Tensor, reason: str) -> tf.Tensor:
    """`contents`, once an InvalidArgument error saying `reason` is raised where `refused` holds."""
    check = tf.debugging.assert_equal(refused, False, message=reason)
    with tf.control_dependencies([check]):
        return tf.identity(contents)


def _encoded(contents: tf.Tensor, format_index: tf.Tensor, encoding: _Encoding):
    """Source bytes -> (the item of format `format_index`, lossy, lossy because the source had to be encoded)."""
    pixels, is_jpeg, lossy_decoding = _decoded(contents, encoding.channels, encoding.reduce_16bit)
    stored, lossy_encoding = liquid_items.encode_item(
        format_index,
        pixels,
        contents,
        is_jpeg,
        encoding.png_compression,
        encoding.l3_profile,
        encoding.jpeg_quality,
    )
    return stored, tf.logical_or(lossy_decoding, lossy_encoding), lossy_encoding


@dataclasses.dataclass(frozen=True)
class LiquidJobSpec:
    """The settings of what the Liquid conversion makes of each image (record_job.RecordJobSpec)."""

    format_of_item: np.ndarray  # int32, the index in liquid_format.FORMATS of each item's format
    encoding: _Encoding
    verify: bool

    def job(self) -> record_job.RecordJob:
        return record_job.RecordJob(
            prepare=_prepare_images(self.format_of_item, self.encoding, self.verify),
            flags=records_format.WHOLE_ITEMS,
            verify_record=functools.partial(_verify_record, encoding=self.encoding),
        )


def _prepare_images(format_of_item: np.ndarray, encoding: _Encoding, verify: bool):
    """(item, image bytes, label, key) -> the record job's tuple, with the item of the image's planned format."""
    formats = tf.constant(format_of_item)

    def prepare(item, contents, label, key):
        stored, lossy, lossy_encoding = _encoded(contents, tf.gather(formats, item), encoding)
        # What --verify compares with: the source, or the JPEG stored when the source had to be encoded lossily.
        expected = tf.where(lossy_encoding, stored, contents) if verify else ""
        ends = tf.reshape(tf.cast(tf.strings.length(stored), tf.int64), [1])
        return item, stored, ends, label, key, lossy, expected, tf.strings.length(contents)

    return prepare


def _verify_record(record, entry, expected_sources, encoding: _Encoding) -> list[tuple[int, str]]:
    return record_job.verify_items(
        record,
        entry,
        expected_sources,
        "bytes",
        lambda item: liquid_items.decode_item(item, liquid_items.format_index(item), encoding.channels),
        lambda source: _decoded(source, encoding.channels, encoding.reduce_16bit)[0],
    )


def _manifest(source, names, weights, plans, entries, state, encoding, images_per_record, seed):
    manifest = liquid_pb2.LiquidManifest(
        format_version=liquid_format.FORMAT_VERSION,
        channels=encoding.channels,
        class_names=source.class_names,
        num_classes=source.num_classes,
        has_keys=True,
        conversion=liquid_pb2.LiquidConversionInfo(
            source=source.description,
            seed=seed,
            images_per_record=images_per_record,
            tfliquid_version=__version__,
            png_compression=encoding.png_compression,
            l3_profile=encoding.l3_profile,
            jpeg_quality=encoding.jpeg_quality,
        ),
    )
    by_path = {e.path: e for e in entries if e is not None}
    for name, weight, plan in zip(names, weights, plans):
        fmt = manifest.formats.add(name=name, ratio_weight=weight)
        for relative in plan.relatives:
            entry = by_path.get(relative)
            if entry is None:  # every image of this record was rejected
                continue
            fmt.records.add(
                path=relative,
                num_images=entry.num_items,
                num_bytes=entry.group_ends[-1],
                header_crc32c=entry.header_crc32c,
            )
            fmt.num_images += entry.num_items
            fmt.num_bytes += entry.group_ends[-1]
            manifest.conversion.lossy_images += state.lossy.get(relative, 0)
        manifest.num_images += fmt.num_images
    return manifest


def predict_size(source, names, assigned, encoding: _Encoding, images_per_record: int, seed: int) -> SizePrediction:
    """The dataset's size before writing it. Every image is decoded as the conversion decodes it (`_decoded`): the
    ones that fail are those the conversion rejects, left out, and the others' pixels are counted exactly. Raw
    items are header + pixels and jpeg items of JPEG sources are the sources: exact. PNG and L3 items are predicted
    from a seeded sample of SIZE_SAMPLE of their images, encoded: their bytes per pixel times the format's pixels.
    Record headers are counted from the keys and labels."""
    accepted, all_pixels, all_sizes, all_jpeg = _decoded_images(source, encoding)
    per_format, sampled = {}, {}
    rng = np.random.default_rng(seed)
    for name, items in zip(names, assigned):
        items = items[accepted[items]]
        pixels, sizes, is_jpeg = all_pixels[items], all_sizes[items], all_jpeg[items]
        if name == "raw":
            payload, sampled[name] = int((liquid_format.RAW_HEADER.size + pixels * encoding.channels).sum()), 0
        elif name == "jpeg" and is_jpeg.all():
            payload, sampled[name] = int(sizes.sum()), 0
        else:
            sample = np.sort(rng.choice(items, size=min(SIZE_SAMPLE, len(items)), replace=False))
            encoded, sizes_of = _encoded_sizes(source, sample, name, encoding)
            bytes_per_pixel = sizes_of.sum() / max(all_pixels[encoded].sum(), 1)
            payload, sampled[name] = int(round(bytes_per_pixel * pixels.sum())), len(sample)
        per_format[name] = payload + _record_overhead(source, items, images_per_record)
    left_out = [source.origins[i] for i in np.flatnonzero(~accepted)]
    return SizePrediction(sum(per_format.values()), per_format, sampled, left_out)


def _record_overhead(source, items: np.ndarray, images_per_record: int) -> int:
    """Bytes of the record preambles and headers: keys, labels and sizes as protobuf writes them (sizes at their
    typical 3 bytes), and the fixed fields of each record."""
    records = -(-len(items) // images_per_record)
    keys = sum(len(source.keys[i]) + 2 for i in items)
    labels = sum(_varint_size(int(source.labels[i])) for i in items)
    return records * (records_format.PREAMBLE.size + 24) + keys + labels + 3 * len(items)


def _varint_size(value: int) -> int:
    value &= (1 << 64) - 1
    return max(1, -(-value.bit_length() // 7))


def _decoded_images(source, encoding: _Encoding):
    """(decodes, pixels, source bytes, is JPEG) of every image, decoded as the conversion decodes it (`_decoded`,
    which refuses what a strict reader refuses): an image that fails to decode is one the conversion rejects."""

    def decoded(i, contents, label, key):
        pixels, is_jpeg, _ = _decoded(contents, encoding.channels, encoding.reduce_16bit)
        height_width = tf.cast(tf.shape(pixels)[:2], tf.int64)
        return i, height_width[0] * height_width[1], tf.cast(tf.strings.length(contents), tf.int64), is_jpeg

    accepted = np.zeros(source.num_items, bool)
    pixels = np.zeros(source.num_items, np.int64)
    sizes = np.zeros(source.num_items, np.int64)
    is_jpeg = np.zeros(source.num_items, bool)
    read = (
        source.read(np.arange(source.num_items))
        .map(decoded, num_parallel_calls=tf.data.AUTOTUNE)
        .ignore_errors()
        .batch(1024)
    )
    for items, p, s, j in read.as_numpy_iterator():
        accepted[items], pixels[items], sizes[items], is_jpeg[items] = True, p, s, j
    return accepted, pixels, sizes, is_jpeg


def _encoded_sizes(source, sample: np.ndarray, name: str, encoding: _Encoding):
    """(items, their item sizes in format `name`) of the sample's images that could be encoded."""
    index = liquid_items.FORMAT_INDEX[name]

    def size(i, contents, label, key):
        item, _, _ = _encoded(contents, tf.constant(index), encoding)
        return i, tf.cast(tf.strings.length(item), tf.int64)

    items, sizes = [], []
    for i, n in source.read(sample).map(size, num_parallel_calls=tf.data.AUTOTUNE).ignore_errors().as_numpy_iterator():
        items.append(i)
        sizes.append(n)
    return np.asarray(items, np.int64), np.asarray(sizes, np.int64)
