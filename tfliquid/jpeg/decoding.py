"""How a dataset decodes its images: at full size or a size, through a crop, as uint8 or normalised floats.

PCRDataset decodes JPEGs this way; LiquidDataset decodes its JPEG items the same way and crops its other formats'
pixels (PNG, raw, L3) through the same window and output, so that every format of a dataset comes out alike.
"""

from __future__ import annotations

import tensorflow as tf

from tfliquid._common.errors import ArgumentError
from tfliquid.jpeg.crop import (
    RandomResizedCrop,
    checked_crop,
    checked_output,
    crop_pixels,
    decode_batch,
    decode_crop,
)
from tfliquid.jpeg.sized import check_size, decode_jpeg, decode_jpeg_at_size


class ImageDecoding:
    """A dataset's `decode_size`, `crop`, `dtype`, `mean`, `std` and `channels_first`, checked (ArgumentError), and
    the decode they say, of a JPEG's bytes (`jpeg`) or of decoded pixels (`pixels`)."""

    def __init__(self, decode_size, crop, dtype, mean, std, channels_first: bool):
        self.size = check_size(decode_size) if decode_size is not None else None
        self.crop = checked_crop(crop)
        dtype, mean, std = checked_output(dtype, mean, std)
        self._options = {"dtype": dtype, "mean": mean or None, "std": std or None, "channels_first": channels_first}
        self._plain = self.crop is None and dtype == tf.uint8 and not channels_first

    @property
    def plain(self) -> bool:
        """The whole image as uint8 [H, W, C] (at full size or `size`): no crop, no normalisation, no CHW."""
        return self._plain

    @property
    def identity(self) -> bool:
        """Decoded pixels come out as they are."""
        return self._plain and self.size is None

    @property
    def random(self) -> bool:
        """Every image needs a crop seed of its own (a random resized crop)."""
        return isinstance(self.crop, RandomResizedCrop)

    def check_channels(self, channels: int, what: str) -> None:
        """ArgumentError unless `channels` is 3 where the decode makes RGB (any size, crop or normalisation)."""
        if channels != 3 and not self.identity:
            raise ArgumentError(
                f"decode_size, crop, dtype, mean, std and channels_first make RGB images: {what} has {channels} "
                "channel(s), and only an RGB dataset (channels=3) is decoded through them"
            )

    def jpeg(self, contents, context=None, crop_seed=None) -> tf.Tensor:
        """A JPEG's bytes decoded: at full size, the pixels of `tf.io.decode_jpeg`; at `size`,
        `tfliquid.jpeg.sized.decode_jpeg_at_size`'s; through the crop, normalisation and layout asked,
        `tfliquid.jpeg.crop.decode_crop`'s, a random crop drawn from `crop_seed` ([2] int; None: [0, 0]). A decode
        error starts with `context` when given."""
        if self._plain:
            return (
                decode_jpeg(contents, context)
                if self.size is None
                else decode_jpeg_at_size(contents, self.size, context)
            )
        if self.crop is None:  # the whole image, normalised
            shape = tf.image.extract_jpeg_shape(contents, tf.int64)
            return decode_crop(contents, _whole(shape), self.size, context=context, **self._options)
        return self.crop.decode(contents, self.size, _seed(crop_seed), context=context, **self._options)

    def jpeg_batch(self, contents, contexts=None, crop_seeds=None) -> tf.Tensor:
        """A batch of JPEGs (string [B]) decoded as `jpeg` decodes each, at `size`, in one op that writes every
        image into its place in the batch (`tfliquid.jpeg.crop.decode_batch`, which needs `size`); crop_seeds: int
        [B, 2]."""
        return decode_batch(contents, self.size, self.crop, crop_seeds, contexts, **self._options)

    def pixels(self, image, context=None, crop_seed=None) -> tf.Tensor:
        """Decoded RGB pixels (uint8 [H, W, 3]) as `jpeg` makes a JPEG's of them: the same window, resize, flip and
        output (`tfliquid.jpeg.crop.crop_pixels`)."""
        if self.identity:
            return image
        if self.crop is None:
            return crop_pixels(image, _whole(tf.shape(image, tf.int64)), self.size, context=context, **self._options)
        return self.crop.crop(image, self.size, _seed(crop_seed), context=context, **self._options)


def _whole(shape) -> tf.Tensor:
    return tf.stack([tf.constant(0, tf.int64), tf.constant(0, tf.int64), shape[0], shape[1]])


def _seed(crop_seed) -> tf.Tensor:
    return tf.zeros([2], tf.int64) if crop_seed is None else crop_seed
