"""What the benchmarks share: the sample-photo dataset, timing, and a verdict line per target."""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tfliquid.samples import photos as sample_photos  # noqa: E402


def photo_folder(workdir: str, images_per_class: int, size: int) -> str:
    """An image folder of JPEG crops of the shipped photos (made once per workdir and size)."""
    folder = os.path.join(workdir, f"photos-{images_per_class}x{size}")
    if not os.path.exists(folder):
        sample_photos.write_image_folder(folder + ".tmp", images_per_class, size=size, seed=0)
        os.replace(folder + ".tmp", folder)
    return folder


def timed(fn, repeat: int = 1) -> float:
    """Best wall time of `repeat` calls (best, not mean: the machines are shared and noise only adds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def verdict(name: str, measured: float, target: float, higher_is_better: bool = True) -> bool:
    ok = measured >= target if higher_is_better else measured <= target
    sign = ">=" if higher_is_better else "<="
    print(f"  [{'PASS' if ok else 'MISS'}] {name}: {measured:.3f} (target {sign} {target})")
    return ok
