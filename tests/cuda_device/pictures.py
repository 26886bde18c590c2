"""The GPU check's photographs: crops and full-HD frames cut from the JPEG copies of the photos scikit-image and
scikit-learn ship (photos/, made by make_photos.py), decoded with OpenCV or Pillow, whichever is there, and scaled
with NumPy. The pixels need not match another machine's: every check compares with the pixels made in the same
run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PHOTOS = Path(__file__).resolve().parent / "photos"


def _decode(path: Path) -> np.ndarray:
    try:
        import cv2
    except ImportError:
        try:
            from PIL import Image
        except ImportError:
            raise ImportError("decoding the photos needs OpenCV (cv2) or Pillow") from None
        return np.asarray(Image.open(path).convert("RGB"))
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def photos() -> list[np.ndarray]:
    """Every photo, RGB uint8 [H, W, 3], in name order."""
    return [_decode(path) for path in sorted(PHOTOS.glob("*.jpg"))]


def _resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear, pixel centres aligned."""
    ys = np.clip((np.arange(height) + 0.5) * image.shape[0] / height - 0.5, 0, image.shape[0] - 1)
    xs = np.clip((np.arange(width) + 0.5) * image.shape[1] / width - 0.5, 0, image.shape[1] - 1)
    y0, x0 = ys.astype(int), xs.astype(int)
    y1, x1 = np.minimum(y0 + 1, image.shape[0] - 1), np.minimum(x0 + 1, image.shape[1] - 1)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = image[y0][:, x0] * (1 - fx) + image[y0][:, x1] * fx
    bottom = image[y1][:, x0] * (1 - fx) + image[y1][:, x1] * fx
    return np.rint(top * (1 - fy) + bottom * fy).astype(np.uint8)


def _cover(image: np.ndarray, height: int, width: int, scale: float) -> np.ndarray:
    """The photo scaled (at least enough to cover height x width, times `scale`)."""
    factor = max(height / image.shape[0], width / image.shape[1]) * scale
    return _resize(image, max(height, round(image.shape[0] * factor)), max(width, round(image.shape[1] * factor)))


def crops(count: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    """[count, height, width, 3]: photos in turn, each scaled by 1 to 1.5 times what covers the crop, cut at a
    random place, flipped at random."""
    rng = np.random.default_rng(seed)
    sources = photos()
    out = np.empty((count, height, width, 3), np.uint8)
    for i in range(count):
        scaled = _cover(sources[i % len(sources)], height, width, rng.uniform(1.0, 1.5))
        top = rng.integers(0, scaled.shape[0] - height + 1)
        left = rng.integers(0, scaled.shape[1] - width + 1)
        crop = scaled[top : top + height, left : left + width]
        out[i] = crop[:, ::-1] if rng.random() < 0.5 else crop
    return out
