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


def image_folder_epoch(folder: str, images: int):
    """A function that decodes `images` images (JPEG, PNG, ...) of an image folder once (file reader + CPU
    decoder, one thread per core, as DALI's examples do) and returns its PassTiming (whole batches)."""
    from nvidia.dali import fn, pipeline_def

    # Synchronous: a pipelined DALI runs batches ahead, and would decode the next epoch's first batches while the
    # other peers are being timed. Each batch still decodes on every thread.
    @pipeline_def(batch_size=BATCH, num_threads=os.cpu_count(), device_id=None, exec_async=False, exec_pipelined=False)
    def pipeline():
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, seed=0, name="reader")
        return fn.decoders.image(jpegs, device="cpu"), labels

    dali = pipeline()
    dali.build()
    batches = math.ceil(images / BATCH)

    def epoch() -> PassTiming:
        start = time.perf_counter()
        for _ in range(batches):
            dali.run()
        return PassTiming(batches * BATCH, time.perf_counter() - start, 0.0, [])

    return epoch
