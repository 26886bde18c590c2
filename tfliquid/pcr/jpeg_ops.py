"""The JPEG ops behind PCR: lossless progressive transcoding and the scan split (their oracle: `pcr.jpeg`)."""

from __future__ import annotations

from tfliquid._lib import load_ops

__all__ = ["jpeg_to_progressive", "jpeg_scan_ends"]


def jpeg_to_progressive(contents, source="", keep_markers: bool = False):
    """Makes a JPEG progressive without loss and splits it into scans.

    A baseline JPEG's DCT coefficients are copied into a progressive JPEG (jpegtran -progressive -optimize
    semantics: full fidelity decodes to exactly the same pixels); a progressive JPEG is kept as it is.
    `keep_markers` keeps APPn/COM segments (EXIF, ICC) instead of dropping them. `source` names the input in
    error messages.

    Returns (progressive bytes, int64 vector of where each scan's entropy-coded data ends).
    """
    return load_ops().liquid_jpeg_to_progressive(contents, source, keep_markers=keep_markers)


def jpeg_scan_ends(contents):
    """Where each scan's entropy-coded data ends in a JPEG (docs/formats/pcr.md, "Scan splitting")."""
    return load_ops().liquid_jpeg_scan_ends(contents)
