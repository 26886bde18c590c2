"""Clairvoyant caching (issue 18): the simulator's table, and the real multi-process run against it.

    python -m benchmarks.clairvoyant [--items 20000] [--epochs 8] [--skip-real-run]

1. Simulator (tfliquid.cache.multiworker): hit ratio of minio, lru, nopfs, clairvoyant and opt for 1, 2, 4 and 8
   workers at per-worker capacities of 5, 10, 25 and 50% of the items; each worker reads its slice of a seeded
   order; hit ratios over the epochs after the first, averaged over workers.
2. Real run (benchmarks.clairvoyant_run): 2 worker processes, each with its own memory cache of 10% of a PCR
   dataset's 500 records and its own 4 MB/s read link, for minio, lru and clairvoyant (without and with prefetch);
   hit ratio, storage bytes and epoch time (the slower worker's), beside the simulator's hit ratio for the same
   order and capacity.
Targets: clairvoyant within 1 point of opt and >= nopfs and minio at every point of the table; >= 2.5x minio at 4
workers and 6.25%; in the real run fewer storage bytes and a shorter epoch than minio, and the hit ratio within
1 point of the simulator's.
"""

from __future__ import annotations

import argparse
import os

from tfliquid.cache import multiworker

from benchmarks import clairvoyant_run, common

WORKERS = (1, 2, 4, 8)
CAPACITIES = (0.05, 0.10, 0.25, 0.50)


def simulator_table(items: int, epochs: int, seed: int) -> dict:
    table = {}
    for workers in WORKERS:
        for capacity in CAPACITIES:
            results = multiworker.simulate_workers(multiworker.POLICIES, items, workers, capacity, epochs, seed)
            table[workers, capacity] = {r.policy: r.hit_ratio for r in results}
    return table


def print_table(table: dict) -> None:
    print(f"{'workers':>7}{'capacity':>10}" + "".join(f"{p:>13}" for p in multiworker.POLICIES))
    for (workers, capacity), ratios in table.items():
        print(f"{workers:>7}{capacity:>10.0%}" + "".join(f"{ratios[p]:>13.4f}" for p in multiworker.POLICIES))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default="bench_data")
    parser.add_argument("--skip-real-run", action="store_true")
    args = parser.parse_args()

    table = simulator_table(args.items, args.epochs, args.seed)
    print(f"Simulator: {args.items} items, {args.epochs} epochs; hit ratio per worker over epochs 1-{args.epochs - 1}")
    print_table(table)
    gap = max(r["opt"] - r["clairvoyant"] for r in table.values())
    margin = min(min(r["clairvoyant"] - r["nopfs"], r["clairvoyant"] - r["minio"]) for r in table.values())
    four = multiworker.simulate_workers(("minio", "clairvoyant"), args.items, 4, 0.0625, args.epochs, args.seed)
    print("\nTargets:")
    common.verdict("largest gap opt - clairvoyant over the table (points)", gap * 100, 1.0, higher_is_better=False)
    common.verdict("smallest clairvoyant - max(nopfs, minio) over the table (points)", margin * 100, 0.0)
    common.verdict("clairvoyant / minio at 4 workers, 6.25% each", four[1].hit_ratio / four[0].hit_ratio, 2.5)
    if args.skip_real_run:
        return

    dataset = clairvoyant_run.records_dataset(args.workdir)
    records = len(os.listdir(os.path.join(dataset, "records")))
    workers, capacity, epochs = 2, 0.1, 6
    real = clairvoyant_run.run(dataset, workers, capacity, epochs, args.seed, bandwidth=4e6)
    simulated = {
        run_name: multiworker.simulate_workers(
            [policy], records, workers, capacity, epochs, args.seed, prefetch_bandwidth=prefetch
        )[0].hit_ratio
        for run_name, (policy, prefetch) in clairvoyant_run.RUNS.items()
    }
    print(
        f"\nReal run: {workers} worker processes, {records} records, a cache of {capacity:.0%} each, 4 MB/s per "
        f"worker, epochs 1-{epochs - 1}"
    )
    print(
        f"{'run':<22}{'hit ratio':>10}{'simulated':>11}{'MB/epoch':>10}{'prefetched/epoch':>18}"
        f"{'epoch s (median [range])':>27}"
    )
    summaries = {run_name: clairvoyant_run.summary(results) for run_name, results in real.items()}
    for run_name, s in summaries.items():
        ratio = sum(s["hit_ratios"]) / len(s["hit_ratios"])
        low, high = s["epoch_seconds_range"]
        print(
            f"{run_name:<22}{ratio:>10.4f}{simulated[run_name]:>11.4f}{s['bytes_per_epoch'] / 1e6:>10.2f}"
            f"{s['prefetch_reads_per_epoch']:>18.0f}{s['epoch_seconds']:>13.2f} [{low:.2f}-{high:.2f}]"
        )
    clairvoyant, minio = summaries["clairvoyant"], summaries["minio"]
    measured = sum(clairvoyant["hit_ratios"]) / workers
    common.verdict(
        "real run: clairvoyant / minio storage bytes",
        clairvoyant["bytes_per_epoch"] / minio["bytes_per_epoch"],
        1.0,
        higher_is_better=False,
    )
    common.verdict(
        "real run: clairvoyant / minio epoch time",
        clairvoyant["epoch_seconds"] / minio["epoch_seconds"],
        1.0,
        higher_is_better=False,
    )
    common.verdict(
        "real run: |measured - simulated| clairvoyant hit ratio (points)",
        abs(measured - simulated["clairvoyant"]) * 100,
        1.0,
        higher_is_better=False,
    )
    prefetched = summaries["clairvoyant+prefetch"]
    print(
        "real run, with prefetch (no target): |measured - simulated| hit ratio "
        f"{abs(sum(prefetched['hit_ratios']) / workers - simulated['clairvoyant+prefetch']) * 100:.2f} points; "
        f"storage bytes {prefetched['bytes_per_epoch'] / clairvoyant['bytes_per_epoch']:.3f}x and epoch time "
        f"{prefetched['epoch_seconds'] / clairvoyant['epoch_seconds']:.3f}x clairvoyant's without"
    )


if __name__ == "__main__":
    main()
