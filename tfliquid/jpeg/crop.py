"""Decoding only the crop training uses: a window of a JPEG, at the DCT scale its output size needs.

An ImageNet-style input reads each image through a random resized crop (a window of 8-100% of the area, aspect
3/4-4/3, resized to 224 x 224), a random flip and a normalisation. Decoding the whole image and cropping after
throws away the work spent outside the window, and the DCT-scale saving (a window twice the output size decodes
at 1/2). `decode_crop` decodes the window alone, at the smallest of libjpeg's scales 1/8, 1/4, 1/2 and 1 whose
window still covers the output, inverse-transforming only the MCU rows and columns around it; then it resizes,
flips and normalises in the same op (docs/formats/pcr.md, "Decoding a crop").

    image = tfliquid.jpeg.crop.decode_random_resized_crop(contents, (224, 224), seed, dtype=tf.float32,
                                                         mean=IMAGENET_MEAN, std=IMAGENET_STD)   # training
    image = tfliquid.jpeg.crop.decode_center_crop(contents, (224, 224))                      # validation

or, with a window of your own, `decode_crop(contents, window, size, flip=...)`; `crop_pixels` is the same crop of
pixels already decoded (images of other formats, cropped as JPEGs are); `random_resized_crop_window` and
`center_crop_window` give the windows those two decode. The windows are drawn inside the op from SplitMix64 draws
of `seed` (a [2] int tensor; docs/formats/pcr.md, "Decoding a crop"), so a seed gives the same window and flip
every time: an epoch replays, a checkpoint resumes the same crops.
"""

from __future__ import annotations

import dataclasses
import math

import tensorflow as tf

from tfliquid._common.checks import check_int, check_number
from tfliquid._common.errors import ArgumentError
from tfliquid._lib import load_ops

IMAGENET_MEAN = (123.675, 116.28, 103.53)  # torchvision's, in pixel values 0..255
IMAGENET_STD = (58.395, 57.12, 57.375)
_OPTIONS = {"dtype", "mean", "std", "channels_first", "context"}  # decode_crop's options of the output


def random_resized_crop_window(shape, seed, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)) -> tf.Tensor:
    """int64 [4] (y, x, height, width): torchvision's RandomResizedCrop window of an image of `shape` ([height,
    width] or [height, width, channels]), drawn from `seed` ([2] int), the window `decode_random_resized_crop`
    decodes with that seed.

    Up to 10 draws of an area (a share in `scale` of the image's, uniform) and an aspect ratio (width over height,
    log-uniform in `ratio`); the first that fits in the image is placed uniformly. If none fits, the largest
    window of the image within `ratio`, centred (docs/formats/pcr.md, "Decoding a crop")."""
    scale, ratio = _check_range("scale", scale, 0.0, 1.0), _check_range("ratio", ratio, 0.0, math.inf)
    window, _ = load_ops().liquid_crop_window(
        _image_size(shape), tf.cast(seed, tf.int64), crop="random", scale=list(scale), ratio=list(ratio)
    )
    return window


def center_crop_window(shape, fraction: float = 0.875) -> tf.Tensor:
    """int64 [4] (y, x, height, width): the central square of side `fraction` of the image's shorter side (the
    validation crop: 0.875 is 224 of a 256 resize)."""
    fraction = check_number("fraction", fraction, 0.0, 1.0, "a share of the shorter side")
    if not fraction:
        raise ArgumentError("fraction must be above 0, got 0")
    window, _ = load_ops().liquid_crop_window(
        _image_size(shape), tf.zeros([2], tf.int64), crop="center", fraction=fraction
    )
    return window


def decode_crop(
    contents,
    window,
    size: tuple[int, int] | None,
    *,
    flip=False,
    dtype=tf.uint8,
    mean=None,
    std=None,
    channels_first: bool = False,
    context=None,
) -> tf.Tensor:
    """The window (y, x, height, width; full-size pixels inside the image) of a JPEG's bytes, decoded at the
    smallest DCT scale whose window is at least `size` (and no finer than the scans present code), resized
    bilinearly to `size` (None: not resized, the window as decoded at full scale: the pixels of
    `tf.io.decode_jpeg` cropped), mirrored left to right where `flip` (a bool, or a bool tensor), as `dtype`:
    uint8, or float32/bfloat16 (value - mean) / std per channel (`mean`, `std`: three values in pixel units, e.g.
    IMAGENET_MEAN and IMAGENET_STD; default 0 and 1). [height, width, 3], or [3, height, width] with
    `channels_first`. Read strictly: data lost to damage is an error with its byte offset, after `context` (a
    string tensor naming where the JPEG came from) when given."""
    return _windowed(
        load_ops().liquid_decode_jpeg_crop, contents, window, size, flip, dtype, mean, std, channels_first, context
    )


