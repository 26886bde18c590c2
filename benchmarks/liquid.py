"""Liquid: a mixed-format dataset at the profiled ratio against every single format and every other ratio.

    python -m benchmarks.liquid [--images-per-class 100] [--size 512] [--bandwidth BYTES_PER_S] [--rounds 3]
                                [--batch-size 64]

The same JPEG crops of the shipped photos, decoded, stored as Liquid datasets (lossless: PNG, L3 and raw pixels)
at the 11 ratios 0:10 ... 10:0 of PNG:raw and of L3:raw, all read by `tfliquid.LiquidDataset` on every core
through one tfliquid read budget. The budget is chosen so that PNG alone is decode-bound and raw alone
storage-bound, at the same rate (raw's bytes per image x PNG's unthrottled images/s): the regime Liquid is for, and
where a mix gains most. The most it can gain there follows from the two formats' sizes and decode rates, and is
printed. Peers take turns, one pass each per round: 3 epochs through one pipeline (`LiquidDataset(epochs=3)`, as a
training job reads them; `--epochs-per-pass`), timed from the iterator's creation to its last element (tf.data's
teardown stall is printed apart); the median over rounds is reported, with the range. Each peer's files are read
once, untimed, before its pass (`common.page_cached`): this machine's proactive page-cache reclaim would
otherwise put its disk under the budget.
  - every ratio of PNG:raw and L3:raw; the profiler's choice (`tfliquid.liquid.profiling.profile` on a 256-image
    sample, the paper's binary search) and its predictions;
  - an FFCV-style mix: each image's format by a seeded coin with the chosen ratio's probability (so the counts are
    a binomial draw), read in a plain shuffled order: each batch's mix varies;
  - constant load (the paper's section 4.2): with a cache of half the dataset's bytes, the per-batch time of
    LiquidDataset(cache=...) against the uncached mix and a plain MinIO-cached mix (the same records through a
    first-come MinIO cache, hits falling wherever the shuffle puts them), after the cache is full;
  - for information, NVIDIA DALI's CPU pipeline decoding the same images as PNG files, unthrottled, when it
    imports (the Liquid paper's baseline; DALI cannot draw on tfliquid's read budget).
Targets (issue 14):
  1. the profiled PNG:raw mix >= 1.5 x the best single format (PNG alone, raw alone): the regime of the budget
     (with L3, which is half raw's size and about as cheap to decode through the pipeline, no mix gains: L3
     alone is the best ratio, and the profiler finds it);
  2. the profiled mix within 10% of the best of the 11 ratios;
  3. at every measured ratio, measured images/s within 10% of the profiler's prediction.
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.cache import cached, each_pass
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid import items as liquid_items
from tfliquid.liquid import profiling
from tfliquid.records import RecordDataset, record_bytes
from tfliquid.records.dataset import prefix_name, record_identities

from benchmarks import common, dali_peer

STEPS = profiling.STEPS


def write_ratio(folder: str, workdir: str, compact: str, weight: int) -> str:
    """The crops as a Liquid dataset at compact:raw = weight:STEPS-weight (made once)."""
    path = os.path.join(workdir, f"liquid-{compact}-{weight}")
    pairs = [(name, w) for name, w in ((compact, weight), ("raw", STEPS - weight)) if w]
    tfliquid.liquid.convert(
        folder,
        path,
        formats=[n for n, _ in pairs],
        ratio=[w for _, w in pairs],
        progress=False,
    )
    return path


def write_coin_mix(folder: str, workdir: str, compact: str, weight: int, seed: int) -> str:
    """FFCV's way: each image compact with probability weight/STEPS by a seeded coin, so the counts vary."""
    num_images = sum(len(files) for _, _, files in os.walk(folder))
    compact_count = int(np.random.default_rng(seed).binomial(num_images, weight / STEPS))
    path = os.path.join(workdir, f"coin-{compact}-{weight}-{seed}")
    tfliquid.liquid.convert(
        folder,
        path,
        formats=[compact, "raw"],
        ratio=[compact_count, num_images - compact_count],
        seed=seed,
        progress=False,
    )
    return path


