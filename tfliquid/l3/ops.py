"""The L3 ops: decode and encode in graphs and `Dataset.map`, and decode a batch on the CPU or a GPU (the format:
docs/formats/l3.md)."""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops

__all__ = ["decode_l3", "decode_l3_batch", "encode_l3"]


def decode_l3(contents, name=None):
    """Decodes an L3 image (docs/formats/l3.md) to uint8 [H, W, C] on the CPU; usable in `Dataset.map`."""
    return load_ops().liquid_decode_l3(contents, name=name)


def decode_l3_batch(encoded, name=None):
    """Decodes a batch of L3 images of one shape: string [B] -> uint8 [B, H, W, C].

    Runs where TensorFlow places it: on a GPU (the model's device, or `tf.device("/GPU:0")`) its kernel parses
    the headers on the host and decodes on the device, one CUDA block per patch; on the CPU the
    images decode in parallel on the op's thread pool. Both raise InvalidArgument naming the first bad image:
    corrupt data ("L3 image 3: offset 1234: ..."), or a shape that differs from image 0's. `gpu_available()`
    says whether the GPU kernel can run here.
    """
    return load_ops().liquid_decode_l3_batch(encoded, name=name)


def encode_l3(image, profile: str = "default", name=None):
    """Encodes uint8 [H, W, C] (C = 1, 3, 4) as L3; profile "default" or "paper" (docs/formats/l3.md).

    Pixels of another dtype are refused, not converted: casting would wrap (300.0 -> 44, -1 -> 255) and the file
    would hold other pixels than the caller's."""
    dtype = getattr(image, "dtype", None)
    if dtype is not None and tf.as_dtype(dtype) != tf.uint8:
        raise ArgumentError(
            f"encode_l3 stores uint8 pixels, got {tf.as_dtype(dtype).name}: convert them first, choosing how "
            "(e.g. np.clip(x, 0, 255).astype(np.uint8))"
        )
    image = tf.convert_to_tensor(image, tf.uint8)
    if image.shape.rank == 2:
        image = image[..., tf.newaxis]
    return load_ops().liquid_encode_l3(image, profile=profile, name=name)
