"""decode_batch_gpu: a batch of L3 images decoded by CUDA kernels into a TensorFlow GPU tensor.

The host parses and validates the headers and builds the launch plan (plan.py); the pixels exist only on the GPU:
the payloads go up, l3_decode_patches writes the [B, H, W, C] batch, l3_add_green undoes the colour transform, and
TensorFlow takes the CuPy array over through DLPack without a copy. CuPy is an optional extra, imported here.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np
import tensorflow as tf

from tfliquid.l3.plan import BatchPlan, plan_batch

_INSTALL_HINT = "pip install tfliquid[gpu]"
_NO_ERROR = np.iinfo(np.uint64).max
_GREEN_THREADS = 256


def _cupy():
    """CuPy with a usable CUDA device, or an error saying what is missing."""
    try:
        import cupy
    except ImportError as e:
        raise ImportError(f"decode_batch_gpu needs CuPy ({_INSTALL_HINT}): {e}") from None
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as e:
        raise RuntimeError(f"decode_batch_gpu needs a CUDA GPU; the CUDA runtime reports: {e}") from None
    if devices == 0:
        raise RuntimeError("decode_batch_gpu needs a CUDA GPU; none is visible")
    return cupy


@functools.cache
def _kernels(device_id: int):
    """The two kernels of kernels/l3_decode.cu, compiled once per device by NVRTC."""
    import cupy

    source = resources.files("tfliquid.l3").joinpath("kernels", "l3_decode.cu").read_text()
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=source)
        return module.get_function("l3_decode_patches"), module.get_function("l3_add_green")


def _byte_strings(encoded) -> list[bytes]:
    if isinstance(encoded, (tf.Tensor, tf.Variable)):
        if encoded.shape.rank != 1 or encoded.dtype != tf.string:
            raise ValueError(f"decode_batch_gpu expects a 1-D string tensor, got {encoded.dtype.name} {encoded.shape}")
        return list(encoded.numpy())
    if isinstance(encoded, (bytes, str)):
        raise TypeError("decode_batch_gpu expects a list of L3 byte strings, not a single one")
    return [bytes(data) for data in encoded]


def _launch(cupy, plan: BatchPlan):
    """Runs both kernels; returns the decoded batch (a CuPy array) and the per-image error offsets."""
    decode_patches, add_green = _kernels(cupy.cuda.Device().id)
    batch, height, width, channels = plan.shape
    out = cupy.empty(plan.shape, cupy.uint8)
    errors = cupy.full(batch, _NO_ERROR, cupy.uint64)
    decode_patches(
        (len(plan.tasks),),
        (plan.threads,),
        (
            cupy.asarray(plan.payload),
            cupy.asarray(plan.tasks),
            out,
            np.int32(height),
            np.int32(width),
            np.int32(channels),
            np.int32(plan.max_width),
            np.int32(plan.max_segments),
            errors,
        ),
        shared_mem=plan.shared_bytes,
    )
    if plan.subtract_green.any():
        pixels = batch * height * width
        blocks = min(-(-pixels // _GREEN_THREADS), 65535)  # the loop strides over the rest
        add_green(
            (blocks,),
            (_GREEN_THREADS,),
            (out, np.int64(height * width), np.int32(batch), np.int32(channels), cupy.asarray(plan.subtract_green)),
        )
    return out, errors


def decode_batch_gpu(encoded) -> tf.Tensor:
    """Decodes L3 images of one height, width and channel count into a uint8 [B, H, W, C] tensor on the GPU.

    `encoded`: a list of byte strings or a 1-D tf.string tensor (call this eagerly, e.g. on each batch a tf.data
    pipeline yields). Raises ValueError naming the image index (and the byte offset in that image's data) on
    corrupt input or mismatched shapes, then ImportError without CuPy and RuntimeError without a CUDA device.
    """
    plan = plan_batch(_byte_strings(encoded))
    cupy = _cupy()
    out, errors = _launch(cupy, plan)
    # Copying the flags back waits for both kernels on this stream, so `out` is complete before TensorFlow, on
    # its own streams, reads it.
    failed = errors.get()
    corrupt = np.flatnonzero(failed != _NO_ERROR)
    if len(corrupt):
        image = corrupt[0]
        raise ValueError(f"image {image}: corrupt L3 patch data at byte offset {failed[image]}")
    return tf.experimental.dlpack.from_dlpack(out.__dlpack__())