def plain_minio_mix(path: str, cache: tfliquid.MinIOCache, seed: int) -> tf.data.Dataset:
    """A mixed dataset read as a user would with a MinIO cache and no batch composition: every record of every
    format in one shuffled list, through a first-come MinIO cache of record bytes, images in random order."""
    manifest = liquid_format.read_manifest(path)
    records = [r for f in manifest.formats for r in f.records]
    files = tf.constant([os.path.join(os.path.abspath(path), r.path) for r in records])
    sizes = tf.constant([r.num_bytes for r in records], tf.int64)
    header_crcs = record_identities(records)

    def one_pass(cache_pass):
        def open_record(i):
            file, size = tf.gather(files, i), tf.gather(sizes, i)
            name = prefix_name(file, size, tf.gather(header_crcs, i))
            source = cached(record_bytes(file, size), name, i, cache, cache_pass, with_hit=True)
            return RecordDataset(source, file, shuffle=True, seed=i, item_key="image")

        order = tf.data.Dataset.range(len(records)).shuffle(len(records), seed=seed, reshuffle_each_iteration=True)
        images = order.interleave(open_record, cycle_length=2, num_parallel_calls=2)
        return images.shuffle(256, seed=seed)

    def decoded(x):
        index = liquid_items.format_index(x["image"])
        return {**x, "image": liquid_items.decode_item(x["image"], index, manifest.channels)}

    return each_pass(cache, one_pass).map(decoded, num_parallel_calls=os.cpu_count(), deterministic=True)


def constant_load(path: str, batch_size: int, rounds: int) -> None:
    """Per-batch time and storage reads, after the cache is full: Liquid's cache vs plain MinIO vs no cache."""
    budget = liquid_format.dataset_bytes(liquid_format.read_manifest(path)) // 2
    liquid = tfliquid.LiquidDataset(path, batch_size=batch_size, seed=0, cache=budget)
    plain_cache = tfliquid.MinIOCache(budget)
    peers = {
        "no cache": tfliquid.LiquidDataset(path, batch_size=batch_size, seed=0),
        "plain MinIO (first come)": plain_minio_mix(path, plain_cache, seed=0),
        "LiquidDataset(cache=)": liquid,
    }
    passes = {name: common.pass_of(ds, batch_size) for name, ds in peers.items()}
    for run in passes.values():  # fills the caches
        run()
    times = {name: [] for name in peers}
    rates = {name: [] for name in peers}
    reads = {name: [] for name in peers}
    for _ in range(rounds):
        for name, run in passes.items():
            timing = run()
            rates[name].append(timing.rate)
            times[name] += timing.batch_seconds[1:-1]  # full batches after the first (pipeline start-up)
        for name, ds in peers.items():
            if name != "no cache":
                reads[name] += [int(np.sum(~b["cached"])) for b in ds.batch(batch_size).as_numpy_iterator()][:-1]
    print(f"\nConstant load: cache of half the bytes ({budget / 1e6:.1f} MB), per full batch after the first epoch")
    print(f"{'peer':<28}{'img/s':>16}{'batch ms mean':>15}{'CV':>7}{'storage reads/batch':>22}")
    for name in peers:
        mean = statistics.mean(times[name])
        cv = statistics.pstdev(times[name]) / mean
        storage = (
            f"{statistics.mean(reads[name]):.1f} (sd {statistics.pstdev(reads[name]):.2f})"
            if reads[name]
            else f"{batch_size} (all)"
        )
        print(
            f"{name:<28}{common.median_and_range(rates[name], '{:,.0f}'):>16}{mean * 1e3:>15.1f}{cv:>7.2f}{storage:>22}"
        )
    liquid.minio_cache.release()
    plain_cache.release()


