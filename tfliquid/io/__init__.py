"""Throttled reads: every tfliquid reader draws from one process-wide token bucket, so a whole input pipeline can
be run as if its storage delivered `bytes_per_second` (the PCR paper's experiments throttle storage the same way).

    >>> tfliquid.io.set_read_bandwidth(50e6)     # 50 MB/s for every tfliquid reader in this process
    >>> contents = tfliquid.io.read_file(path)   # like tf.io.read_file, throttled
    >>> tfliquid.io.set_read_bandwidth(None)     # unlimited again

`set_read_bandwidth` is the one way to set the limit: no dataset changes it behind the caller's back.
"""

from __future__ import annotations

import math
import numbers

import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops

__all__ = ["read_file", "set_read_bandwidth", "draw_read_bandwidth", "read_stats"]


def read_file(filename, offset=None, length=None, name=None):
    """Reads a file into a scalar string tensor, like `tf.io.read_file`, through the read throttle.

    With `offset` (and `length`, default: to the end), reads that byte range only.
    """
    if offset is None and length is None:
        return load_ops().liquid_read_file(filename, name=name)
    offset = tf.constant(0, tf.int64) if offset is None else tf.cast(offset, tf.int64)
    length = tf.constant(-1, tf.int64) if length is None else tf.cast(length, tf.int64)
    return load_ops().liquid_read_file_range(filename, offset, length, name=name)


def set_read_bandwidth(bytes_per_second: float | None) -> None:
    """Limits every tfliquid reader in this process to `bytes_per_second` together (a finite number >= 1); None
    or 0 removes the limit."""
    load_ops().liquid_set_read_bandwidth(tf.constant(_checked_rate(bytes_per_second), tf.float64))


def _checked_rate(bytes_per_second) -> float:
    if bytes_per_second is None:
        return 0.0
    if isinstance(bytes_per_second, bool) or not isinstance(bytes_per_second, numbers.Real):
        raise ArgumentError(f"bytes_per_second must be a number or None, got {bytes_per_second!r}")
    rate = float(bytes_per_second)
    if rate != 0 and not (math.isfinite(rate) and rate >= 1):
        raise ArgumentError(f"bytes_per_second must be at least 1 (or 0 or None: no limit), got {bytes_per_second}")
    return rate


def draw_read_bandwidth(num_bytes, payload):
    """Returns `payload` once the read throttle has granted `num_bytes`: puts a reader outside tfliquid (e.g.
    `tf.data.TFRecordDataset`) on the same bandwidth budget, for fair comparisons.

    >>> records = tf.data.TFRecordDataset(files).map(
    ...     lambda r: tfliquid.io.draw_read_bandwidth(tf.strings.length(r), r))
    """
    draw = load_ops().liquid_draw_read_bandwidth(tf.cast(num_bytes, tf.int64))
    with tf.control_dependencies([draw]):
        return tf.identity(payload)


def read_stats() -> dict:
    """{"bytes_read": bytes every tfliquid reader has read in this process, "bytes_per_second": limit or 0}."""
    bytes_read, rate = load_ops().liquid_read_stats()
    return {"bytes_read": int(bytes_read), "bytes_per_second": float(rate)}
