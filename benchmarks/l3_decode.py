"""L3 decode speed and size against PNG, in one run: image by image on one thread, then a batch at a time on 1
and 2 threads.

    python -m benchmarks.l3_decode [--rounds 7] [--batch-rounds 9]

Images: the 10 photos shipped in scikit-image and scikit-learn at their native size, and the same photos resized
to full HD (1920x1080, bicubic). Every image is encoded as PNG (Pillow, default settings) and as L3 with both
profiles. Decoders, in megapixels per second (total pixels / sum over images of the best of --rounds):
  - `tfliquid.l3.decode_l3` (the C++ op), `default` and `paper` profiles;
  - `tf.io.decode_png`;
  - Pillow's PNG decoder (for information).
The decoders take turns image by image (round robin), so that the machine's load hits them alike. TensorFlow runs
with one inter-op and one intra-op thread.
Targets (issue 3): L3 decode >= 10x tf.io.decode_png; `default` size <= 1.15x PNG (geometric mean over the
native photos; upsampled to full HD they are smoother, which PNG's deflate exploits more: printed for information).

Batches (issue 15; benchmarks/l3_batch.py, one child process per thread count): 128 crops 512x384 of the photos
in batches of 32, decoded on 1 and then 2 threads by `tfliquid.l3.decode_l3_batch` (the CPU kernel, as the
`DecodeL3` layer runs it in a train step), by `tf.io.decode_png` in `Dataset.map(num_parallel_calls=AUTOTUNE)`
then `batch`, and by DALI's CPU PNG decoder when DALI imports. GPU figures appear only where a GPU is present.
"""

from __future__ import annotations

import argparse
import io
import math
import time

import numpy as np
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.samples import photos as sample_photos

from benchmarks import common, l3_batch

FULL_HD = (1920, 1080)


def image_sets() -> dict[str, list[np.ndarray]]:
    photos = [photo for _, photo in sample_photos.load_photos()]
    return {
        "native": [np.asarray(photo) for photo in photos],
        "full HD": [np.asarray(photo.resize(FULL_HD, Image.BICUBIC)) for photo in photos],
    }


def png_bytes(image: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, "PNG")
    return out.getvalue()


def seconds_of(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def decoders(image: np.ndarray) -> tuple[dict, dict]:
    """{decoder name: zero-argument decode call} and {format: encoded size} for one image."""
    png = png_bytes(image)
    l3 = {profile: tfliquid.l3.encode_l3(image, profile).numpy() for profile in ("default", "paper")}
    png_tensor = tf.constant(png)
    l3_tensors = {profile: tf.constant(data) for profile, data in l3.items()}
    calls = {
        "L3 default": lambda: tfliquid.l3.decode_l3(l3_tensors["default"]),
        "L3 paper": lambda: tfliquid.l3.decode_l3(l3_tensors["paper"]),
        "tf.io.decode_png": lambda: tf.io.decode_png(png_tensor, channels=image.shape[2]),
        "Pillow PNG": lambda: Image.open(io.BytesIO(png)).load(),
    }
    for name in ("L3 default", "L3 paper"):  # lossless, or the speed is meaningless
        np.testing.assert_array_equal(calls[name]().numpy(), image, err_msg=name)
    return calls, {"PNG": len(png), "L3 default": len(l3["default"]), "L3 paper": len(l3["paper"])}


def measure(images: list[np.ndarray], rounds: int) -> tuple[dict, dict]:
    """Mpx/s per decoder and geometric-mean size / PNG size per L3 profile."""
    seconds: dict[str, float] = {}
    size_ratios: dict[str, list[float]] = {"L3 default": [], "L3 paper": []}
    pixels = 0
    for image in images:
        calls, sizes = decoders(image)
        pixels += image.shape[0] * image.shape[1]
        for call in calls.values():  # warm-up: first-call costs (kernel lookup, allocator) are not decode speed
            call()
        best = {name: math.inf for name in calls}
        for _ in range(rounds):
            for name, call in calls.items():
                best[name] = min(best[name], seconds_of(call))
        for name, value in best.items():
            seconds[name] = seconds.get(name, 0.0) + value
        for name in size_ratios:
            size_ratios[name].append(sizes[name] / sizes["PNG"])
    speed = {name: pixels / value / 1e6 for name, value in seconds.items()}
    sizes = {name: math.exp(np.mean(np.log(ratios))) for name, ratios in size_ratios.items()}
    return speed, sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="timed decodes per image and decoder (best is kept)")
    parser.add_argument("--batch-rounds", type=int, default=9, help="rounds of the batch comparison per thread count")
    args = parser.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)

    ok = True
    for set_name, images in image_sets().items():
        speed, sizes = measure(images, args.rounds)
        print(f"{set_name} ({len(images)} photos), single thread, Mpx/s:")
        for name, value in speed.items():
            print(f"  {name:18s} {value:8.1f}   ({value / speed['tf.io.decode_png']:5.2f}x tf.io.decode_png)")
        print(
            "  size / PNG size (geometric mean): " + ", ".join(f"{name} {ratio:.3f}" for name, ratio in sizes.items())
        )
        for profile in ("L3 default", "L3 paper"):
            ok &= common.verdict(
                f"{set_name}: {profile} decode / tf.io.decode_png", speed[profile] / speed["tf.io.decode_png"], 10.0
            )
        if set_name == "native":  # the size target is set on the photos as shipped; resized ones are for information
            ok &= common.verdict(
                f"{set_name}: L3 default size / PNG size", sizes["L3 default"], 1.15, higher_is_better=False
            )
    l3_batch.compare_in_child_processes(args.batch_rounds)
    print("all targets met" if ok else "some targets missed")


if __name__ == "__main__":
    main()
