"""Throttled reads: every tfliquid reader draws from one process-wide token bucket, so a whole input pipeline can
be run as if its storage delivered `bytes_per_second` (the PCR paper's experiments throttle storage the same way).

    >>> tfliquid.io.set_read_bandwidth(50e6)     # 50 MB/s for every tfliquid reader in this process
    >>> contents = tfliquid.io.read_file(path)   # like tf.io.read_file, throttled
    >>> tfliquid.io.set_read_bandwidth(None)     # unlimited again

`set_read_bandwidth` is the one way to set the limit: no dataset changes it behind the caller's back.

Read queues split that bandwidth among the workers of one process (Lobster's per-worker queues): a read made with
`queue=` waits until its queue admits it, and a queue admits at most its threads' reads at a time, so workers
sharing the storage read at rates in proportion to their queues' threads
(`tfliquid.cache.load_balance.ReadBalancer` sets them by each worker's misses ahead):

    >>> contents = tfliquid.io.read_file(path, queue="worker0")
    >>> tfliquid.io.set_read_threads("worker0", 6)
    >>> tfliquid.io.read_queue_lengths(["worker0", "worker1"])   # reads waiting or in flight, per queue
"""

from __future__ import annotations

import math
import numbers

import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops

__all__ = [
    "read_file",
    "set_read_bandwidth",
    "draw_read_bandwidth",
    "read_stats",
    "set_read_threads",
    "read_queue_lengths",
    "read_queue_counts",
]


def read_file(filename, offset=None, length=None, name=None, queue=None):
    """Reads a file into a scalar string tensor, like `tf.io.read_file`, through the read throttle.

    With `offset` (and `length`, default: to the end), reads that byte range only. With `queue` (a string: the
    worker's read queue), the whole file once that queue admits the read (`set_read_threads`).
    """
    if queue is not None:
        if offset is not None or length is not None:
            raise ArgumentError("a read in a queue reads the whole file: pass queue= without offset and length")
        return load_ops().liquid_queued_read_file(filename, queue, name=name)
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


def set_read_threads(queue: str, threads: int) -> None:
    """Lets the read queue `queue` of this process admit `threads` reads at a time (>= 1); the others wait in it."""
    load_ops().liquid_set_read_queue_threads(
        tf.constant(queue), tf.constant(check_int("threads", threads, 1), tf.int64)
    )


def read_queue_lengths(queues) -> list[int]:
    """Per queue, the reads waiting in it or admitted and not done: each worker's measured load."""
    return [admitted + waiting for admitted, waiting in read_queue_counts(queues)]


def read_queue_counts(queues) -> list[tuple[int, int]]:
    """Per queue, (the reads it admitted that are not done, the reads waiting in it)."""
    admitted, waiting = load_ops().liquid_read_queue_counts(tf.constant(list(queues), tf.string))
    return list(zip(admitted.numpy().tolist(), waiting.numpy().tolist(), strict=True))


def read_stats() -> dict:
    """{"bytes_read": bytes every tfliquid reader has read in this process, "bytes_per_second": limit or 0}."""
    bytes_read, rate = load_ops().liquid_read_stats()
    return {"bytes_read": int(bytes_read), "bytes_per_second": float(rate)}
