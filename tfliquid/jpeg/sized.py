"""Decoding a JPEG at the size a model needs: libjpeg's DCT scaling, then a resize of what is left.

libjpeg decodes at M/8 of the full size by inverse-transforming only the low M x M frequencies of each 8x8 block
(at 1/8, the DC coefficient alone); libjpeg-turbo has SIMD code for M = 1, 2, 4 and 8, the scales used here. The
inverse transform, the upsampling of the chroma and the colour conversion then run on the smaller image, so the
CPU cost falls with the scale. `decode_jpeg_at_size` decodes at the smallest scale whose image is still at least
the target size in both dimensions, and no finer than the scans present code (a PCR scan group of DC scans holds
nothing finer than 1/8), then resizes to the target: nearly what decode-then-resize gives (docs/formats/pcr.md
states the difference) for a fraction of the work.

`decode_jpeg` is the same op at the full size: the pixels of `tf.io.decode_jpeg(contents, channels=3)`, faster on
the progressive JPEGs of spectral selection that PCR's `fast` scan script writes (their scans are entropy-decoded
by tfliquid's own loop, the rest by libjpeg; docs/formats/pcr.md, "Decoding full fidelity").
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.checks import check_int
from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops


def check_size(size) -> tuple[int, int]:
    """(height, width), each an int in 1..65535; ArgumentError otherwise."""
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise ArgumentError(f"decode_size must be (height, width), got {size!r}")
    return tuple(check_int(f"decode_size's {name}", n, 1, 65535) for name, n in zip(("height", "width"), size))


def decode_jpeg(contents, context=None) -> tf.Tensor:
    """uint8 [H, W, 3] of a JPEG's bytes at full size, the pixels of `tf.io.decode_jpeg(contents, channels=3)`
    (grey made RGB, CMYK converted as TensorFlow converts it, a progressive prefix smoothed where it lacks
    coefficients). Read strictly: data lost to damage is an error with its byte offset in `contents`, after
    `context` (a string tensor saying where the JPEG came from) when given."""
    full_size = tf.constant(0, tf.int64)
    return tf.ensure_shape(_decode(contents, full_size, full_size, False, context), [None, None, 3])


def decode_jpeg_scaled(contents, size: tuple[int, int], resize: bool = False, context=None) -> tf.Tensor:
    """uint8 [h, w, 3]: the JPEG decoded at the DCT scale chosen as above; with `resize`, resized to `size`.
    Errors as decode_jpeg's."""
    height, width = check_size(size)
    return _decode(contents, tf.constant(height, tf.int64), tf.constant(width, tf.int64), resize, context)


def _decode(contents, height, width, resize: bool, context):
    if context is None:
        return load_ops().liquid_decode_jpeg_scaled(contents, height, width, resize=resize)
    return load_ops().liquid_decode_jpeg_scaled_in_context(contents, height, width, context, resize=resize)


def decode_jpeg_at_size(contents, size: tuple[int, int], context=None) -> tf.Tensor:
    """uint8 [height, width, 3] of a JPEG's bytes, exactly `size`: decoded at the DCT scale chosen as above, then
    resized bilinearly to `size` in the same op (pixel centres as `tf.image.resize` places them, no antialiasing;
    the aspect ratio is not kept, as `tf.image.resize` does not keep it). An image decoded at exactly `size` is not
    resized: at full scale, the pixels of `tf.io.decode_jpeg`. Errors as decode_jpeg's."""
    size = check_size(size)
    return tf.ensure_shape(decode_jpeg_scaled(contents, size, resize=True, context=context), [*size, 3])
