"""Keras training on a Liquid dataset: PNG and raw pixels mixed at the profiled ratio, against PNG alone and raw
alone, on real photos read from an emulated disk.

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of JPEG crops.
2. Choose a read budget under which PNG alone is bound by decoding and raw alone by the disk, and let the
   offline profiler find the PNG:raw ratio that reads the most images per second through it.
3. Convert the crops to Liquid datasets at that ratio, PNG alone and raw alone (lossless: the same pixels), and
   train the demo's small CNN with model.fit on each, reading through the budget.
4. Print each run's images per second and accuracy: the same accuracy, the mix faster than either format alone.

    python examples/liquid_training.py [--workdir DIR] [--images-per-class N] [--epochs N]
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.liquid import format as liquid_format  # noqa: E402
from tfliquid.liquid.profiling import profile  # noqa: E402
from tfliquid.samples import model as sample_model  # noqa: E402
from tfliquid.samples import photos as sample_photos  # noqa: E402

BATCH = 32


def convert(folder: str, dst: str, formats: list[str], ratio: str) -> str:
    if not os.path.exists(dst):
        tfliquid.liquid.convert(folder, dst, formats=formats, ratio=ratio, progress=False)
    return dst


def images_per_second(path: str) -> float:
    """One unthrottled pass over the dataset (its decode rate: the records are in the page cache)."""
    dataset = tfliquid.LiquidDataset(path, batch_size=BATCH, seed=0).batch(BATCH)
    for _ in dataset.take(1):
        pass
    start = time.perf_counter()
    images = sum(int(batch["label"].shape[0]) for batch in dataset)
    return images / (time.perf_counter() - start)


def train(path: str, epochs: int) -> tuple[float, float]:
    """model.fit on the dataset; returns (images/s over the training, accuracy of the last epoch)."""
    # All the epochs in one pipeline (epochs=None: without end), which Keras keeps across its epochs when given
    # steps_per_epoch: no epoch starts with an empty pipeline.
    dataset = tfliquid.LiquidDataset(path, batch_size=BATCH, seed=0, epochs=None)
    inputs = dataset.map(sample_model.preprocess).batch(BATCH).prefetch(2)
    steps = dataset.num_images // BATCH
    keras.utils.set_random_seed(0)
    model = sample_model.small_cnn(len(dataset.class_names))
    start = time.perf_counter()
    history = model.fit(inputs, epochs=epochs, steps_per_epoch=steps, verbose=0)
    return steps * BATCH * epochs / (time.perf_counter() - start), history.history["accuracy"][-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="where the datasets go (default: a temporary directory)")
    parser.add_argument("--images-per-class", type=int, default=60)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--profile-pass-images",
        type=int,
        default=1024,
        help="images per timed pass of the ratio profiler (fewer: a quicker, noisier profile)",
    )
    parser.add_argument(
        "--profile-epochs", type=int, default=3, help="timed passes per ratio (the profiler takes their median)"
    )
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="tfliquid-liquid-")
    folder = os.path.join(workdir, "photos")
    if not os.path.exists(folder):
        sample_photos.write_image_folder(folder, args.images_per_class, size=192, seed=0)

    png = convert(folder, os.path.join(workdir, "png"), ["png"], "1")
    raw = convert(folder, os.path.join(workdir, "raw"), ["raw"], "1")

    def bytes_per_image(path):
        manifest = liquid_format.read_manifest(path)
        return liquid_format.dataset_bytes(manifest) / manifest.num_images

    png_rate, raw_rate = images_per_second(png), images_per_second(raw)
    # between PNG's and raw's unthrottled byte rates: PNG alone stays decode-bound, raw alone becomes disk-bound
    bandwidth = float(np.sqrt(png_rate * bytes_per_image(png) * raw_rate * bytes_per_image(raw)))
    print(f"emulated disk: {bandwidth / 1e6:.1f} MB/s (tfliquid's read throttle)")
    result = profile(
        folder,
        "png,raw",
        sample=128,
        read_bandwidth=bandwidth,
        pass_images=args.profile_pass_images,
        epochs=args.profile_epochs,
        progress=False,
    )
    print(result)
    mixed = convert(folder, os.path.join(workdir, f"png-raw-{result.chosen}"), result.formats, result.ratio)

    tfliquid.io.set_read_bandwidth(bandwidth)
    try:
        runs = {"PNG alone": png, "raw alone": raw, f"PNG:raw {result.ratio} (profiled)": mixed}
        print(f"\nmodel.fit, {args.epochs} epochs of {args.images_per_class * 10} images, reading through the disk:")
        for name, path in runs.items():
            rate, accuracy = train(path, args.epochs)
            print(f"  {name:<26} {rate:7.0f} images/s   accuracy {accuracy:.3f}")
    finally:
        tfliquid.io.set_read_bandwidth(None)
    print(f"\ndatasets in {workdir}")


if __name__ == "__main__":
    main()
