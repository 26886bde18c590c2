"""Seed L3 files for the L3 decoder fuzzers (ops/tests/l3_fuzz.cc, tests/fuzz_decode_l3.py): shipped photos
and synthetic images, encoded by the reference codec with both profiles.

Small on purpose: a fuzzer's iterations per second follow the size of what it mutates, and the decoder's edge
cases (edge patches cut on both sides, every bit width, constant rows, 1-pixel sides, 1, 3 and 4 channels) fit
in images of a few thousand pixels.
"""

from __future__ import annotations

import pathlib

import numpy as np

from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos


def _images() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    photos = dict(sample_photos.load_photos())
    images = {}
    for name in ["astronaut", "chelsea", "coffee"]:
        photos[name].thumbnail((72, 72))  # 72 = 2 x 32 + 8: the paper profile cuts the right and bottom patches
        images[name] = np.asarray(photos[name])
    photos["motorcycle_left"].thumbnail((150, 150))  # two 128-pixel patches across for "default", one cut
    images["motorcycle_left"] = np.asarray(photos["motorcycle_left"])
    images["grey"] = np.asarray(photos["rocket"].convert("L").resize((40, 30)))[..., None]
    rgba = np.asarray(photos["retina"].resize((33, 35)))
    alpha = np.add.outer(np.arange(35), np.arange(33)).astype(np.uint8)[..., None] * 3
    images["rgba"] = np.concatenate([rgba, alpha], axis=-1)
    # Rows whose residuals need 0, 1, ..., 8 bits.
    rows = [np.zeros(40, np.uint8)]
    for width in range(9):
        rows.append((rows[-1].astype(int) + np.resize([0, (1 << width) - 1], 40)) % 256)
    images["bit_widths"] = np.array(rows, np.uint8)[..., None]
    images["noise"] = rng.integers(0, 256, (33, 34, 4), dtype=np.uint8)
    images["constant"] = np.full((9, 17, 3), 77, np.uint8)
    images["checker"] = ((np.indices((17, 19)).sum(axis=0) % 2) * 255).astype(np.uint8)[..., None]
    images["1x1"] = np.array([[[1, 2, 3]]], np.uint8)
    images["1xN"] = rng.integers(0, 256, (1, 70, 1), dtype=np.uint8)
    images["Nx1"] = rng.integers(0, 256, (70, 1, 3), dtype=np.uint8)
    return images


def write_seeds(directory) -> list[pathlib.Path]:
    """Writes NAME-PROFILE-vVERSION.l3 for every seed image, profile and format version; returns the paths.
    Version 1 too: its mutants that break no rule of the patch data decode, and go through the round trip, where
    version 2's checksum refuses them."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, image in _images().items():
        for profile in l3.PROFILES:
            for version in l3.VERSIONS:
                path = directory / f"{name}-{profile}-v{version}.l3"
                path.write_bytes(l3.encode(image, profile, version=version))
                paths.append(path)
    return paths


if __name__ == "__main__":
    import sys

    print("\n".join(str(path) for path in write_seeds(sys.argv[1])))