def crop_pixels(
    image,
    window,
    size: tuple[int, int] | None,
    *,
    flip=False,
    dtype=tf.uint8,
    mean=None,
    std=None,
    channels_first: bool = False,
    context=None,
) -> tf.Tensor:
    """`decode_crop`'s output of decoded pixels (uint8 [H, W, 3]; PNG, raw or L3 images): the window resized
    bilinearly to `size` (None: not resized), mirrored where `flip`, as `dtype`, normalised and laid out as there.
    At 8/8 `decode_crop` of a JPEG equals this of `tf.io.decode_jpeg`'s pixels, bit for bit. A window outside the
    image is an error, after `context` when given."""
    return _windowed(
        load_ops().liquid_crop_pixels, image, window, size, flip, dtype, mean, std, channels_first, context
    )


def _windowed(op, source, window, size, flip, dtype, mean, std, channels_first, context) -> tf.Tensor:
    return op(
        source,
        tf.cast(window, tf.int64),
        _sizes(size),
        tf.convert_to_tensor(flip, tf.bool),
        tf.constant("") if context is None else context,
        **_output_attributes(dtype, mean, std, channels_first),
    )


def _output_attributes(dtype=tf.uint8, mean=None, std=None, channels_first=False) -> dict:
    """The crop ops' output attributes (dtype, mean, std, channels_first), checked (`checked_output`)."""
    dtype, mean, std = checked_output(dtype, mean, std)
    return {"dtype": dtype, "mean": list(mean), "std": list(std), "channels_first": bool(channels_first)}


def _sizes(size) -> tf.Tensor:
    if size is None:
        return tf.constant([0, 0], tf.int64)
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise ArgumentError(f"size must be (height, width) or None, got {size!r}")
    return tf.constant([check_int(f"size's {n}", v, 1, 65535) for n, v in zip(("height", "width"), size)], tf.int64)


def _checked_options(options: dict) -> dict:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ArgumentError(
            f"unknown options {sorted(unknown)}: decode_crop takes dtype, mean, std, channels_first, context"
        )
    return options


def _sampled_crop(contents, size, seed, options: dict, **window) -> tf.Tensor:
    outputs = {name: value for name, value in _checked_options(options).items() if name != "context"}
    context = options.get("context")
    return load_ops().liquid_decode_jpeg_sampled_crop(
        contents,
        tf.cast(seed, tf.int64),
        _sizes(size),
        tf.constant("") if context is None else context,
        **_output_attributes(**outputs),
        **window,
    )


def decode_batch(contents, size: tuple[int, int], crop=None, seeds=None, contexts=None, **options) -> tf.Tensor:
    """A batch of JPEGs (`contents`, string [B]) decoded in one op into [B, height, width, 3] (or [B, 3, height,
    width]), each image written into its place: through `crop` (a RandomResizedCrop, drawn from its row of `seeds`,
    int [B, 2]; a CenterCrop; None: the whole image) at the DCT scale `size` needs, resized to `size`, as
    `options` say (decode_crop's dtype, mean, std, channels_first). Image i is what `crop.decode(contents[i],
    size, seeds[i], **options)` gives, bit for bit, without a copy into the batch and with one op for the batch.
    Errors start with contexts[i] (string [B]) when given."""
    if "context" in _checked_options(options):
        raise ArgumentError("a batch names each image's source by contexts= (string [B]), not context=")
    outputs = _output_attributes(**options)
    if size is None:
        raise ArgumentError("a batch decodes every image to one size: size=(height, width), not None")
    contents = tf.convert_to_tensor(contents, tf.string)
    count = tf.shape(contents)[0]
    seeds = tf.zeros(tf.stack([count, 2]), tf.int64) if seeds is None else tf.cast(seeds, tf.int64)
    contexts = tf.fill([count], "") if contexts is None else contexts
    attributes = {"crop": "whole"} if crop is None else checked_crop(crop).attributes()
    return load_ops().liquid_decode_jpeg_crop_batch(contents, seeds, _sizes(size), contexts, **outputs, **attributes)


def checked_output(dtype, mean, std) -> tuple[tf.DType, tuple[float, ...], tuple[float, ...]]:
    """decode_crop's dtype, mean and std, checked: ArgumentError unless dtype is uint8 (without mean and std),
    float32 or bfloat16, and mean and std hold three values each (std finite and above 0) or are None."""
    dtype = tf.as_dtype(dtype)
    if dtype not in (tf.uint8, tf.float32, tf.bfloat16):
        raise ArgumentError(f"dtype must be tf.uint8, tf.float32 or tf.bfloat16, got {dtype.name}")
    if dtype == tf.uint8 and (mean is not None or std is not None):
        raise ArgumentError("mean and std normalise float32 or bfloat16 output: pass dtype=tf.float32 with them")
    mean, std = _check_channels("mean", mean), _check_channels("std", std)
    if any(not (0 < value < math.inf) for value in std):
        raise ArgumentError(f"std must be finite and above 0, got {list(std)}")
    return dtype, mean, std


