"""Liquid items in graphs: pixels -> the item of a format, and any item -> pixels (docs/formats/liquid.md, Items).

Graph ops only, so that conversion and reading run in parallel `Dataset.map`s and on tf.data service workers.
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._lib import load_ops
from tfliquid.l3.ops import decode_l3, encode_l3
from tfliquid.liquid import format as liquid_format

FORMAT_INDEX = {name: i for i, name in enumerate(liquid_format.FORMATS)}
assert FORMAT_INDEX["jpeg"] == 2  # format_index tells JPEG by 2 bytes, the others by 4


def to_channels(image: tf.Tensor, channels: int) -> tuple[tf.Tensor, tf.Tensor]:
    """uint8 [H, W, c] -> ([H, W, channels], lossy): grey becomes RGB exactly; dropping alpha or colour is lossy."""
    have = tf.shape(image)[-1]
    if channels == 3:
        converted = tf.case(
            [
                (tf.equal(have, 1), lambda: tf.image.grayscale_to_rgb(image)),
                (tf.equal(have, 2), lambda: tf.image.grayscale_to_rgb(image[..., :1])),
            ],
            default=lambda: image[..., :3],
        )
        lossy = tf.logical_or(tf.equal(have, 2), tf.equal(have, 4))
    else:
        converted = tf.cond(
            have >= 3,
            lambda: tf.cast(tf.round(tf.image.rgb_to_grayscale(tf.cast(image[..., :3], tf.float32))), tf.uint8),
            lambda: image[..., :1],
        )
        lossy = tf.not_equal(have, 1)
    return tf.ensure_shape(converted, [None, None, channels]), lossy


def raw_item(pixels: tf.Tensor) -> tf.Tensor:
    """The raw item of uint8 [H, W, C] pixels: the 16-byte header, then the pixels."""
    shape = tf.cast(tf.shape(pixels), tf.uint32)
    header = tf.strings.join([liquid_format.RAW_MAGIC, _bytes_of(tf.bitcast(shape, tf.uint8))])
    return tf.strings.join([header, _bytes_of(tf.reshape(pixels, [-1]))])


def _bytes_of(values: tf.Tensor) -> tf.Tensor:
    """A uint8 vector as a string of those bytes (little-endian words come from tf.bitcast on x86 and ARM).

    TensorFlow has no op for this; a serialized TensorProto of a uint8 tensor ends with its tensor_content (field
    4, the last one written), so its last n bytes are the n values."""
    serialized = tf.io.serialize_tensor(values)
    n = tf.size(values)
    return tf.strings.substr(serialized, tf.strings.length(serialized) - n, n)


def format_index(item: tf.Tensor) -> tf.Tensor:
    """The index in liquid_format.FORMATS of an item's format, from its first bytes; an item of no known format is
    an InvalidArgument error."""
    head = tf.strings.substr(item, 0, 4)
    index = tf.case(
        [
            (tf.equal(head, liquid_format.MAGICS[name]), lambda i=FORMAT_INDEX[name]: tf.constant(i))
            for name in ("raw", "png", "l3")
        ]
        + [(tf.equal(tf.strings.substr(item, 0, 2), liquid_format.MAGICS["jpeg"]), lambda: tf.constant(2))],
        default=lambda: tf.constant(-1),
    )
    known = tf.debugging.assert_non_negative(index, message="an item of no known format (raw, png, jpeg, l3)")
    with tf.control_dependencies([known]):
        return tf.identity(index)


def decode_as(name: str, item: tf.Tensor, channels: int) -> tf.Tensor:
    """An item of format `name` -> uint8 [H, W, channels] pixels (an item of another format is the decoder's
    InvalidArgument error)."""
    if name == "raw":
        pixels = load_ops().liquid_decode_raw_item(item, channels=channels)  # one copy, header checked
    elif name == "png":
        pixels = tf.io.decode_png(item, channels=channels)
    elif name == "jpeg":
        pixels = tf.io.decode_jpeg(item, channels=channels)
    else:
        pixels = decode_l3(item)
    return tf.ensure_shape(pixels, [None, None, channels])


def decode_item(item: tf.Tensor, index: tf.Tensor, channels: int) -> tf.Tensor:
    """An item of format `index` (see format_index) -> uint8 [H, W, channels] pixels."""
    return tf.switch_case(index, [lambda name=name: decode_as(name, item, channels) for name in liquid_format.FORMATS])


def encode_item(
    format_index: tf.Tensor,
    pixels: tf.Tensor,
    source: tf.Tensor,
    source_is_jpeg: tf.Tensor,
    png_compression: int,
    l3_profile: str,
    jpeg_quality: int,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The item of `pixels` in format `format_index` -> (item, lossy). A `jpeg` item is the source as it is when it
    is a JPEG, else the pixels encoded at `jpeg_quality` (lossy)."""
    branches = [
        lambda: (raw_item(pixels), tf.constant(False)),
        lambda: (tf.io.encode_png(pixels, compression=png_compression), tf.constant(False)),
        lambda: tf.cond(
            source_is_jpeg,
            lambda: (source, tf.constant(False)),
            lambda: (tf.io.encode_jpeg(pixels, quality=jpeg_quality), tf.constant(True)),
        ),
        lambda: (encode_l3(pixels, profile=l3_profile), tf.constant(False)),
    ]
    return tf.switch_case(format_index, branches)
