"""What an image's header claims, read before decoding it: conversions refuse an image whose header claims more
pixels than they may decode, before the decoder allocates them."""

from __future__ import annotations

import functools

import tensorflow as tf

# Images that are decoded to be re-encoded (about 4 bytes a pixel) and claim more pixels than this are rejected
# before that, as Pillow's decompression-bomb check (which the L3 conversion meets) does at the same size.
MAX_PIXELS = 178_956_970


def _unsigned(data: tf.Tensor, offset, size: int, big_endian: bool) -> tf.Tensor:
    """The unsigned integer (int64) in the `size` bytes of `data` at `offset`."""
    raw = tf.cast(tf.io.decode_raw(tf.strings.substr(data, offset, size), tf.uint8), tf.int64)
    weights = [256 ** (size - 1 - i) if big_endian else 256**i for i in range(size)]
    return tf.reduce_sum(raw * tf.constant(weights, tf.int64))


def claimed_pixels(contents: tf.Tensor) -> tf.Tensor:
    """Width x height from the header of a PNG, GIF or BMP (what tf.io.decode_image reads besides JPEG), read
    before decoding; 0 for anything else (decode_image refuses it)."""
    data = contents + b"\0" * 26  # every field below lies in the first 26 bytes: short data reads zeros
    number = functools.partial(_unsigned, data)

    def bmp_side(offset: int) -> tf.Tensor:  # an int32: BMP heights are negative for top-down images
        side = number(offset, 4, big_endian=False)
        return tf.where(side >= 2**31, 2**32 - side, side)

    magic = tf.strings.substr(data, 0, 8)
    return tf.case(
        [
            (tf.equal(magic, b"\x89PNG\r\n\x1a\n"), lambda: number(16, 4, True) * number(20, 4, True)),
            (tf.equal(tf.strings.substr(magic, 0, 3), b"GIF"), lambda: number(6, 2, False) * number(8, 2, False)),
            (tf.equal(tf.strings.substr(magic, 0, 2), b"BM"), lambda: bmp_side(18) * bmp_side(22)),
        ],
        default=lambda: tf.constant(0, tf.int64),
    )


# zlib inflates at most 1032 bytes from one byte, and a PNG's smallest pixel is one bit: a PNG whose header
# claims more pixels than this per byte of file is not a PNG its decoder will read.
PNG_MAX_PIXELS_PER_BYTE = 1032 * 8


def _png_holdable_pixels(contents: tf.Tensor) -> tf.Tensor:
    """The most pixels `contents` can hold if it is a PNG (PNG_MAX_PIXELS_PER_BYTE per byte); no bound for
    anything else (arithmetic-coded JPEGs pack any number of pixels in a few bytes)."""
    is_png = tf.equal(tf.strings.substr(contents, 0, 8), b"\x89PNG\r\n\x1a\n")
    holdable = tf.cast(tf.strings.length(contents), tf.int64) * PNG_MAX_PIXELS_PER_BYTE
    return tf.where(is_png, holdable, tf.int64.max)


def bits_per_sample(contents: tf.Tensor) -> tf.Tensor:
    """The bit depth of a PNG (1, 2, 4, 8 or 16, from its header); 8 for anything else tf.io.decode_image reads
    (GIF, BMP, JPEG are 8-bit). decode_image keeps the high byte of 16-bit samples."""
    is_png = tf.equal(tf.strings.substr(contents, 0, 8), b"\x89PNG\r\n\x1a\n")
    depth = tf.io.decode_raw(tf.strings.substr(contents + b"\0" * 25, 24, 1), tf.uint8)[0]
    return tf.where(is_png, tf.cast(depth, tf.int32), 8)


def png_has_transparency_chunk(contents: tf.Tensor) -> tf.Tensor:
    """True when `contents` is a PNG with a tRNS chunk: a palette's alphas, or one grey or RGB colour marked
    transparent. tf.io.decode_image turns the first into an alpha channel and drops the second, so that only the
    chunk tells that the image has transparency. Walks the chunks before the image data, where tRNS must be."""
    is_png = tf.equal(tf.strings.substr(contents, 0, 8), b"\x89PNG\r\n\x1a\n")
    size = tf.cast(tf.strings.length(contents), tf.int64)

    def next_chunk(offset, found, done):
        kind = tf.strings.substr(contents, offset + 4, 4)
        found = tf.equal(kind, b"tRNS")
        done = found | tf.equal(kind, b"IDAT") | tf.equal(kind, b"IEND")
        return offset + 12 + _unsigned(contents, offset, 4, big_endian=True), found, done

    _, found, _ = tf.while_loop(
        lambda offset, found, done: tf.logical_and(tf.logical_not(done), offset + 8 <= size),
        next_chunk,
        (tf.constant(8, tf.int64), tf.constant(False), tf.logical_not(is_png)),
    )
    return found


def decode_bounded(contents: tf.Tensor) -> tf.Tensor:
    """tf.io.decode_image of a PNG, GIF or BMP, refused (InvalidArgument) before decoding when its header claims
    more than MAX_PIXELS pixels, or a PNG's more pixels than its bytes can hold (it would fail after allocating
    them)."""
    claimed = claimed_pixels(contents)
    bounded = tf.debugging.assert_less_equal(
        claimed, tf.constant(MAX_PIXELS, tf.int64), message=f"the header claims more than {MAX_PIXELS} pixels"
    )
    with tf.control_dependencies([bounded]):  # checked in turn: one reason, the same every time
        holdable = tf.debugging.assert_less_equal(
            claimed, _png_holdable_pixels(contents), message="the PNG header claims more pixels than the file can hold"
        )
    with tf.control_dependencies([holdable]):  # before decode_image allocates them
        return tf.io.decode_image(contents, expand_animations=False)