def decode_random_resized_crop(
    contents, size: tuple[int, int], seed, *, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), flip: bool = True, **options
) -> tf.Tensor:
    """`decode_crop` of `random_resized_crop_window` (drawn from `seed`), flipped with probability 1/2 (drawn from
    `seed` too) where `flip`, in one op; `options` are decode_crop's (dtype, mean, std, channels_first, context)."""
    return RandomResizedCrop(scale, ratio, flip).decode(contents, size, seed, **options)


def decode_center_crop(contents, size: tuple[int, int] | None, *, fraction: float = 0.875, **options) -> tf.Tensor:
    """`decode_crop` of `center_crop_window`, in one op; `options` are decode_crop's."""
    return CenterCrop(fraction).decode(contents, size, **options)


@dataclasses.dataclass(frozen=True)
class RandomResizedCrop:
    """A training crop: torchvision's random resized crop window (`random_resized_crop_window`), mirrored left to
    right with probability 1/2 where `flip`."""

    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: bool = True

    def __post_init__(self):
        _check_range("scale", self.scale, 0.0, 1.0)
        _check_range("ratio", self.ratio, 0.0, math.inf)

    def decode(self, contents, size, seed, **options) -> tf.Tensor:
        """decode_crop of this crop's window drawn from `seed` ([2] int), flipped where the seed says."""
        return _sampled_crop(contents, size, seed, options, **self.attributes())

    def attributes(self) -> dict:
        """The sampled-crop ops' attributes of this crop."""
        return {"crop": "random", "scale": list(self.scale), "ratio": list(self.ratio), "random_flip": self.flip}

    def crop(self, image, size, seed, **options) -> tf.Tensor:
        """crop_pixels of decoded pixels (uint8 [H, W, 3]) through the window and flip `decode` draws from `seed`
        for a JPEG of that size: images of other formats cropped as JPEGs are."""
        window, flip = load_ops().liquid_crop_window(
            _image_size(tf.shape(image)),
            tf.cast(seed, tf.int64),
            crop="random",
            scale=list(self.scale),
            ratio=list(self.ratio),
        )
        return crop_pixels(image, window, size, flip=tf.logical_and(flip, self.flip), **_checked_options(options))


@dataclasses.dataclass(frozen=True)
class CenterCrop:
    """A validation crop: the central square of `fraction` of the shorter side (`center_crop_window`)."""

    fraction: float = 0.875

    def __post_init__(self):
        check_number("fraction", self.fraction, 0.0, 1.0, "a share of the shorter side")

    def decode(self, contents, size, seed=None, **options) -> tf.Tensor:
        """decode_crop of this crop's window (`seed` is not used: the window is the image's centre)."""
        return _sampled_crop(contents, size, tf.zeros([2], tf.int64), options, **self.attributes())

    def attributes(self) -> dict:
        """The sampled-crop ops' attributes of this crop."""
        return {"crop": "center", "fraction": self.fraction}

    def crop(self, image, size, seed=None, **options) -> tf.Tensor:
        """crop_pixels of decoded pixels (uint8 [H, W, 3]) through this crop's window."""
        return crop_pixels(image, center_crop_window(tf.shape(image), self.fraction), size, **_checked_options(options))


def checked_crop(crop) -> RandomResizedCrop | CenterCrop | None:
    """A crop argument as a crop: "random" (RandomResizedCrop()), "center" (CenterCrop()), one of them, or None."""
    if crop is None or isinstance(crop, RandomResizedCrop | CenterCrop):
        return crop
    if isinstance(crop, str) and crop in ("random", "center"):
        return RandomResizedCrop() if crop == "random" else CenterCrop()
    raise ArgumentError(
        f"crop must be 'random', 'center', a tfliquid.jpeg.crop.RandomResizedCrop or CenterCrop, or None; got {crop!r}"
    )


def _image_size(shape) -> tf.Tensor:
    return tf.cast(shape, tf.int64)[:2]


def _check_range(name: str, bounds, low: float, high: float) -> tuple[float, float]:
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise ArgumentError(f"{name} must be (low, high), got {bounds!r}")
    first, second = (float(check_number(name, value, low, high)) for value in bounds)
    if not 0 < first <= second:
        raise ArgumentError(f"{name} must be (low, high) with 0 < low <= high, got {bounds!r}")
    return first, second


def _check_channels(name: str, values) -> tuple[float, ...]:
    if values is None:
        return ()
    values = tuple(float(value) for value in values)
    if len(values) != 3:
        raise ArgumentError(f"{name} must hold 3 values (R, G, B), got {len(values)}")
    return values
