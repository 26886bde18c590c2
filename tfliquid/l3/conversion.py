"""The L3 conversion job: a folder tree of images -> the same tree of lossless `.l3` files (docs/formats/l3.md).

The plan is one job per source file (where to read it, where to write it); the per-file conversion is pure and
runs on a pool of threads here (the local runner) or on Apache Beam's workers (runner="beam"). Per file: decode
with Pillow (libpng for a PNG with a transparent colour) -> 8-bit grey, RGB or RGBA pixels ->
`tfliquid.l3.encode_l3` (the C++ op) -> written to a temporary file, optionally decoded back and compared, renamed
into place. Locally threads, not processes: Pillow's decoders and the op both release the GIL, so threads scale,
while worker processes must each import TensorFlow first, which costs seconds before any work.

A file is only ever complete or absent, so an interrupted run resumes by rerunning it: a `.l3` at least as new as
its source and written with the same profile is skipped.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import errno
import functools
import glob
import io
import os
import re
import time
from contextlib import nullcontext
from typing import Unpack

import numpy as np
import tensorflow as tf
from PIL import Image

from tfliquid._common.errors import (
    ArgumentError,
    ConversionError,
    OperandError,
    PathError,
    RejectedImageError,
    op_error_message,
)
from tfliquid._common.files import image_files, write_atomically
from tfliquid._common.lock import locked_destination
from tfliquid._common.progress import Progress
from tfliquid._common.report import ConversionReport, rejects_listed
from tfliquid._common.run_options import RunOptions, take_run_options
from tfliquid.jpeg.ops import check_jpeg
from tfliquid.l3 import codec as l3_format
from tfliquid.l3.ops import decode_l3, encode_l3

SOURCE_EXTENSIONS = (".png", ".bmp", ".gif", ".tif", ".tiff", ".ppm", ".pgm", ".pbm", ".pnm", ".webp", ".jpg", ".jpeg")

# Pillow mode -> the mode stored, for modes converted without loss. "1" becomes greys 0 and 255; LA becomes
# RGBA (L3 has no grey + alpha); a palette image becomes RGB, or RGBA if it has transparency (and so does a grey or
# RGB image with a transparent colour, see _pixels).
_LOSSLESS_MODES = {
    "1": "L",
    "L": "L",
    "LA": "RGBA",
    "P": "RGB",
    "PA": "RGBA",
    "RGB": "RGB",
    "RGBA": "RGBA",
    "RGBX": "RGB",
}
# Colour spaces L3 cannot hold: converted to RGB as Pillow does, which is not reversible (counted as lossy).
_RGB_CONVERTED_MODES = ("CMYK", "YCbCr", "LAB", "HSV")

# What a bad source file raises: unreadable or truncated (OSError), refused here, too large for Pillow or the op.
_FILE_ERRORS = (OSError, RejectedImageError, Image.DecompressionBombError, tf.errors.OpError)


@dataclasses.dataclass(frozen=True)
class _Job:
    source: str
    target: str


@dataclasses.dataclass(frozen=True)
class _Converted:
    input_bytes: int
    output_bytes: int
    pixels: int
    lossy: bool


def convert(
    src: str,
    dst: str,
    *,
    profile: str = "default",
    verify: bool = False,
    overwrite: bool = False,
    reduce_16bit: bool = False,
    **options: Unpack[RunOptions],
) -> ConversionReport:
    """Converts the images under `src` into `.l3` files under `dst`, at the same relative paths.

    Inputs are what Pillow reads (SOURCE_EXTENSIONS): PNG, BMP, GIF, TIFF, PPM/PGM/PBM and WebP are stored
    without loss. JPEG (and lossy WebP) are allowed too: L3 keeps their decoded pixels exactly (as Pillow decodes
    them), not their file size, which grows several times. Greys are stored as 1 channel, RGB as 3, RGBA as 4;
    1-bit, grey + alpha and palette images are widened without loss (palette with transparency -> RGBA, and
    so is a grey or RGB PNG whose tRNS chunk marks one colour transparent: alpha 0 where a pixel has it);
    CMYK, YCbCr, LAB and HSV are converted to RGB (not reversible; counted in `lossy_images`). EXIF orientation
    is not applied and metadata (EXIF, ICC profiles) is dropped.

    A source file that cannot be stored (unreadable, empty, corrupt, animated, 16-bit without `reduce_16bit`,
    larger than Pillow's decompression-bomb limit) does not stop the run: it is listed in the report's `failures`,
    and the CLI exits with status 1 (`on_error="raise"` stops at the first one); converting a folder, DST/rejected.tsv
    lists every one. One run at a time holds the
    destination folder (DST/.tfliquid-lock); a full disk stops the run.

    Args:
      src: a folder (searched recursively; hidden files and folders skipped) or a single image file.
      dst: the destination folder; for a single file, a `.l3` path is taken as the file to write.
      profile: "default" or "paper", the encoder settings (docs/formats/l3.md, Profiles).
      verify: decode every written file with `tfliquid.io.decode_l3` before renaming it into place and compare
        it with the pixels that were encoded; a mismatch is a failure of that file, which is not kept.
      overwrite: convert every file again; by default a `.l3` at least as new as its source and written with
        the same profile is skipped, so rerunning an interrupted conversion resumes it.
      reduce_16bit: store 16-bit images by their high byte (lossy) instead of refusing them.
      **options: how the conversion runs (`tfliquid._common.run_options.RunOptions`): on_error, progress, runner
        ("local": `workers` threads here, default one per CPU; "beam": an Apache Beam pipeline converting the same
        files the same way), workers, beam_options.
    """
    if profile not in l3_format.PROFILES:
        raise ArgumentError(f"profile must be one of {l3_format.PROFILES}, got {profile!r}")
    run, unknown = take_run_options(options)
    if unknown:
        raise ArgumentError(f"unknown keyword arguments {sorted(unknown)}")
    workers = run.workers or os.cpu_count() or 1
    start = time.perf_counter()
    jobs = _plan(src, dst)
    report = ConversionReport(dst, lossy_reason="reduced to 8 bits or converted to RGB (not reversible)")
    single = os.path.isfile(src)
    folder = (os.path.dirname(jobs[0].target) or os.curdir) if single else dst  # scan.l3: the current folder
    tried: set[str] = set()  # the sources this run converted, found converted or rejected
    with locked_destination(folder):
        _remove_temporaries(folder, jobs[0].target if single else None)
        # What each file's conversion is given, on either runner.
        settings = dict(
            profile=profile, verify=verify, overwrite=overwrite, reduce_16bit=reduce_16bit, on_error=run.on_error
        )

        def untried() -> set[str]:
            return {job.source for job in jobs} - tried

        # A folder's rejects are listed in DST/rejected.tsv; a single file's are in the report alone.
        listed = rejects_listed(folder, report, untried, not overwrite) if os.path.isdir(src) else nullcontext()
        with listed:
            if run.runner == "beam":
                _convert_jobs_beam(jobs, folder, report, settings, run, tried)
            else:
                _convert_jobs(jobs, report, settings, workers, run.progress, tried)
    report.failures.sort()
    report.verified_images = report.converted if verify else 0
    report.seconds = time.perf_counter() - start
    return report


def _convert_jobs(jobs, report, settings: dict, workers, progress, tried: set[str]) -> None:
    """Converts the files of `jobs` on `workers` threads, adding each source to `tried` as it is done."""
    convert_file = functools.partial(_converted_or_reason, **settings)

    def collect(job: _Job, done: concurrent.futures.Future):
        result, reason = done.result()
        _count(report, job, result, reason)
        tried.add(job.source)
        if result is None and reason is None:  # already converted: no work of this run's rate
            bar.skip()
        else:
            bar.advance()

    with Progress(len(jobs), "image", progress) as bar:
        _run_on_threads(convert_file, jobs, workers, collect)


def _convert_jobs_beam(jobs, folder, report, settings: dict, run, tried: set[str]) -> None:
    """_convert_jobs as an Apache Beam pipeline: the same per-file conversion on the runner's workers (the sources
    are all tried once it has run)."""
    import apache_beam as beam

    from tfliquid._common import beam as beam_runner

    convert_file = functools.partial(_outcome_of_file, **settings)

    def build(pipeline):
        return (
            pipeline
            | "Images" >> beam.Create(jobs)
            | "Spread images" >> beam.Reshuffle()
            | "Convert images" >> beam.Map(convert_file)
        )

    by_source = {o["source"]: o for o in beam_runner.run(build, folder, run.beam_options, run.beam_log)}
    for job in jobs:
        outcome = by_source[job.source]
        result = outcome["result"] and _Converted(**outcome["result"])
        _count(report, job, result, outcome["reason"])
        tried.add(job.source)


def _outcome_of_file(job: _Job, **settings) -> dict:
    """_converted_or_reason as plain values, the outcome a Beam worker sends back."""
    result, reason = _converted_or_reason(job, **settings)
    return {"source": job.source, "result": result and dataclasses.asdict(result), "reason": reason}


def _converted_or_reason(job: _Job, on_error: str, **settings) -> tuple[_Converted | None, str | None]:
    """(what converting `job` gave (None: already up to date), None), or (None, why the file cannot be converted).
    Raises ConversionError when the destination cannot be written, and for a rejected file with on_error="raise"."""
    try:
        return _convert_file(job, **settings), None
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT) or (e.filename and e.filename.startswith(job.target)):
            raise ConversionError(
                f"cannot write {job.target}: {e.strerror}; the files written so far are kept, "
                "and rerunning the same command resumes"
            ) from None
        reason = _reason(job, e)
    except _FILE_ERRORS as e:
        reason = _reason(job, e)
    if on_error == "raise":
        raise ConversionError(f"{job.source}: {reason}")
    return None, reason


def _remove_temporaries(folder: str, single_target: str | None) -> None:
    """Files a killed run was writing (NAME.tmp-PID) under `folder`; of `single_target` alone when one image is
    converted, whose folder (the current one, say) holds what is not ours. Safe only under the destination's
    lock."""
    if single_target is not None:
        paths = glob.glob(glob.escape(single_target) + ".tmp-*")
    else:
        paths = [os.path.join(dirpath, name) for dirpath, _, names in os.walk(folder) for name in names]
    for path in paths:
        if re.search(r"\.tmp-\d+$", path):
            os.remove(path)


def _plan(src: str, dst: str) -> list[_Job]:
    """One job per source image: where to read it, where to write it."""
    if os.path.isfile(src):
        target = dst if dst.lower().endswith(".l3") else os.path.join(dst, _l3_name(os.path.basename(src)))
        return [_Job(src, target)]
    if not os.path.isdir(src):
        raise PathError(f"{src}: no such file or folder")
    if os.path.exists(dst) and not os.path.isdir(dst):
        raise OperandError(f"{dst} is a file; the conversion of a folder needs a destination folder")
    sources = image_files(src, SOURCE_EXTENSIONS)
    if not sources:
        raise OperandError(f"{src}: no images ({', '.join(SOURCE_EXTENSIONS)}) found")
    jobs = [_Job(path, os.path.join(dst, _l3_name(os.path.relpath(path, src)))) for path in sources]
    _refuse_shared_targets(jobs)
    return jobs


def _l3_name(path: str) -> str:
    return os.path.splitext(path)[0] + ".l3"


def _refuse_shared_targets(jobs: list[_Job]) -> None:
    """photo.png and photo.jpg would both write photo.l3: refused before anything is written."""
    first_source = {}
    for job in jobs:
        other = first_source.setdefault(job.target, job.source)
        if other != job.source:
            raise OperandError(f"{other} and {job.source} would both be converted to {job.target}; rename one of them")


def _run_on_threads(function, jobs: list[_Job], workers: int, collect) -> None:
    """Runs function(job) for every job on `workers` threads; collect(job, future) runs here as each finishes.

    At most 2 x `workers` jobs are queued at a time, so a tree of millions of files does not become millions of
    futures. On an exception or Ctrl-C the queued jobs are dropped and the running ones finish writing.
    """
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        running = {}
        try:
            for job in jobs:
                if len(running) >= 2 * workers:
                    _collect_finished(running, collect)
                running[pool.submit(function, job)] = job
            while running:
                _collect_finished(running, collect)
        finally:
            pool.shutdown(cancel_futures=True)


def _collect_finished(running: dict, collect) -> None:
    finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
    for future in finished:
        collect(running.pop(future), future)


def _count(report: ConversionReport, job: _Job, result: _Converted | None, reason: str | None) -> None:
    if reason is not None:
        report.failures.append((job.source, reason))
        return
    if result is None:
        report.skipped += 1
        report.files_skipped += 1
        return
    report.converted += 1
    report.files_written += 1
    report.input_bytes += result.input_bytes
    report.output_bytes += result.output_bytes
    report.pixels += result.pixels
    report.lossy_images += result.lossy


def _reason(job: _Job, error: Exception) -> str:
    if os.path.isfile(job.source) and os.path.getsize(job.source) == 0:
        return "empty file (0 bytes)"
    if isinstance(error, Image.UnidentifiedImageError):  # its message names an in-memory file object
        return "not an image of a format Pillow reads"
    return op_error_message(error) if isinstance(error, tf.errors.OpError) else str(error)


def _convert_file(job: _Job, profile: str, verify: bool, overwrite: bool, reduce_16bit: bool) -> _Converted | None:
    """Converts one image; None if its target is already up to date."""
    if not overwrite and _is_up_to_date(job, profile):
        return None
    with open(job.source, "rb") as f:
        contents = f.read()
    if contents.startswith(b"\xff\xd8\xff"):  # Pillow, like libjpeg, would pad damaged JPEG data with grey
        check_jpeg(contents)
    with Image.open(io.BytesIO(contents)) as image:
        pixels, lossy = _pixels(image, contents, reduce_16bit)
    encoded = encode_l3(pixels, profile=profile).numpy()
    os.makedirs(os.path.dirname(job.target) or ".", exist_ok=True)
    check = functools.partial(_check_decodes_to, pixels) if verify else None
    write_atomically(job.target, encoded, check)
    return _Converted(os.path.getsize(job.source), len(encoded), pixels.shape[0] * pixels.shape[1], lossy)


def _is_up_to_date(job: _Job, profile: str) -> bool:
    """The target exists, is at least as new as the source, and has the header `profile` writes."""
    try:
        if os.stat(job.target).st_mtime_ns < os.stat(job.source).st_mtime_ns:
            return False
        with open(job.target, "rb") as f:
            written, height, width = l3_format.parse_params(f.read(l3_format.HEADER.size))
    except (FileNotFoundError, l3_format.L3Error):
        return False
    return written == l3_format.profile_params(profile, height, width, written.channels)


def _pixels(image: Image.Image, contents: bytes, reduce_16bit: bool) -> tuple[np.ndarray, bool]:
    """The uint8 [H, W, C] (C = 1, 3, 4) pixels to store of `image` (opened from `contents`), and whether they lost
    information."""
    frames = getattr(image, "n_frames", 1)
    if frames > 1:
        raise RejectedImageError(f"{frames} frames (an animation or pages); L3 stores one image")
    bits = _bits_per_sample(image)
    if bits == 16 and not reduce_16bit:
        raise RejectedImageError(
            "16-bit samples; L3 stores 8 bits per sample (reduce_16bit=True, --reduce-16bit, keeps the high byte)"
        )
    if bits not in (8, 16):
        raise RejectedImageError(f"{bits}-bit samples (mode {image.mode}); L3 stores 8 bits per sample")
    lossy = bits == 16
    if image.mode != "P" and "transparency" in image.info:  # a grey or RGB PNG with one colour transparent (tRNS)
        return _with_transparent_colour_as_alpha(contents), lossy
    if lossy and image.mode.startswith("I"):  # grey; Pillow already keeps the high byte of 16-bit colour on load
        image = Image.fromarray((np.asarray(image) >> 8).astype(np.uint8))
    if image.mode == "P" and image.has_transparency_data:
        stored_mode = "RGBA"
    elif image.mode in _LOSSLESS_MODES:
        stored_mode = _LOSSLESS_MODES[image.mode]
    elif image.mode in _RGB_CONVERTED_MODES:
        stored_mode, lossy = "RGB", True
    else:
        raise RejectedImageError(f"unsupported pixel mode {image.mode}")
    pixels = np.asarray(image.convert(stored_mode))
    return pixels.reshape(pixels.shape[0], pixels.shape[1], -1), lossy


def _with_transparent_colour_as_alpha(png: bytes) -> np.ndarray:
    """The RGBA pixels of a grey or RGB PNG with a tRNS chunk: alpha 0 where a pixel has the transparent colour.

    Decoded by libpng, which compares the colour with the samples at the file's bit depth; Pillow compares it with
    1-, 2- and 4-bit greys already widened to 8 bits and with 16-bit samples already reduced to 8, so that it
    misses them (the same at 8 bits). 16-bit samples keep their high byte, as elsewhere."""
    return tf.io.decode_png(png, channels=4).numpy()


def _bits_per_sample(image: Image.Image) -> int:
    """Bits per sample in the file. Read from the undecoded tiles: for 16-bit RGB(A) PNG and TIFF and PPM with a
    maximum above 255 Pillow reports an 8-bit mode and reduces the samples when it loads them."""
    for tile in image.tile:
        args = tile.args if isinstance(tile.args, tuple) else (tile.args,)
        if tile.codec_name == "ppm" and len(args) > 1:  # (rawmode, maximum sample value)
            return 8 if args[1] <= 255 else int(args[1]).bit_length()
        if args and isinstance(args[0], str) and ";16" in args[0]:  # rawmode such as "RGB;16B"
            return 16
    if image.mode.startswith("I;16"):
        return 16
    return 32 if image.mode in ("I", "F") else 8


def _check_decodes_to(pixels: np.ndarray, path: str) -> None:
    """The written file at `path` decodes to exactly `pixels`."""
    with open(path, "rb") as f:
        decoded = decode_l3(f.read()).numpy()
    if decoded.shape != pixels.shape:
        raise RejectedImageError(
            f"verification failed: the L3 file decodes to {decoded.shape}, the source is {pixels.shape}"
        )
    if not np.array_equal(decoded, pixels):
        wrong = int(np.count_nonzero(np.any(decoded != pixels, axis=-1)))
        raise RejectedImageError(f"verification failed: {wrong} pixels of the L3 file differ from the source")
