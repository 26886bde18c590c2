"""InputTuner against tf.data AUTOTUNE and ScanGroupAutotuner on four pipeline shapes scaled to 2 cores.

    python -m benchmarks.input_tuner [--seeds 3] [--epochs 6] [--shapes S1,S2,S3,S4] [--workdir bench_data]

Shapes, on the sample photos as PCR datasets (10 classes; validation 20 crops a class, at full fidelity, read once
and kept in memory):
  S1 storage-bound   128x128 crops, reads throttled to --bandwidth (tfliquid.io), the sample CNN at 64x64;
  S2 CPU-bound       500x375 crops in the page cache, resized to 224x224, the sample CNN at 224 (it pools first);
  S3 compute-bound   S1's crops unthrottled, a CNN whose step takes several times the input's time;
  S4 memory-tight    S1 with InputTuner's memory_budget at half the dataset's bytes.
Peers: AUTOTUNE (the PCRDataset at full fidelity, the map and prefetch AUTOTUNE, no cache), ScanGroupAutotuner
alone (its paper defaults but a schedule compressed to the run: from epoch 1, every 2), and InputTuner (defaults);
in S4 also InputTuner without its cache lever, the process whose own memory the budget comes on top of (the tuner's
probes and similarity test, which no cache budget bounds).
Every run is a process of its own (its peak RSS is its own), the peers taking turns seed by seed, the order
reversed every other seed. Per run: each epoch's training images/s (training time: from the epoch's begin to
validation), validation accuracy after each epoch, wall time; the tuner's decisions.

Reported per shape: the tuner's first diagnosis and its epoch; images/s once tuned (the median of the last half
of the epochs) over AUTOTUNE's in the same seed; final validation accuracy (median and range over seeds); time to
reach AUTOTUNE's final validation accuracy minus 1 point over AUTOTUNE's own time to it; peak RSS; and, for every
kept change, its predicted gain over its measured one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import keras
import tensorflow as tf

import tfliquid
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos

from benchmarks import common

SHAPES = ("S1", "S2", "S3", "S4")
PEERS = ("autotune", "scan_group_autotuner", "input_tuner")
# S4's memory target is the cache's: the same tuner without the cache lever is the process it is measured over.
NO_CACHE = "input_tuner_without_cache"
EXTRA_PEERS = {"S4": (NO_CACHE,)}
EXPECTED = {"S1": "storage", "S2": "cpu", "S3": "compute", "S4": "storage"}
BATCH_SIZE = 32


def datasets(workdir: str, shape: str) -> tuple[str, str]:
    """(train PCR, validation PCR) of the shape, made once per workdir."""
    size, height, per_class = (500, 375, 60) if shape == "S2" else (128, None, 100)
    paths = []
    for split, count, seed in (("train", per_class, 0), ("val", 20, 1)):
        name = os.path.join(workdir, f"tuner-{split}-{size}x{height or size}-{count}")
        if not os.path.exists(name + "-pcr"):
            if not os.path.exists(name):
                sample_photos.write_image_folder(name + ".tmp", count, size=size, height=height, seed=seed)
                os.replace(name + ".tmp", name)
            tfliquid.pcr.convert(name, name + "-pcr", images_per_record=50, progress=False)
        paths.append(name + "-pcr")
    return paths[0], paths[1]


def heavy_cnn(num_classes: int):
    """A CNN at 64x64 whose step costs several times the input pipeline's time per batch on 2 cores."""
    layers = keras.layers
    return sample_model.compiled(
        keras.Sequential(
            [
                keras.Input((64, 64, 3)),
                layers.Conv2D(32, 3, padding="same", activation="relu"),
                layers.Conv2D(64, 3, strides=2, activation="relu"),
                layers.Conv2D(128, 3, strides=2, activation="relu"),
                layers.GlobalAveragePooling2D(),
                layers.Dense(num_classes),
            ]
        )
    )