def write_png_folder(folder: str, workdir: str) -> str:
    """The crops as PNG files (for DALI, which reads files)."""
    png = os.path.join(workdir, os.path.basename(folder) + "-png")
    if os.path.exists(png):
        return png
    for root, _, files in os.walk(folder):
        out = os.path.join(png + ".tmp", os.path.relpath(root, folder))
        os.makedirs(out, exist_ok=True)
        for name in files:
            Image.open(os.path.join(root, name)).save(os.path.join(out, os.path.splitext(name)[0] + ".png"))
    os.replace(png + ".tmp", png)
    return png


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 1,000 crops of 512 px: a short epoch's start (each stream's first record read through the shared budget)
    # would weigh on the CPU-bound mixes' rate, which the profiler predicts for a running pipeline.
    common.add_photo_arguments(parser, size=512)
    # A training job reads its epochs through one LiquidDataset(epochs=...) pipeline, which starts once.
    parser.add_argument("--epochs-per-pass", type=int, default=3, help="epochs each timed pass reads (one pipeline)")
    parser.add_argument("--bandwidth", type=float, help="read budget, bytes/s (default: see above)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    folder = common.photo_folder_of(args)
    workdir = os.path.join(args.workdir, f"liquid-{args.images_per_class}x{args.size}")
    os.makedirs(workdir, exist_ok=True)
    datasets = {(c, w): write_ratio(folder, workdir, c, w) for c in ("png", "l3") for w in range(STEPS + 1)}
    n = liquid_format.read_manifest(datasets["png", 0]).num_images
    bytes_per_image = {
        key: liquid_format.dataset_bytes(liquid_format.read_manifest(path)) / n for key, path in datasets.items()
    }

    def reader(path, batch_size=args.batch_size):
        dataset = tfliquid.LiquidDataset(path, batch_size=batch_size, seed=0, epochs=args.epochs_per_pass)
        return common.page_cached(path, common.pass_of(dataset, args.batch_size))

    singles = {"png": datasets["png", STEPS], "l3": datasets["l3", STEPS], "raw": datasets["png", 0]}
    free = common.round_robin({name: reader(path) for name, path in singles.items()}, args.rounds)
    free = {name: statistics.median(rates) for name, rates in free.items()}
    if args.bandwidth is None:
        # raw alone then reads as many images/s as PNG alone decodes: both formats at the same rate, PNG bound by
        # the CPU and raw by storage, where a mix gains most
        args.bandwidth = free["png"] * bytes_per_image["png", 0]
    print(
        f"{n} crops ({args.size}x{args.size}) of the shipped photos; {os.cpu_count()} cores; batch {args.batch_size}; "
        f"passes of {args.epochs_per_pass} epochs; {args.rounds} rounds, medians [ranges]"
    )
    print(
        "unthrottled (decode-bound) img/s: "
        + ", ".join(
            f"{name} {rate:,.0f} ({bytes_per_image[k] / 1e3:,.0f} KB/image)"
            for (name, rate), k in zip(free.items(), [("png", STEPS), ("l3", STEPS), ("png", 0)])
        )
    )
    print(f"read budget: {args.bandwidth / 1e6:.1f} MB/s")
    bound = max(
        min(
            profiling.predicted_rates(
                w,
                [bytes_per_image["png", STEPS], bytes_per_image["png", 0]],
                [free["png"], free["raw"]],
                args.bandwidth,
            )
        )
        for w in range(STEPS + 1)
    ) / max(free["png"], args.bandwidth / bytes_per_image["png", 0])
    print(f"the most a PNG:raw mix can gain over the better format alone, from these rates: {bound:.2f}x")

    profiles = {
        compact: profiling.profile(
            folder,
            f"{compact},raw",
            sample=256,
            read_bandwidth=args.bandwidth,
            batch_size=args.batch_size,
            epochs=3,
            progress=False,
        )
        for compact in ("png", "l3")
    }
    coin = {c: write_coin_mix(folder, workdir, c, profiles[c].chosen, seed=1) for c in ("png", "l3")}

    tfliquid.io.set_read_bandwidth(args.bandwidth)
    try:
        peers = {f"{c}:raw {w}:{STEPS - w}": reader(path) for (c, w), path in datasets.items()}
        # the coin mix in a plain shuffled order: one "batch" of the whole epoch
        peers.update({f"{c}:raw coin {profiles[c].ratio}": reader(path, batch_size=n) for c, path in coin.items()})
        rates = common.round_robin(peers, args.rounds)
        for compact in ("png", "l3"):
            report(compact, profiles[compact], rates, args.bandwidth)
        constant_load(datasets["png", profiles["png"].chosen], args.batch_size, args.rounds)
    finally:
        tfliquid.io.set_read_bandwidth(None)

    if dali_peer.available():
        png = write_png_folder(folder, args.workdir)
        dali = common.round_robin(
            {
                "DALI, PNG files": common.page_cached(png, dali_peer.image_folder_epoch(png, n * args.epochs_per_pass)),
                "PNG alone (LiquidDataset)": reader(singles["png"]),
            },
            args.rounds,
        )
        print(
            "\nFor information, unthrottled: DALI's CPU pipeline on the same images as PNG files "
            f"{common.median_and_range(dali['DALI, PNG files'], '{:,.0f}')} img/s; LiquidDataset PNG alone "
            f"{common.median_and_range(dali['PNG alone (LiquidDataset)'], '{:,.0f}')} img/s"
        )
    else:
        print("\n(NVIDIA DALI does not import here: its PNG peer is left out)")


def report(compact: str, profile: profiling.LiquidProfile, rates: dict, bandwidth: float) -> None:
    print(
        f"\n{compact}:raw through {bandwidth / 1e6:.1f} MB/s; profiler (on {profile.sample} images) chose "
        f"{profile.ratio}, probing {', '.join(profile.rows[w].ratio for w in profile.probed) or 'nothing'}"
    )
    print(f"{'ratio':>8}{'predicted':>11}{'measured img/s':>20}{'meas/pred':>11}")
    medians = {}
    for w in range(STEPS + 1):
        name = f"{compact}:raw {w}:{STEPS - w}"
        medians[w] = statistics.median(rates[name])
        row = profile.rows[w]
        mark = "  <- profiled" if w == profile.chosen else ""
        print(
            f"{row.ratio:>8}{row.predicted:>11,.0f}{common.median_and_range(rates[name], '{:,.0f}'):>20}"
            f"{medians[w] / row.predicted:>11.2f}{mark}"
        )
    coin = f"{compact}:raw coin {profile.ratio}"
    print(f"{'coin ' + profile.ratio:>8}{'':>11}{common.median_and_range(rates[coin], '{:,.0f}'):>20}")
    chosen = rates[f"{compact}:raw {profile.chosen}:{STEPS - profile.chosen}"]
    best_single = max((rates[f"{compact}:raw {STEPS}:0"], rates[f"{compact}:raw 0:{STEPS}"]), key=statistics.median)
    best = max(medians.values())
    print("Targets:")
    gain = common.ratios(chosen, best_single)
    if compact == "png":
        common.verdict(f"profiled {compact} mix / best single format", gain, 1.5)
    else:
        # The budget makes PNG decode-bound and raw storage-bound, the regime the 1.5x is asked in. L3 costs about
        # as little CPU per image as raw through the pipeline and is half its size: L3 alone beats every mix at
        # any budget, and the profiler's job is to see it.
        print(f"  profiled {compact} mix / best single format: {common.median_and_range(gain)} (no target: {compact}")
        print(f"    alone is smaller than raw and about as cheap to decode, so no {compact}:raw mix can gain)")
    common.verdict(f"profiled {compact} mix / best of the 11 ratios (median)", statistics.median(chosen) / best, 0.9)
    worst = max(abs(medians[w] / profile.rows[w].predicted - 1) for w in range(STEPS + 1))
    common.verdict(f"largest |measured / predicted - 1| over the 11 {compact} ratios", worst, 0.1, False)
    print(f"  exact ratio / coin mix at {profile.ratio}: {common.median_and_range(common.ratios(chosen, rates[coin]))}")


if __name__ == "__main__":
    main()
