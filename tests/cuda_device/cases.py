"""The GPU decoder's edge cases: images whose shapes and contents stress the kernel (cut patches, one row, one
column, constant and noisy rows, 1, 3 and 4 channels). NumPy only, so that the GPU check (gpu_check.py) makes the
same images on a machine without TensorFlow as tests/test_l3_gpu.py does here."""

from __future__ import annotations

import numpy as np


def edge_images() -> dict[str, np.ndarray]:
    """name -> uint8 [H, W, C] (or [H, W] for grey)."""
    rng = np.random.default_rng(0)
    gradient = np.add.outer(np.arange(70), np.arange(90)).astype(np.uint8)
    return {
        "noise": rng.integers(0, 256, (130, 129, 3), dtype=np.uint8),
        "noise_rgba": rng.integers(0, 256, (40, 70, 4), dtype=np.uint8),
        "constant": np.full((33, 65, 3), 77, np.uint8),
        "black": np.zeros((64, 64, 4), np.uint8),
        "gradients": np.stack([gradient, gradient[::-1], gradient[:, ::-1]], -1),
        "checkerboard": ((np.indices((65, 67)).sum(axis=0) % 2) * 255).astype(np.uint8),
        "1x1": np.array([[[1, 2, 3]]], np.uint8),
        "1xN": rng.integers(0, 256, (1, 200, 3), dtype=np.uint8),
        "Nx1": rng.integers(0, 256, (200, 1, 1), dtype=np.uint8),
        "N+1": rng.integers(0, 256, (129, 130, 3), dtype=np.uint8),  # 128 + 1 and 4 * 32 + 1
        "32+1": rng.integers(0, 256, (33, 33, 1), dtype=np.uint8),
        "odd": (np.add.outer(np.arange(77) ** 2, np.arange(51) * 7) % 251).astype(np.uint8)[..., None]
        + rng.integers(0, 3, (77, 51, 3), dtype=np.uint8),
    }