def run(shape: str, peer: str, seed: int, args) -> dict:
    """One training run in this process; returns its measurements."""
    train_dir, val_dir = datasets(args.workdir, shape)
    size = 224 if shape == "S2" else sample_model.IMAGE_SIZE

    def preprocess(element):
        return tf.image.resize(element["image"], [size, size]) / 255.0, element["label"]

    keras.utils.set_random_seed(seed)
    model = heavy_cnn(10) if shape == "S3" else sample_model.small_cnn(10, size)
    validation = tfliquid.PCRDataset(val_dir, shuffle=False).map(preprocess).batch(64).cache()
    list(validation)  # read once, before the throttle: every peer's validation then costs the same
    clock = _EpochClock()
    reader = tfliquid.PCRDataset(train_dir, decode=False)
    budget = reader.bytes_per_epoch() // 2 if shape == "S4" else None
    baseline_rss = _peak_rss()
    tfliquid.io.set_read_bandwidth(args.bandwidth if shape in ("S1", "S4") else None)
    start = time.perf_counter()
    fit_arguments = {"epochs": args.epochs, "validation_data": validation, "verbose": 0}
    decisions = []
    if peer in ("input_tuner", NO_CACHE):
        levers = None if peer == "input_tuner" else ["threads", "decode size", "scan group", "service"]
        tuner = tfliquid.keras.InputTuner(
            train_dir, preprocess, BATCH_SIZE, memory_budget=budget, seed=seed, levers=levers
        )
        history = tuner.fit(model, callbacks=[clock], **fit_arguments)
        decisions = tuner.decisions
        report = str(tuner)
    else:
        full = reader.num_scan_groups
        train = tfliquid.PCRDataset(train_dir, scan_group=tf.Variable(full, dtype=tf.int64), seed=seed)
        callbacks = [clock]
        if peer == "scan_group_autotuner":
            tuner = tfliquid.keras.ScanGroupAutotuner(
                train, start_epoch=1, every=2, preprocess=preprocess, probe_batch_size=BATCH_SIZE
            )
            callbacks = [tuner, clock]
        batches = (
            train.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)
        )
        history = model.fit(batches, callbacks=callbacks, **fit_arguments)
        report = "" if peer == "autotune" else json.dumps(tuner.decisions)
    wall = time.perf_counter() - start
    tfliquid.io.set_read_bandwidth(None)
    return {
        "shape": shape,
        "peer": peer,
        "seed": seed,
        "images": reader.num_images,
        "epoch_seconds": clock.training_seconds,
        "epoch_ends": [end - start for end in clock.ends],
        "val_accuracy": history.history["val_accuracy"],
        "wall_seconds": wall,
        "baseline_rss": baseline_rss,
        "peak_rss": _peak_rss(),
        "memory_budget": budget,
        "decisions": decisions,
        "report": report,
    }


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _EpochClock(keras.callbacks.Callback):
    """Each epoch's training time (its begin to its validation's begin) and the wall clock at its end."""

    def __init__(self):
        super().__init__()
        self.training_seconds, self.ends = [], []

    def on_epoch_begin(self, epoch, logs=None):
        self._begin = time.perf_counter()

    def on_test_begin(self, logs=None):
        self.training_seconds.append(time.perf_counter() - self._begin)

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(time.perf_counter())


