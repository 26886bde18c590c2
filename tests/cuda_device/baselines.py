"""What the GPU check measures L3 against, on the same pictures: nvJPEG through torchvision (`decode_jpeg` on
'cuda', the whole batch in one call) on quality-90 JPEG, and OpenCV's JPEG and PNG decoders on every CPU core.
Each is measured only where its package is there; the rows say why not otherwise."""

from __future__ import annotations

import concurrent.futures
import os
import statistics
import time

import numpy as np


def _median_ms(run, repeat: int) -> tuple[float, list[float]]:
    run()  # warm-up: libraries, threads, the GPU's decoder state
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), runs


def _encode(images: np.ndarray, extension: str, params: list[int]) -> list[bytes]:
    import cv2

    return [cv2.imencode(extension, np.ascontiguousarray(image[..., ::-1]), params)[1].tobytes() for image in images]


def _opencv_rows(images: np.ndarray, repeat: int) -> list[dict]:
    import cv2

    cores = os.cpu_count() or 1
    rows = []
    for name, files in (
        ("jpeg-q90", _encode(images, ".jpg", [cv2.IMWRITE_JPEG_QUALITY, 90])),
        ("png", _encode(images, ".png", [])),
    ):
        buffers = [np.frombuffer(data, np.uint8) for data in files]
        with concurrent.futures.ThreadPoolExecutor(cores) as pool:  # cv2 releases the GIL while decoding

            def decode_all(pool=pool, buffers=buffers):
                return list(pool.map(lambda buffer: cv2.imdecode(buffer, cv2.IMREAD_COLOR), buffers))

            ms, runs = _median_ms(decode_all, repeat)
        rows.append(
            {
                "decoder": f"opencv-{name}-{cores}-threads",
                "format": name,
                "ms": ms,
                "ms_runs": runs,
                "encoded_bytes": sum(len(data) for data in files),
            }
        )
    return rows


def _nvjpeg_row(images: np.ndarray, repeat: int) -> dict:
    import torch
    import torchvision
    from torchvision.io import decode_jpeg

    if not torch.cuda.is_available():
        return {"decoder": "nvjpeg", "skipped": "torch sees no GPU"}
    import cv2

    files = _encode(images, ".jpg", [cv2.IMWRITE_JPEG_QUALITY, 90])
    tensors = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in files]

    def decode_all():
        decode_jpeg(tensors, device="cuda")
        torch.cuda.synchronize()

    ms, runs = _median_ms(decode_all, repeat)
    return {
        "decoder": "nvjpeg",
        "format": "jpeg-q90",
        "ms": ms,
        "ms_runs": runs,
        "encoded_bytes": sum(len(data) for data in files),
        "torchvision": torchvision.__version__,
    }


def measure(images: np.ndarray, repeat: int) -> list[dict]:
    """Rows for the batch `images` ([B, H, W, 3] RGB): decoder, ms per batch (median), or why it was skipped."""
    try:
        import cv2  # noqa: F401  (encodes the JPEG and PNG files of every row)
    except ImportError:
        return [{"decoder": "opencv, nvjpeg", "skipped": "OpenCV (cv2) is not installed"}]
    rows = _opencv_rows(images, repeat)
    try:
        rows.append(_nvjpeg_row(images, repeat))
    except ImportError as e:
        rows.append({"decoder": "nvjpeg", "skipped": f"torchvision is not installed ({e})"})
    return rows
