"""NVIDIA DALI's CPU pipeline as a peer: the strongest JPEG-loading pipeline that installs here.

DALI is optional (`pip install nvidia-dali-cuda120`, a 425 MB wheel; it runs CPU-only pipelines with
`device_id=None`). Benchmarks add it as a peer when it imports and say so when it does not.
"""

from __future__ import annotations

import math
import os
import time

from tfliquid._common.timing import PassTiming

BATCH = 256


def available() -> bool:
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return False
    return True


def image_folder_epoch(folder: str, images: int, threads: int | None = None, size: int | None = None):
    """A function that decodes `images` images (JPEG, PNG, ...) of an image folder once (file reader + CPU
    decoder on `threads` threads, default one per core, as DALI's examples do; resized to size x size if given)
    and returns its PassTiming (whole batches)."""
    from nvidia.dali import fn, pipeline_def

    # Synchronous: a pipelined DALI runs batches ahead, and would decode the next epoch's first batches while the
    # other peers are being timed. Each batch still decodes on every thread.
    @pipeline_def(
        batch_size=BATCH,
        num_threads=threads or os.cpu_count(),
        device_id=None,
        exec_async=False,
        exec_pipelined=False,
    )
    def pipeline():
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, seed=0, name="reader")
        decoded = fn.decoders.image(jpegs, device="cpu")
        return (decoded if size is None else fn.resize(decoded, resize_x=size, resize_y=size)), labels

    return pipeline_epoch(pipeline(), images)


def pipeline_epoch(dali, images: int):
    """A function that runs a built-here DALI pipeline (of BATCH images a batch) over `images` images once and
    returns its PassTiming (whole batches)."""
    dali.build()
    batches = math.ceil(images / BATCH)

    def epoch() -> PassTiming:
        start = time.perf_counter()
        for _ in range(batches):
            dali.run()
        return PassTiming(batches * BATCH, time.perf_counter() - start, 0.0, [])

    return epoch


def encoded_batches_epoch(encoded: list[bytes], batch_size: int, threads: int):
    """A function that decodes in-memory encoded images (PNG, JPEG, ...) once, in batches of `batch_size` fed by
    an external source, on `threads` threads, and returns its PassTiming (whole batches)."""
    import numpy as np
    from nvidia.dali import fn, pipeline_def

    arrays = [np.frombuffer(data, np.uint8) for data in encoded]
    batches = [arrays[i : i + batch_size] for i in range(0, len(arrays) - batch_size + 1, batch_size)]
    position = {"next": 0}

    def next_batch():
        batch = batches[position["next"] % len(batches)]
        position["next"] += 1
        return batch

    @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=None, exec_async=False, exec_pipelined=False)
    def pipeline():
        return fn.decoders.image(fn.external_source(source=next_batch, batch=True), device="cpu")

    dali = pipeline()
    dali.build()

    def epoch() -> PassTiming:
        position["next"] = 0
        start = time.perf_counter()
        for _ in batches:
            dali.run()
        return PassTiming(len(batches) * batch_size, time.perf_counter() - start, 0.0, [])

    return epoch
