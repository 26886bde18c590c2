"""The data-stall analyzer's predictions and recommendation against measurements, on this machine.

    python -m benchmarks.analyzer [--images-per-class 64] [--read-bandwidth 3e6] [--rounds 5]

Setup: the sample CNN trained with model.fit on a PCR dataset of the shipped photos (640 crops of 160 px in records
of 64), in two setups: fetch-bound (reads through tfliquid's read throttle, the sample model's light preprocessing)
and prep-bound (no throttle, a heavy preprocessing). For each: one analysis of a 128-item subset, then every
configuration of a grid, the analysis' recommendation and a reference configuration (the whole dataset cached,
full fidelity, prep on 2 threads) measured as model.fit over the whole dataset, as a job runs one configuration:
a fit of its own per measurement, its epochs on one iterator (each a pass of the pipeline of its own), the first
(which traces and fills the cache) untimed, the rest timed until they last MEASURED_SECONDS; the rate is their
median epoch's. The configurations take turns round by round, each
round in its own seeded shuffled order, so that no configuration always follows the same neighbour.

Reported per configuration: its prediction and its measured rate (median and range over the rounds) and the error
of the prediction against the median; and the error of its prediction relative to the reference's against its
measurement relative to the reference's in the same round (the median over the rounds), which cancels a drift of
this machine's speed between the analysis and the measurements, as far as the CPU limits both. The recommendation is
judged by its measured rate over the best configuration's, each relative to the reference's in the same round.
Then Lobster's thread plan against AUTOTUNE (the pipeline alone, in turns) and StallMonitor's cost per step.
The benchmark reports; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

import keras
import tensorflow as tf

import tfliquid
from tfliquid._common.timing import timed_pass
from tfliquid.analysis import Change, pcr_pipeline, plan_threads, predict
from tfliquid.analysis.phases import EpochClock, training_rate
from tfliquid.samples import model as sample_model
from tfliquid.samples import photos as sample_photos

from benchmarks import common

BATCH = 32
SUBSET = 128
REFERENCE = Change(cache_fraction=1.0, scan_group=None, prep_parallelism=2)
MEASURED_SECONDS = 2.0  # timed epochs of one measurement: at least 2, and as many as last this long
TARGET = 0.10  # predictions and the recommendation within 10%


def heavy_preprocess(element):
    image = tf.cast(element["image"], tf.float32)
    for _ in range(6):
        image = tf.image.resize(tf.image.resize(image, [320, 320]), [160, 160])
    return tf.image.resize(image, [sample_model.IMAGE_SIZE] * 2) / 255.0, element["label"]


def pcr_dataset(workdir: str, images_per_class: int) -> str:
    pcr = os.path.join(workdir, f"pcr-{images_per_class}")
    if not os.path.exists(pcr):
        folder = common.photo_folder(workdir, images_per_class, 160)
        tfliquid.pcr.convert(folder, pcr, images_per_record=64, progress=False)
    return pcr


def measure(model, pipeline, change: Change, measured) -> float:
    """Items/s of `change` applied to `pipeline` in a model.fit of its own: the median of its timed epochs."""
    config = pipeline.replace(
        scan_group=pipeline.scan_group if change.scan_group is None else change.scan_group,
        prep_parallelism=change.prep_parallelism,
    )
    cache = tfliquid.MinIOCache(measured.cache_capacity(change)) if change.cache_fraction else None
    steps = pipeline.num_items // BATCH
    try:
        # One iterator over the epochs, each a pass of its own (the pipeline starts again): deleting an exhausted
        # iterator stalls for tenths of a second at times, which an epoch of a small dataset would count.
        clock = EpochClock(lambda seconds: len(seconds) >= 3 and sum(seconds[1:]) >= MEASURED_SECONDS)
        epochs = config.dataset(cache=cache).repeat()
        model.fit(epochs, steps_per_epoch=steps, epochs=1000, shuffle=False, verbose=0, callbacks=[clock])
    finally:
        if cache is not None:
            cache.release()
    return steps * BATCH / statistics.median(clock.seconds[1:])


def describe(change: Change) -> str:
    group = "full" if change.scan_group is None else str(change.scan_group)
    threads = "AUTOTUNE" if change.prep_parallelism is None else str(change.prep_parallelism)
    return f"cache {change.cache_fraction:4.0%}, group {group:>4}, prep {threads:>8}"


def validate(name: str, model, pipeline, grid: list[Change], rounds: int) -> dict:
    """One analysis, then the grid, its recommendation and REFERENCE measured in `rounds` rounds in turns."""
    start = time.perf_counter()
    report = tfliquid.analysis.analyze(model, pipeline, subset_items=SUBSET, progress=False)
    print(f"\n== {name} ==\n{report}\n")
    recommended = report.change or Change.as_it_is(report.measured)  # None: no change is predicted to help
    configs = list(dict.fromkeys([REFERENCE, *grid, recommended]))
    rates = {change: [] for change in configs}
    for round_ in range(rounds):
        for change in random.Random(round_).sample(configs, len(configs)):
            rates[change].append(measure(model, pipeline, change, report.measured))
    predicted = {change: predict(report.measured, change)["rate"] for change in configs}
    relative = {change: common.ratios(rates[change], rates[REFERENCE]) for change in configs}
    print(f"  {'configuration':40s} {'predicted':>9s} {'measured (median [range])':>26s}  error  error vs reference")
    errors, relative_errors = {}, {}
    for change in configs:
        errors[change] = predicted[change] / statistics.median(rates[change]) - 1
        expected = predicted[change] / predicted[REFERENCE]
        relative_errors[change] = statistics.median(expected / r - 1 for r in relative[change])
        label = describe(change) + (" *" if change == recommended else "")
        print(
            f"  {label:40s} {predicted[change]:9.0f} {common.median_and_range(rates[change], '{:.0f}'):>26s} "
            f"{errors[change]:+6.1%}  {relative_errors[change]:+6.1%}"
        )
    best = max(configs, key=lambda change: statistics.median(relative[change]))
    share = common.ratios(relative[recommended], relative[best])
    print(
        f"  * the recommendation ({describe(recommended)}) against the best measured ({describe(best)}), round by "
        f"round: {common.median_and_range(share)}; the analysis took {report.seconds:.0f} s, the setup "
        f"{time.perf_counter() - start:.0f} s"
    )
    return {"errors": errors, "relative_errors": relative_errors, "share": share}


def thread_plans(pipeline, rounds: int) -> list[float]:
    """Pipeline-only rates of Lobster's plan and AUTOTUNE, in turns: the plan's over AUTOTUNE's, round by round."""
    plan = plan_threads(pipeline, subset_items=SUBSET)
    print(f"\n{plan}")
    peers = {
        "Lobster plan": plan.apply(pipeline).dataset().with_options(plan.options()),
        "AUTOTUNE": pipeline.replace(prep_parallelism=None, read_parallelism=None).dataset(),
    }
    rates = common.round_robin({name: common.pass_of(ds.unbatch(), BATCH) for name, ds in peers.items()}, rounds)
    for name, values in rates.items():
        print(f"  {name:14s} {common.median_and_range(values, '{:.0f}')} items/s")
    return common.ratios(rates["Lobster plan"], rates["AUTOTUNE"])


