"""The JPEG ops: lossless progressive transcoding, the scan split and strict reading (their oracle: `jpeg.scans`)."""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.errors import ArgumentError, op_error_message
from tfliquid._lib import load_ops

__all__ = ["check_jpeg", "check_scan_script", "jpeg_to_progressive", "jpeg_scan_ends"]


def jpeg_to_progressive(
    contents, source="", keep_markers: bool = False, scan_script: str = "fast", rescript_progressive: bool = False
):
    """Makes a JPEG progressive without loss and splits it into scans.

    A baseline JPEG's DCT coefficients are copied into a progressive JPEG whose scans follow `scan_script`
    (`jpegtran -scans SCRIPT -optimize` semantics: full fidelity decodes to exactly the same pixels): "standard"
    (`jpegtran -progressive`), "fast" (spectral selection only, faster to decode) or a script in jpegtran's
    -scans syntax (docs/formats/pcr.md, "Scan scripts"). A progressive JPEG is kept as it is, once read whole,
    unless `rescript_progressive`. `keep_markers` keeps APPn/COM segments (EXIF, ICC) instead of dropping them.
    `source` names the input in error messages.

    Returns (progressive bytes, int64 vector of where each scan's entropy-coded data ends).
    """
    return load_ops().liquid_jpeg_to_progressive(
        contents,
        source,
        keep_markers=keep_markers,
        scan_script=scan_script,
        rescript_progressive=rescript_progressive,
    )


def check_jpeg(contents, source=""):
    """Returns `contents` once the JPEG's coefficients have all been read, strictly: damaged entropy-coded data
    (libjpeg's warnings that mean lost data, where decoders fill blocks with grey) is an InvalidArgumentError
    naming `source` (if given) and the byte offset. Conversions read every JPEG source through it."""
    return load_ops().liquid_check_jpeg(contents, source)


def check_scan_script(scan_script: str) -> None:
    """Raises ArgumentError, with the parser's message, unless `scan_script` is "standard", "fast" or a valid,
    lossless script in jpegtran's -scans syntax."""
    try:
        load_ops().liquid_check_scan_script(scan_script=scan_script)
    except tf.errors.InvalidArgumentError as e:
        raise ArgumentError(op_error_message(e)) from None


def jpeg_scan_ends(contents):
    """Where each scan's entropy-coded data ends in a JPEG (docs/formats/pcr.md, "Scan splitting")."""
    return load_ops().liquid_jpeg_scan_ends(contents)
