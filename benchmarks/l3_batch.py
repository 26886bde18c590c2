"""A batch of L3 images decoded by `decode_l3_batch` (the op the `DecodeL3` layer runs in a train step) against
the same images as PNG decoded by `tf.io.decode_png` in a tf.data map, and by DALI's CPU PNG decoder when DALI
imports; on a fixed number of threads, the peers taking turns round by round.

    python -m benchmarks.l3_batch --threads 2 [--rounds 9]    # one thread count (what l3_decode runs per count)

TensorFlow's thread pools are sized once per process, so each thread count runs in its own process:
`python -m benchmarks.l3_decode` runs this for 1 and 2 threads and prints both.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time

import numpy as np

from benchmarks import common, dali_peer

IMAGES = 128
BATCH = 32
CROP = (384, 512)  # height, width
L3_PEER = "L3 decode_l3_batch"
PNG_PEER = "PNG decode_png map(AUTOTUNE)"
DALI_PEER = "PNG DALI CPU"
GPU_PEER = "L3 decode_l3_batch, GPU"


def crops() -> list[np.ndarray]:
    """IMAGES crops of CROP pixels of the shipped photos resized to 640x480, at seeded random offsets."""
    from PIL import Image

    from tfliquid.samples import photos as sample_photos

    photos = [
        np.asarray(photo.convert("RGB").resize((640, 480), Image.BICUBIC)) for _, photo in sample_photos.load_photos()
    ]
    rng = np.random.default_rng(0)
    out = []
    for i in range(IMAGES):
        photo = photos[i % len(photos)]
        y, x = rng.integers(0, 480 - CROP[0] + 1), rng.integers(0, 640 - CROP[1] + 1)
        out.append(np.ascontiguousarray(photo[y : y + CROP[0], x : x + CROP[1]]))
    return out


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, "PNG")
    return out.getvalue()


def measure(threads: int, rounds: int) -> dict[str, list[float]]:
    """Images/s of every peer in every round, on `threads` threads."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import tfliquid
    from tfliquid._common.timing import PassTiming, timed_pass

    images = crops()
    l3_batches = [
        tf.constant([tfliquid.l3.encode_l3(image).numpy() for image in images[i : i + BATCH]])
        for i in range(0, IMAGES, BATCH)
    ]
    png = [_png(image) for image in images]
    decode = tf.function(tfliquid.l3.decode_l3_batch)

    def l3_pass(device: str) -> PassTiming:
        start = time.perf_counter()
        with tf.device(device):
            for batch in l3_batches:
                decode(batch)  # eager calls return once the function has run
        return PassTiming(IMAGES, time.perf_counter() - start, 0.0, [])

    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    png_dataset = (
        tf.data.Dataset.from_tensor_slices(png)
        .map(lambda data: tf.io.decode_png(data, channels=3), num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .with_options(options)
    )
    expected = np.stack(images[:BATCH])  # every peer decodes the same pixels, or its speed is meaningless
    np.testing.assert_array_equal(decode(l3_batches[0]).numpy(), expected)
    np.testing.assert_array_equal(next(iter(png_dataset)).numpy(), expected)
    passes = {L3_PEER: lambda: l3_pass("/CPU:0"), PNG_PEER: lambda: timed_pass(png_dataset)}
    if dali_peer.available():
        passes[DALI_PEER] = dali_peer.encoded_batches_epoch(png, BATCH, threads)
    if tfliquid.l3.gpu_available():
        np.testing.assert_array_equal(tf.identity(decode(l3_batches[0])).numpy(), expected)
        passes[GPU_PEER] = lambda: l3_pass("/GPU:0")
    for run in passes.values():  # warm-up: tracing, first allocations
        run()
    return common.round_robin(passes, rounds)


def compare_in_child_processes(rounds: int) -> None:
    """Runs `measure` for 1 and 2 threads, each in a child process, and prints the rates and per-round ratios."""
    print(f"\nbatches: {IMAGES} crops {CROP[1]}x{CROP[0]} in batches of {BATCH}, images/s, median [range] of {rounds}")
    for threads in (1, 2):
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.l3_batch", "--threads", str(threads), "--rounds", str(rounds), "--json"],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(f"benchmarks.l3_batch --threads {threads} failed:\n{result.stderr[-3000:]}")
        rates = json.loads(result.stdout.splitlines()[-1])
        print(f" {threads} thread{'s' if threads > 1 else ''}:")
        for name, values in rates.items():
            print(f"  {name:30s} {common.median_and_range(values, '{:.0f}')}")
        for peer in (PNG_PEER, DALI_PEER):
            if peer in rates:
                ratio = common.median_and_range(common.ratios(rates[L3_PEER], rates[peer]), "{:.2f}")
                print(f"  {L3_PEER} / {peer}: {ratio}")
        if GPU_PEER not in rates:
            print("  GPU: none here, no GPU figure")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="one thread count (default: 1 and 2, in children)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--json", action="store_true", help="print the per-round rates as one JSON line (for l3_decode)"
    )
    args = parser.parse_args()
    if args.threads is None:
        compare_in_child_processes(args.rounds)
        return
    rates = measure(args.threads, args.rounds)
    if args.json:
        print(json.dumps(rates))
    else:
        for name, values in rates.items():
            print(f"{name:30s} {common.median_and_range(values, '{:.0f}')}")


if __name__ == "__main__":
    main()
