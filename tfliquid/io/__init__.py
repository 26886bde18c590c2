"""Stage 2: thin wrappers of tfliquid's I/O and JPEG ops.

Every tfliquid reader draws from one process-wide token bucket, so a whole input pipeline can be run as if its
storage delivered `bytes_per_second` (the PCR paper's experiments throttle storage the same way)::

    >>> tfliquid.io.set_read_bandwidth(50e6)     # 50 MB/s for every tfliquid reader in this process
    >>> contents = tfliquid.io.read_file(path)   # like tf.io.read_file, throttled
    >>> tfliquid.io.set_read_bandwidth(None)     # unlimited again
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._lib import ops as _ops

__all__ = ["read_file", "set_read_bandwidth", "draw_read_bandwidth", "read_stats", "crc32c", "jpeg_to_progressive",
           "jpeg_scan_ends", "decode_l3", "encode_l3"]


def read_file(filename, offset=None, length=None, name=None):
    """Reads a file into a scalar string tensor, like `tf.io.read_file`, through the read throttle.

    With `offset` (and `length`, default: to the end), reads that byte range only.
    """
    if offset is None and length is None:
        return _ops().liquid_read_file(filename, name=name)
    offset = tf.constant(0, tf.int64) if offset is None else tf.cast(offset, tf.int64)
    length = tf.constant(-1, tf.int64) if length is None else tf.cast(length, tf.int64)
    return _ops().liquid_read_file_range(filename, offset, length, name=name)


def set_read_bandwidth(bytes_per_second: float | None) -> None:
    """Limits every tfliquid reader in this process to `bytes_per_second` together; None or 0 removes it."""
    rate = float(bytes_per_second or 0)
    if rate < 0:
        raise ValueError(f"bytes_per_second must be positive or None, got {bytes_per_second}")
    _ops().liquid_set_read_bandwidth(tf.constant(rate, tf.float64))


def draw_read_bandwidth(num_bytes, payload):
    """Returns `payload` once the read throttle has granted `num_bytes`: puts a reader outside tfliquid (e.g.
    `tf.data.TFRecordDataset`) on the same bandwidth budget, for fair comparisons.

    >>> records = tf.data.TFRecordDataset(files).map(
    ...     lambda r: tfliquid.io.draw_read_bandwidth(tf.strings.length(r), r))
    """
    draw = _ops().liquid_draw_read_bandwidth(tf.cast(num_bytes, tf.int64))
    with tf.control_dependencies([draw]):
        return tf.identity(payload)


def read_stats() -> dict:
    """{"bytes_read": bytes every tfliquid reader has read in this process, "bytes_per_second": limit or 0}."""
    bytes_read, rate = _ops().liquid_read_stats()
    return {"bytes_read": int(bytes_read), "bytes_per_second": float(rate)}


def crc32c(data) -> tf.Tensor:
    """CRC32C (Castagnoli) of a scalar string, as an int64 tensor."""
    return _ops().liquid_crc32c(data)


def jpeg_to_progressive(contents, source="", keep_markers: bool = False):
    """Makes a JPEG progressive without loss and splits it into scans.

    A baseline JPEG's DCT coefficients are copied into a progressive JPEG (jpegtran -progressive -optimize
    semantics: full fidelity decodes to exactly the same pixels); a progressive JPEG is kept as it is.
    `keep_markers` keeps APPn/COM segments (EXIF, ICC) instead of dropping them. `source` names the input in
    error messages.

    Returns (progressive bytes, int64 vector of where each scan's entropy-coded data ends).
    """
    return _ops().liquid_jpeg_to_progressive(contents, source, keep_markers=keep_markers)


def jpeg_scan_ends(contents):
    """Where each scan's entropy-coded data ends in a JPEG (docs/formats/pcr.md, "Scan splitting")."""
    return _ops().liquid_jpeg_scan_ends(contents)


def decode_l3(contents, name=None):
    """Decodes an L3 image (docs/formats/l3.md) to uint8 [H, W, C] on the CPU; usable in `Dataset.map`."""
    return _ops().liquid_decode_l3(contents, name=name)


def encode_l3(image, profile: str = "default", name=None):
    """Encodes uint8 [H, W, C] (C = 1, 3, 4) as L3; profile "default" or "paper" (docs/formats/l3.md)."""
    image = tf.convert_to_tensor(image, tf.uint8)
    if image.shape.rank == 2:
        image = image[..., tf.newaxis]
    return _ops().liquid_encode_l3(image, profile=profile, name=name)
