"""The main job, end to end on real photos (run by `make demo`; about 1.5 minutes on 2 cores).

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of JPEG crops.
2. Write it as TFRecords (train and validation), as TensorFlow's ImageNet converters do.
3. Convert the TFRecords to PCR (`tfliquid convert pcr`, lossless for JPEGs, the fast scan script: 7 groups).
4. Train the same small Keras model on scan groups 1, 2, 5 and full fidelity, reading through a throttled
   "slow disk", and print images/s, bytes read per epoch and validation accuracy (always at full fidelity).
5. Train it once more with `tfliquid.keras.ScanGroupAutotuner` choosing the scan group by gradient similarity
   (on a schedule compressed to the demo's few epochs: the paper tunes every 20 epochs from epoch 5).

    python examples/pcr_demo.py [--workdir DIR] [--read-bandwidth BYTES_PER_S] [--epochs N]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos  # noqa: E402

SCAN_SCRIPT = "fast"  # the default: spectral selection only (docs/formats/pcr.md, "Scan scripts")


def build_dataset(workdir: str) -> tuple[str, str]:
    """Sample photos -> TFRecords -> PCR, for train and validation; reruns reuse what exists."""
    paths = {}
    for split, per_class, seed in (("train", 80, 0), ("val", 20, 1)):
        folder = os.path.join(workdir, f"{split}-jpeg")
        tfrecord = os.path.join(workdir, f"{split}.tfrecord")
        pcr_dir = os.path.join(workdir, f"{split}-pcr-{SCAN_SCRIPT}")
        if not os.path.exists(tfrecord):
            sample_photos.write_image_folder(folder, per_class, size=128, seed=seed)
            sample_photos.write_tfrecords(folder, tfrecord + ".tmp")
            os.replace(tfrecord + ".tmp", tfrecord)
        print(f"\n[{split}] converting {tfrecord} to PCR")
        print(tfliquid.pcr.convert(tfrecord, pcr_dir, images_per_record=128, scan_script=SCAN_SCRIPT, verify=True))
        paths[split] = pcr_dir
    print()
    print(tfliquid.pcr.inspect(paths["train"]))
    return paths["train"], paths["val"]


def train_at(scan_group, train_dir, val_dir, epochs, read_bandwidth):
    """scan_group: an int, None (full fidelity) or "auto" (the autotuner). Returns images/s, bytes read per
    epoch, validation accuracy and the scan group of every epoch."""
    keras.utils.set_random_seed(0)
    callbacks = []
    if scan_group == "auto":  # the tuner builds the dataset with a scan group variable, which it assigns
        tuner = tfliquid.keras.ScanGroupAutotuner(
            train_dir, start_epoch=1, every=3, probe_batches=2, dataset_options={"seed": 0}
        )
        train, callbacks = tuner.dataset, [tuner]
    else:
        train = tfliquid.PCRDataset(train_dir, scan_group=scan_group, seed=0)
    val = tfliquid.PCRDataset(val_dir, shuffle=False)  # always full fidelity
    train_batches = train.map(sample_model.preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(32).prefetch(2)
    val_batches = val.map(sample_model.preprocess).batch(64)
    model = sample_model.small_cnn(train.num_classes)
    tfliquid.io.set_read_bandwidth(read_bandwidth)  # training reads from the emulated disk
    bytes_before = tfliquid.io.read_stats()["bytes_read"]
    start = time.perf_counter()
    history = model.fit(train_batches, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)
    seconds = time.perf_counter() - start
    bytes_per_epoch = (tfliquid.io.read_stats()["bytes_read"] - bytes_before) / epochs
    tfliquid.io.set_read_bandwidth(None)  # evaluation reads at full speed
    accuracy = model.evaluate(val_batches, verbose=0, return_dict=True)["accuracy"]
    groups = history.history.get("scan_group", [scan_group or train.num_scan_groups] * epochs)
    return train.num_images * epochs / seconds, bytes_per_epoch, accuracy, groups


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="demo_data")
    parser.add_argument(
        "--read-bandwidth",
        type=float,
        default=1.5e6,
        help="emulated storage bandwidth in bytes/s for training reads (default 1.5 MB/s)",
    )
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()

    train_dir, val_dir = build_dataset(args.workdir)
    print(
        f"\nTraining {args.epochs} epochs per fidelity, reading at {args.read_bandwidth / 1e6:.1f} MB/s "
        "(tfliquid.io read throttle); validation at full fidelity."
    )
    print(f"{'scan group':>10}  {'images/s':>9}  {'bytes read/epoch':>16}  {'val accuracy':>12}")
    results, groups_per_epoch = {}, {}
    for scan_group in (1, 2, 5, None, "auto"):
        images_per_s, bytes_per_epoch, accuracy, groups = train_at(
            scan_group, train_dir, val_dir, args.epochs, args.read_bandwidth
        )
        results[scan_group], groups_per_epoch[scan_group] = images_per_s, groups
        label = "full" if scan_group is None else str(scan_group)
        print(f"{label:>10}  {images_per_s:>9.0f}  {bytes_per_epoch:>16,.0f}  {accuracy:>12.3f}", flush=True)
    print(f"\nAutotuned scan group per epoch: {groups_per_epoch['auto']} (its images/s include the probes).")
    print(
        f"Scan group 2 trained {results[2] / results[None]:.1f}x and the autotuned run "
        f"{results['auto'] / results[None]:.1f}x as fast as full fidelity on this emulated storage."
    )


if __name__ == "__main__":
    main()
