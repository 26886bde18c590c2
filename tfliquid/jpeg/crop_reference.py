"""The crop windows of docs/formats/pcr.md ("Decoding a crop") in plain Python: the oracle the C++ windows
(ops/jpeg/crop_window.cc) are tested against, draw for draw. No TensorFlow.

    >>> window, flip = random_resized_crop(375, 500, (7, 1))
    >>> center_crop(375, 500)
    (23, 86, 328, 328)
"""

from __future__ import annotations

import math
import struct

_MASK = (1 << 64) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_ATTEMPTS = 10


def as_float32(value: float) -> float:
    """`value` as the op's float attributes hold it."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _mix(z: int) -> int:
    """SplitMix64's output function."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class Draws:
    """Uniform doubles in [0, 1) from SplitMix64 started at mix(mix(seed[0]) + seed[1]) (int64s taken modulo 2^64):
    seeds one apart start unrelated streams."""

    def __init__(self, seed: tuple[int, int]):
        self.state = _mix((_mix(seed[0] & _MASK) + seed[1]) & _MASK)

    def uniform(self) -> float:
        self.state = (self.state + _GOLDEN_GAMMA) & _MASK
        return (_mix(self.state) >> 11) * 2.0**-53


def random_resized_crop(
    height: int, width: int, seed: tuple[int, int], scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)
) -> tuple[tuple[int, int, int, int], bool]:
    """((y, x, window height, window width), flip): the seed's first draw flips (below 1/2), the next ten pairs
    draw an area share in `scale` and a log-uniform aspect (width / height) in `ratio`; the first window that fits
    is placed by two more draws; if none fits, the largest window within `ratio`, centred."""
    draws = Draws(seed)
    flip = draws.uniform() < 0.5
    min_scale, max_scale = (as_float32(v) for v in scale)
    min_ratio, max_ratio = (as_float32(v) for v in ratio)
    area = float(height) * float(width)
    low, high = math.log(min_ratio), math.log(max_ratio)
    for _ in range(_ATTEMPTS):
        target = area * (min_scale + draws.uniform() * (max_scale - min_scale))
        aspect = math.exp(low + draws.uniform() * (high - low))
        w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 1 <= w <= width and 1 <= h <= height:
            y = min(height - h, int(draws.uniform() * (height - h + 1)))
            x = min(width - w, int(draws.uniform() * (width - w + 1)))
            return (y, x, h, w), flip
    aspect = width / height
    h, w = height, width
    if aspect < min_ratio:
        h = min(max(round(width / min_ratio), 1), height)
    elif aspect > max_ratio:
        w = min(max(round(height * max_ratio), 1), width)
    return ((height - h) // 2, (width - w) // 2, h, w), flip


def center_crop(height: int, width: int, fraction: float = 0.875) -> tuple[int, int, int, int]:
    """(y, x, side, side): the central square of side max(1, round(fraction x the shorter side))."""
    side = max(1, round(as_float32(fraction) * min(height, width)))
    return (height - side) // 2, (width - side) // 2, side, side