def monitor_cost(model, pipeline, rounds: int = 7) -> float:
    """StallMonitor's cost per train step over the step's time: its op on the pipeline (us per batch through a
    cached pipeline with it and without, in turns) and its callback's hooks, timed directly."""
    data = pipeline.dataset().cache()
    for _ in data:
        pass
    monitor = tfliquid.keras.StallMonitor()
    peers = {"instrumented": monitor.instrument(data.repeat(20)), "plain": data.repeat(20)}
    for ds in peers.values():
        timed_pass(ds.take(1))
    passes = {name: (lambda ds=ds: timed_pass(ds)) for name, ds in peers.items()}
    per_batch = {name: [BATCH / r * 1e6 for r in rates] for name, rates in common.round_robin(passes, rounds).items()}
    monitor.on_train_begin()
    monitor.on_epoch_begin(0)
    next(iter(peers["instrumented"]))  # a batch taken, as a train step takes one
    monitor.on_train_batch_end(0)  # the check that the data is instrumented, once a fit: not timed
    start = time.perf_counter()
    for step in range(20_000):
        monitor.on_train_batch_begin(step)
        monitor.on_train_batch_end(step)
    per_step = (time.perf_counter() - start) / 20_000
    start = time.perf_counter()
    for epoch in range(50):
        monitor.on_epoch_begin(epoch)
        monitor.on_epoch_end(epoch, {})
    per_epoch = (time.perf_counter() - start) / 50
    steps = pipeline.num_items // BATCH
    step = BATCH / training_rate(model, data, steps, BATCH, min_seconds=2.0)
    added = max(0.0, statistics.median(per_batch["instrumented"]) - statistics.median(per_batch["plain"])) * 1e-6
    print(
        "\nStallMonitor, us per batch through the cached pipeline: "
        + ", ".join(f"{name} {common.median_and_range(values, '{:.0f}')}" for name, values in per_batch.items())
        + f"; its callback {per_step * 1e6:.1f} us per step and {per_epoch * 1e6:.0f} us per epoch; a train step "
        f"{step * 1e3:.2f} ms"
    )
    return (added + per_step + per_epoch / steps) / step


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images-per-class", type=int, default=64)
    parser.add_argument("--read-bandwidth", type=float, default=3e6, help="the fetch-bound setup's disk, bytes/s")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the configurations' measurements")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "tfliquid-bench-analyzer"))
    args = parser.parse_args()
    start = time.perf_counter()
    path = pcr_dataset(args.workdir, args.images_per_class)
    keras.utils.set_random_seed(0)
    model = sample_model.small_cnn(len(sample_photos.PHOTOS))
    tfliquid.io.set_read_bandwidth(args.read_bandwidth)
    try:
        fetch_bound = pcr_pipeline(path, sample_model.preprocess, BATCH, seed=0)
        grid = [Change(f, g, k) for f in (0.0, 0.5, 1.0) for g in (None, 2) for k in (1, 2)]
        setups = {"fetch-bound": validate("fetch-bound", model, fetch_bound, grid, args.rounds)}
    finally:
        tfliquid.io.set_read_bandwidth(None)
    prep_bound = pcr_pipeline(path, heavy_preprocess, BATCH, seed=0)
    grid = [Change(f, None, k) for f in (0.0, 1.0) for k in (1, 2)]
    setups["prep-bound"] = validate("prep-bound", model, prep_bound, grid, args.rounds)
    plan = thread_plans(prep_bound, 2 * args.rounds + 1)
    monitor = monitor_cost(model, prep_bound)
    print(f"\nsummary (targets: within {TARGET:.0%})")
    for name, judged in setups.items():
        errors, relative = (sorted(abs(e) for e in judged[key].values()) for key in ("errors", "relative_errors"))
        print(
            f"  {name}: |prediction error| median {statistics.median(errors):.1%}, largest {errors[-1]:.1%}; against "
            f"the reference: median {statistics.median(relative):.1%}, largest {relative[-1]:.1%}; the "
            f"recommendation / the best measured {common.median_and_range(judged['share'])}"
        )
    print(f"  thread plan / AUTOTUNE (the pipeline alone) {common.median_and_range(plan)}")
    print(f"  StallMonitor's cost per train step {monitor:.2%}")
    print(f"  the whole run took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
