"""PCR on a job bound by JPEG decoding, not by storage: a lower scan group decoded at the model's size costs less
CPU, so the autotuner's choice pays here too.

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of 500 x 375 JPEG crops
   (ImageNet's typical size) and convert it to PCR.
2. Train a small Keras model on 224 x 224 inputs, `PCRDataset(decode_size=(224, 224))`, with every file in the
   page cache and no read throttle: the CPU decoding the images is the bottleneck. Once at scan groups 1 and 2,
   once at full fidelity and once with `tfliquid.keras.ScanGroupAutotuner` choosing the group.
3. Print images/s and validation accuracy (always at full fidelity).

    python examples/pcr_cpu_bound.py [--workdir DIR] [--images-per-class N] [--epochs N]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.samples import model as sample_model  # noqa: E402
from tfliquid.samples import photos as sample_photos  # noqa: E402

SIZE = 224  # the model's input side


def build_dataset(workdir: str, images_per_class: int) -> tuple[str, str]:
    """Sample photos -> JPEG folders -> PCR, for train and validation; reruns reuse what exists."""
    paths = []
    for split, per_class, seed in (("train", images_per_class, 0), ("val", max(2, images_per_class // 4), 1)):
        folder = os.path.join(workdir, f"{split}-{per_class}-jpeg")
        if not os.path.exists(folder):
            sample_photos.write_image_folder(folder + ".tmp", per_class, 500, height=375, seed=seed)
            os.replace(folder + ".tmp", folder)
        pcr = os.path.join(workdir, f"{split}-{per_class}-pcr")
        print(tfliquid.pcr.convert(folder, pcr, images_per_record=64, progress=False))
        paths.append(pcr)
    return paths[0], paths[1]


def scaled(example):
    return tf.cast(example["image"], tf.float32) / 255.0, example["label"]


def train_at(scan_group, train_dir, val_dir, epochs):
    """scan_group: an int, None (full fidelity) or "auto". Returns images/s, validation accuracy and the scan
    group of every epoch."""
    keras.utils.set_random_seed(0)
    options = {"seed": 0, "decode_size": (SIZE, SIZE)}
    callbacks = []
    if scan_group == "auto":
        tuner = tfliquid.keras.ScanGroupAutotuner(
            train_dir, start_epoch=1, every=3, probe_batches=2, preprocess=scaled, dataset_options=options
        )
        train, callbacks = tuner.dataset, [tuner]
    else:
        train = tfliquid.PCRDataset(train_dir, scan_group=scan_group, **options)
    val = tfliquid.PCRDataset(val_dir, shuffle=False, decode_size=(SIZE, SIZE))  # always full fidelity
    batches = train.map(scaled).batch(32).prefetch(2)
    model = sample_model.small_cnn(train.num_classes, input_size=SIZE)  # cheap next to decoding 500 x 375
    start = time.perf_counter()
    history = model.fit(batches, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)
    seconds = time.perf_counter() - start
    val_batches = val.map(scaled).batch(64)
    accuracy = model.evaluate(val_batches, verbose=0, return_dict=True)["accuracy"]
    groups = history.history.get("scan_group", [scan_group or train.num_scan_groups] * epochs)
    return train.num_images * epochs / seconds, accuracy, groups


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="demo_data")
    parser.add_argument("--images-per-class", type=int, default=80, help="training images per class (10 classes)")
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()

    train_dir, val_dir = build_dataset(args.workdir, args.images_per_class)
    print(f"\nTraining {args.epochs} epochs per fidelity on {SIZE} x {SIZE} inputs, CPU-bound (no read throttle).")
    print(f"{'scan group':>10}  {'images/s':>9}  {'val accuracy':>12}")
    rates, tuned_groups = {}, None
    for scan_group in (1, 2, None, "auto"):
        rate, accuracy, groups = train_at(scan_group, train_dir, val_dir, args.epochs)
        rates[scan_group] = rate
        tuned_groups = groups if scan_group == "auto" else tuned_groups
        label = "full" if scan_group is None else str(scan_group)
        print(f"{label:>10}  {rate:>9.0f}  {accuracy:>12.3f}", flush=True)
    print(f"\nAutotuned scan group per epoch: {tuned_groups} (its images/s include the probes).")
    print(
        f"Scan group 1 trained {rates[1] / rates[None]:.1f}x, scan group 2 {rates[2] / rates[None]:.1f}x and the "
        f"autotuned run {rates['auto'] / rates[None]:.1f}x as fast as full fidelity, bound by the CPU."
    )


if __name__ == "__main__":
    main()
