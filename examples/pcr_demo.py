"""The main job, end to end on real photos (run by `make demo`; about two minutes on 2 cores).

1. Cut the photographs shipped in scikit-image and scikit-learn into a 10-class dataset of JPEG crops.
2. Write it as TFRecords (train and validation), as TensorFlow's ImageNet converters do.
3. Convert the TFRecords to PCR (`tfliquid convert pcr`, lossless for JPEGs, the fast scan script: 7 groups).
4. Train the same small Keras model, reading through a throttled "slow disk", with tf.data AUTOTUNE at full
   fidelity, at fixed scan groups 1 and 2, with `tfliquid.keras.ScanGroupAutotuner` (on a schedule compressed to
   the demo's few epochs: the paper tunes every 20 epochs from epoch 5), and with `tfliquid.keras.InputTuner`,
   which finds the stall and applies, keeps or rolls back its fixes; each with several seeds. Print images/s,
   bytes read per epoch and validation accuracy (always at full fidelity) as the median and range over the
   seeds, then the input tuner's decisions.

    python examples/pcr_demo.py [--workdir DIR] [--read-bandwidth BYTES_PER_S] [--epochs N] [--seeds N]
"""

import argparse
import os
import statistics
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
    for split, per_class, seed in (("train", 60, 0), ("val", 40, 1)):
        folder = os.path.join(workdir, f"{split}-{per_class}-jpeg")
        tfrecord = os.path.join(workdir, f"{split}-{per_class}.tfrecord")
        pcr_dir = os.path.join(workdir, f"{split}-{per_class}-pcr-{SCAN_SCRIPT}")
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


RUNS = ("AUTOTUNE", 1, 2, "ScanGroupAutotuner", "InputTuner")  # AUTOTUNE: full fidelity, no cache
BATCH_SIZE = 32


def train_at(run, train_dir, val_dir, epochs, read_bandwidth, seed):
    """One training run (see RUNS). Returns images/s, bytes read per epoch, validation accuracy, and, where the input
    tuner ran, its report and its windows' training rates."""
    keras.utils.set_random_seed(seed)
    model = sample_model.small_cnn(tfliquid.PCRDataset(train_dir).num_classes)
    val_batches = tfliquid.PCRDataset(val_dir, shuffle=False).map(sample_model.preprocess).batch(64)  # full fidelity
    tfliquid.io.set_read_bandwidth(read_bandwidth)  # training reads from the emulated disk
    bytes_before, start, tuned = tfliquid.io.read_stats()["bytes_read"], time.perf_counter(), None
    if run == "InputTuner":
        tuner = tfliquid.keras.InputTuner(train_dir, sample_model.preprocess, BATCH_SIZE, seed=seed)
        tuner.fit(model, epochs=epochs, verbose=0)
        tuned = (str(tuner), [window.rate for window in tuner.windows])
    else:
        callbacks = []
        if run == "ScanGroupAutotuner":  # it builds the dataset with a scan group variable, which it assigns
            tuner = tfliquid.keras.ScanGroupAutotuner(
                train_dir, start_epoch=1, every=3, probe_batches=2, dataset_options={"seed": seed}
            )
            train, callbacks = tuner.dataset, [tuner]
        else:
            train = tfliquid.PCRDataset(train_dir, scan_group=None if run == "AUTOTUNE" else run, seed=seed)
        batches = train.map(sample_model.preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH_SIZE)
        model.fit(batches.prefetch(tf.data.AUTOTUNE), epochs=epochs, verbose=0, callbacks=callbacks)
    seconds = time.perf_counter() - start
    bytes_per_epoch = (tfliquid.io.read_stats()["bytes_read"] - bytes_before) / epochs
    tfliquid.io.set_read_bandwidth(None)  # evaluation reads at full speed
    accuracy = model.evaluate(val_batches, verbose=0, return_dict=True)["accuracy"]
    images = tfliquid.PCRDataset(train_dir).num_images
    return images * epochs / seconds, bytes_per_epoch, accuracy, tuned


def _spread(values, style="{:.3f}") -> str:
    """Median [min-max]."""
    return f"{style.format(statistics.median(values))} [{style.format(min(values))}-{style.format(max(values))}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="demo_data")
    parser.add_argument(
        "--read-bandwidth",
        type=float,
        default=1.5e6,
        help="emulated storage bandwidth in bytes/s for training reads (default 1.5 MB/s)",
    )
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3, help="runs of each, seeds 1..N (default 3)")
    args = parser.parse_args()

    train_dir, val_dir = build_dataset(args.workdir)
    print(
        f"\nTraining {args.epochs} epochs per run and seed, reading at {args.read_bandwidth / 1e6:.1f} MB/s "
        f"(tfliquid.io read throttle); validation at full fidelity; {args.seeds} seeds, median [range]."
    )
    results = {run: [] for run in RUNS}
    for seed in range(1, args.seeds + 1):  # every run once a seed: the machine's drift touches them alike
        for run in RUNS:
            results[run].append(train_at(run, train_dir, val_dir, args.epochs, args.read_bandwidth, seed))
    print(f"\n{'run':>18}  {'images/s':>16}  {'bytes read/epoch':>16}  {'val accuracy':>20}")
    for run, measured in results.items():
        rates, bytes_read, accuracies, _ = zip(*measured)
        label = f"scan group {run}" if isinstance(run, int) else run
        print(
            f"{label:>18}  {_spread(rates, '{:.0f}'):>16}  {statistics.median(bytes_read):>16,.0f}  "
            f"{_spread(accuracies):>20}"
        )
    speedups = {run: [a[0] / b[0] for a, b in zip(results[run], results["AUTOTUNE"])] for run in RUNS}
    print(
        f"\nOver AUTOTUNE at full fidelity, per seed: scan group 2 {_spread(speedups[2], '{:.1f}')}x, the "
        f"scan-group autotuner {_spread(speedups['ScanGroupAutotuner'], '{:.1f}')}x (its probes included), the "
        f"input tuner {_spread(speedups['InputTuner'], '{:.1f}')}x (its probes included)."
    )
    report, _ = results["InputTuner"][0][3]
    windows = [rates for _, _, _, (_, rates) in results["InputTuner"] if len(rates) > 2]
    autotune = statistics.median(r[0] for r in results["AUTOTUNE"])
    if windows:
        second, later = [rates[1] for rates in windows], [statistics.median(rates[2:]) for rates in windows]
        print(
            f"The input tuner's first epoch reads at the disk's rate (it diagnoses it, and fills a cache on trial "
            f"from when its steps are seen waiting), its second reads the rest and trains at "
            f"{_spread(second, '{:.0f}')} images/s, and from its third on it trained at {_spread(later, '{:.0f}')} "
            f"images/s, {statistics.median(later) / autotune:.1f}x AUTOTUNE's run."
        )
    print(f"\nThe input tuner's decisions (seed 1):\n{report}")


if __name__ == "__main__":
    main()
