"""Which progressive scan script PCR should write: candidates measured side by side on the shipped photos.

    python -m benchmarks.scan_scripts [--images-per-class 100] [--size 320] [--rounds 5] [--epochs 6]

For every candidate script (jpegtran -scans syntax, colour images), the same JPEG crops are converted to PCR
(lossless: every script decodes to the crops' exact pixels) and measured:
  - size of the dataset against the baseline JPEGs and against the standard script;
  - bytes of each scan group as a fraction of the full record (the fidelity ladder);
  - decode speed with tf.io.decode_jpeg on one thread, at full fidelity and at each scan group, as a ratio to
    decoding the original baseline JPEGs, measured in turns with them (best of --rounds);
  - the mean PSNR of each group against full fidelity, at its share of the bytes (what a group carries, for any
    task);
  - the validation accuracy (at full fidelity) of the demo's model trained at each scan group of the script:
    the PCR paper's accuracy-per-scan-group figure, on the demo task (128-pixel crops, 80 per class to train,
    20 to validate, --epochs epochs, the mean of --seeds seeded runs);
  - the autotuner's measure of each group, for the model trained at full fidelity: the cosine similarity of the
    loss gradient at that group with the full-fidelity one, and the share of the bytes that group reads. A
    script whose ladder reaches the tuner's threshold (0.8) with fewer bytes saves more reads.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib

import keras
import numpy as np
import tensorflow as tf

import tfliquid
from tfliquid._common.timing import timed_pass
from tfliquid.jpeg.ops import jpeg_scan_ends
from tfliquid.jpeg.scans import EOI
from tfliquid.pcr import format as pcr_format
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos

from benchmarks import common

CANDIDATES = {
    "standard": "standard",
    "spectral-5": "0,1,2: 0-0,0,0; 0: 1-5,0,0; 2: 1-63,0,0; 1: 1-63,0,0; 0: 6-63,0,0;",
    "spectral-6": "0,1,2: 0-0,0,0; 0: 1-2,0,0; 0: 3-9,0,0; 2: 1-63,0,0; 1: 1-63,0,0; 0: 10-63,0,0;",
    "spectral-7": "0,1,2: 0-0,0,0; 0: 1-2,0,0; 0: 3-5,0,0; 2: 1-63,0,0; 1: 1-63,0,0; 0: 6-14,0,0; 0: 15-63,0,0;",
    "spectral-6b": "0,1,2: 0-0,0,0; 0: 1-5,0,0; 2: 1-63,0,0; 1: 1-63,0,0; 0: 6-14,0,0; 0: 15-63,0,0;",
    "spectral-7c": "0,1,2: 0-0,0,0; 2: 1-63,0,0; 1: 1-63,0,0; 0: 1-2,0,0; 0: 3-5,0,0; 0: 6-14,0,0; 0: 15-63,0,0;",
    "fast": "fast",
}


def convert(folder: str, workdir: str, name: str, script: str) -> str:
    """The PCR dataset of `folder` with `script` (a name or a script's text)."""
    digest = hashlib.sha256(script.encode()).hexdigest()[:8]  # a changed script is another dataset
    dst = os.path.join(workdir, f"{os.path.basename(folder)}-{name}-{digest}")
    if script not in ("standard", "fast"):
        path = os.path.join(workdir, f"{name}.scans")
        with open(path, "w") as f:
            f.write(script)
        script = path
    tfliquid.pcr.convert(folder, dst, images_per_record=128, scan_script=script, progress=False)
    return dst


def full_jpegs(pcr: str) -> list[bytes]:
    """Every image of the dataset at full fidelity, in stored order."""
    return [x["image"] for x in tfliquid.PCRDataset(pcr, decode=False, shuffle=False).as_numpy_iterator()]


def at_group(jpegs: list[bytes], group: int) -> list[bytes]:
    """The images cut at scan group `group`: what a record prefix at that group holds."""
    return [j[: pcr_format.prefix_end(jpeg_scan_ends(j).numpy().tolist(), group)] + EOI for j in jpegs]


def decode_seconds(jpegs: list[bytes]) -> float:
    """One pass of tf.io.decode_jpeg over the images on one thread."""
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    ds = (
        tf.data.Dataset.from_tensor_slices(jpegs)
        .map(lambda j: tf.io.decode_jpeg(j, channels=3))
        .batch(64)
        .with_options(options)
    )
    return timed_pass(ds).seconds  # the iterator's teardown, tf.data's stall at times, is not the decoder's


def decode_ratios(sets: dict[str, list[bytes]], baseline: list[bytes], rounds: int) -> dict[str, float]:
    """Decode speed of each set of images as a ratio to the baseline JPEGs, best of `rounds`, in turns."""
    best = {name: float("inf") for name in [*sets, "baseline"]}
    for _ in range(rounds):
        for name, jpegs in [*sets.items(), ("baseline", baseline)]:
            best[name] = min(best[name], decode_seconds(jpegs))
    return {name: best["baseline"] / seconds for name, seconds in best.items() if name != "baseline"}


def psnr_at(jpegs: list[bytes], group: int) -> float:
    """Mean PSNR (dB) of the images decoded at scan group `group` against the same images at full fidelity: what a
    group carries, whatever the task."""
    cut = tf.data.Dataset.from_tensor_slices(at_group(jpegs, group)).map(lambda j: tf.io.decode_jpeg(j, channels=3))
    full = tf.data.Dataset.from_tensor_slices(jpegs).map(lambda j: tf.io.decode_jpeg(j, channels=3))
    values = [float(tf.image.psnr(a, b, 255)) for a, b in zip(cut, full)]
    return float(np.mean(np.minimum(values, 99.0)))  # identical images have an infinite PSNR


def trained_at(train: str, group: int, epochs: int, seed: int) -> keras.Model:
    """The demo's model trained at scan group `group`."""
    keras.utils.set_random_seed(seed)
    ds = tfliquid.PCRDataset(train, scan_group=group, seed=seed)
    model = sample_model.small_cnn(ds.num_classes)
    model.fit(ds.map(sample_model.preprocess).batch(32), epochs=epochs, verbose=0)
    return model


def accuracy(model: keras.Model, val: str) -> float:
    """Validation accuracy at full fidelity."""
    validation = tfliquid.PCRDataset(val, shuffle=False).map(sample_model.preprocess).batch(64)
    return model.evaluate(validation, verbose=0, return_dict=True)["accuracy"]


def similarities(train: str, model: keras.Model, groups: int) -> dict[int, float]:
    """The autotuner's measure of each group: cosine similarity of the loss gradient with the full-fidelity one, on
    its default probe (320 images), for `model`."""
    tuner = tfliquid.keras.ScanGroupAutotuner(train, measure_all=True, candidates=range(1, groups))
    tuner.set_model(model)
    return tuner.tune()["similarities"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_photo_arguments(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=2, help="training runs per group, averaged")
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help="comma-separated names")
    args = parser.parse_args()
    names = args.candidates.split(",")

    folder = common.photo_folder_of(args)
    baseline = [path.read_bytes() for path in sorted(pathlib.Path(folder).rglob("*.jpg"))]
    datasets = {name: convert(folder, args.workdir, name, CANDIDATES[name]) for name in names}
    full = {name: full_jpegs(path) for name, path in datasets.items()}
    baseline_bytes = sum(map(len, baseline))
    print(f"{len(baseline)} JPEG crops ({args.size}x{args.size}, q90) of the shipped photos: {baseline_bytes:,} bytes")

    print("\nSize and ladder (bytes of the prefix at each scan group / full):")
    standard_bytes = sum(map(len, full["standard"])) if "standard" in full else None
    for name in names:
        info = tfliquid.pcr.inspect(datasets[name])
        size = sum(map(len, full[name]))
        ladder = " ".join(f"{g.percent_of_full / 100:.2f}" for g in info.scan_groups)
        versus = f", {size / standard_bytes:.3f}x standard" if standard_bytes else ""
        print(f"  {name:<11} {size / baseline_bytes:.3f}x baseline{versus}; groups: {ladder}")

    print(f"\nDecode speed, tf.io.decode_jpeg on one thread, / the baseline JPEGs' (best of {args.rounds}):")
    ratios = decode_ratios({name: full[name] for name in names}, baseline, args.rounds)
    for name in names:
        groups = pcr_format.read_index(datasets[name]).num_scan_groups
        per_group = decode_ratios({g: at_group(full[name], g) for g in range(1, groups)}, baseline, 2)
        ladder = " ".join(f"{per_group[g]:.2f}" for g in range(1, groups))
        print(f"  {name:<11} full {ratios[name]:.2f}x; groups 1..{groups - 1}: {ladder}")

    print("\nMean PSNR (dB) of each scan group against full fidelity, at the group's share of the bytes (200 images):")
    for name in names:
        info = tfliquid.pcr.inspect(datasets[name])
        groups = len(info.scan_groups)
        cells = [
            f"{psnr_at(full[name][:200], g):.1f}@{info.scan_groups[g - 1].percent_of_full / 100:.2f}"
            for g in range(1, groups)
        ]
        print(f"  {name:<11} " + " ".join(cells), flush=True)

    print(f"\nValidation accuracy (full fidelity) of the demo's model trained {args.epochs} epochs at each group:")
    demo = os.path.join(args.workdir, "scan-scripts-demo")
    splits = {}
    for split, per_class, seed in (("train", 80, 0), ("val", 20, 1)):
        split_folder = os.path.join(demo, split)
        if not os.path.exists(split_folder):
            sample_photos.write_image_folder(split_folder + ".tmp", per_class, size=128, seed=seed)
            os.replace(split_folder + ".tmp", split_folder)
        splits[split] = split_folder
    ladders = {}
    for name in names:
        train = convert(splits["train"], demo, name, CANDIDATES[name])
        val = convert(splits["val"], demo, name, CANDIDATES[name])
        groups = pcr_format.read_index(train).num_scan_groups
        models = {
            g: [trained_at(train, g, args.epochs, seed) for seed in range(args.seeds)] for g in range(1, groups + 1)
        }
        accuracies = [np.mean([accuracy(m, val) for m in models[g]]) for g in range(1, groups + 1)]
        print(f"  {name:<11} groups 1..{groups}: " + " ".join(f"{a:.3f}" for a in accuracies), flush=True)
        ladders[name] = (groups, similarities(train, models[groups][0], groups), tfliquid.pcr.inspect(train))
    print(
        "\nThe autotuner's measure of each group for the model trained at full fidelity: cosine similarity of its loss"
    )
    print("gradient with the full-fidelity one (the tuner takes the lowest group >= 0.8), at the group's bytes:")
    for name, (groups, similarity, info) in ladders.items():
        cells = [f"{similarity[g]:.2f}@{info.scan_groups[g - 1].percent_of_full / 100:.2f}" for g in range(1, groups)]
        chosen = next((g for g in range(1, groups) if similarity[g] >= 0.8), groups)
        share = info.scan_groups[chosen - 1].percent_of_full / 100
        print(f"  {name:<11} " + " ".join(cells) + f"  -> group {chosen}, {share:.2f} of the bytes")


if __name__ == "__main__":
    main()