def _in_a_process(shape: str, peer: str, seed: int, args) -> dict:
    command = [sys.executable, "-m", "benchmarks.input_tuner", "--run", shape, peer, str(seed)]
    command += ["--workdir", args.workdir, "--epochs", str(args.epochs), "--bandwidth", str(args.bandwidth)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shape} {peer} seed {seed} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _tuned_rate(result: dict) -> float:
    """Images/s once tuned: the median of the last half of the epochs' training rates."""
    rates = [result["images"] / seconds for seconds in result["epoch_seconds"]]
    return statistics.median(rates[len(rates) // 2 :])


def _time_to(result: dict, accuracy: float) -> float | None:
    for end, reached in zip(result["epoch_ends"], result["val_accuracy"]):
        if reached >= accuracy:
            return end
    return None


def _kept_predictions(result: dict) -> list[float]:
    """For every kept change: its predicted gain over its measured gain."""
    kept = [d for d in result["decisions"] if d["action"] == "keep"]
    return [
        (d["predicted_images_per_second"] / d["before_images_per_second"])
        / (d["measured_images_per_second"] / d["before_images_per_second"])
        for d in kept
    ]


def report(results: list[dict], shapes) -> dict:
    """Prints the tables and the verdicts; returns the summary."""
    by = {(r["shape"], r["peer"], r["seed"]): r for r in results}
    seeds = sorted({r["seed"] for r in results})
    summary, predictions = {}, []
    for shape in shapes:
        print(f"\n{shape}: {'  '.join(f'seed {s}' for s in seeds)}")
        print(
            f"  {'peer':<22} {'images/s tuned':>18} {'x AUTOTUNE':>16} {'val acc':>20} {'time to acc':>14} "
            f"{'peak RSS MB':>12}"
        )
        row = {}
        for peer in _peers(shape):
            runs = [by[(shape, peer, s)] for s in seeds]
            base = [by[(shape, "autotune", s)] for s in seeds]
            rates = [_tuned_rate(r) for r in runs]
            speedups = [a / _tuned_rate(b) for a, b in zip(rates, base)]
            finals = [r["val_accuracy"][-1] for r in runs]
            times = [
                (_time_to(r, b["val_accuracy"][-1] - 0.01) or float("inf")) / _time_to(b, b["val_accuracy"][-1] - 0.01)
                for r, b in zip(runs, base)
            ]
            rss = [r["peak_rss"] / 1e6 for r in runs]
            row[peer] = {"speedups": speedups, "accuracies": finals, "time_to_accuracy": times, "rss": rss}
            print(
                f"  {peer:<22} {common.median_and_range(rates, '{:.0f}'):>18} "
                f"{common.median_and_range(speedups, '{:.2f}'):>16} {common.median_and_range(finals):>20} "
                f"{common.median_and_range(times, '{:.2f}'):>14} {statistics.median(rss):>12.0f}"
            )
        tuner_runs = [by[(shape, "input_tuner", s)] for s in seeds]
        diagnoses = [next(d for d in r["decisions"] if d["action"] == "diagnose") for r in tuner_runs]
        row["diagnoses"] = [(d["kind"], d["epoch"]) for d in diagnoses]
        row["lowered"] = any(
            d["action"] == "apply" and d["lever"] == "scan group" for r in tuner_runs for d in r["decisions"]
        )
        row["cached"] = any(
            d["action"] == "apply" and d["lever"] == "cache" for r in tuner_runs for d in r["decisions"]
        )
        own = NO_CACHE if NO_CACHE in _peers(shape) else "autotune"
        row["budget_rss"] = [
            (
                r["peak_rss"] - by[(shape, own, r["seed"])]["peak_rss"],
                r["peak_rss"] - by[(shape, "autotune", r["seed"])]["peak_rss"],
                r["memory_budget"],
            )
            for r in tuner_runs
        ]
        for r in tuner_runs:
            predictions += _kept_predictions(r)
        print(f"  InputTuner's first diagnosis (kind, epoch) per seed: {row['diagnoses']}")
        print(f"  InputTuner's report, seed {seeds[0]}:")
        print("    " + tuner_runs[0]["report"].replace("\n", "\n    "))
        summary[shape] = row
    _verdicts(summary, predictions)
    return summary


def _verdicts(summary: dict, predictions: list[float]) -> None:
    print("\nTargets:")
    right = sum(all(d == (EXPECTED[s], 0) for d in row["diagnoses"]) for s, row in summary.items())
    print(
        f"  [{'PASS' if right == len(summary) else 'MISS'}] diagnosis right in the first epoch: "
        f"{right} of {len(summary)}"
    )
    if "S1" in summary:
        common.verdict("S1 images/s once tuned over AUTOTUNE's", summary["S1"]["input_tuner"]["speedups"], 2.0)
        common.verdict(
            "S1 time to accuracy over full fidelity's", summary["S1"]["input_tuner"]["time_to_accuracy"], 0.6, False
        )
        gaps = [
            a - b for a, b in zip(summary["S1"]["autotune"]["accuracies"], summary["S1"]["input_tuner"]["accuracies"])
        ]
        common.verdict("S1 val accuracy below full fidelity's (points)", [100 * g for g in gaps], 2.0, False)
    if "S2" in summary:
        common.verdict("S2 images/s once tuned over AUTOTUNE's", summary["S2"]["input_tuner"]["speedups"], 1.5)
    if "S3" in summary:
        speedups = summary["S3"]["input_tuner"]["speedups"]
        inside = 0.97 <= statistics.median(speedups) <= 1.03
        print(
            f"  [{'PASS' if inside else 'MISS'}] S3 images/s over AUTOTUNE's in 0.97-1.03: "
            f"{common.median_and_range(speedups)}"
        )
        untouched = not summary["S3"]["lowered"] and not summary["S3"]["cached"]
        print(f"  [{'PASS' if untouched else 'MISS'}] S3 fidelity never lowered, no cache: {untouched}")
    if "S4" in summary:
        within = all(extra <= budget for extra, _, budget in summary["S4"]["budget_rss"])
        shown = ", ".join(
            f"{extra / 1e6:.1f} MB over the tuner's without a cache ({over / 1e6:.1f} over AUTOTUNE's), "
            f"budget {budget / 1e6:.1f} MB"
            for extra, over, budget in summary["S4"]["budget_rss"]
        )
        print(f"  [{'PASS' if within else 'MISS'}] S4 peak RSS within the budget over the process's own: {shown}")
    if predictions:
        within = [abs(p - 1) <= 0.25 for p in predictions]
        shown = ", ".join(f"{p:.2f}" for p in predictions)
        print(f"  [{'PASS' if all(within) else 'MISS'}] kept fixes' predicted over measured gain within 25%: {shown}")


def _peers(shape: str) -> list[str]:
    return [*PEERS, *EXTRA_PEERS.get(shape, ())]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="bench_data")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--bandwidth", type=float, default=1.5e6, help="S1 and S4's storage, bytes/s")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--json", help="write every run's measurements here")
    parser.add_argument("--run", nargs=3, metavar=("SHAPE", "PEER", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if args.run:
        shape, peer, seed = args.run
        print(json.dumps(run(shape, peer, int(seed), args)))
        return
    shapes = args.shapes.split(",")
    for shape in shapes:
        datasets(args.workdir, shape)
    results = []
    for round_, seed in enumerate(range(1, args.seeds + 1)):
        for shape in shapes:
            for peer in common.turn_order(_peers(shape), round_):
                print(f"{shape} {peer} seed {seed}", flush=True)
                results.append(_in_a_process(shape, peer, seed, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    report(results, shapes)


if __name__ == "__main__":
    main()
