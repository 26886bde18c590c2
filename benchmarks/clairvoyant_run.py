"""The real multi-process run of issue 18: N worker processes on this machine, each with its own in-memory cache
(as separate hosts would have) and its own read link (tfliquid's read throttle is per process), each reading its
slice of a seeded order of a PCR dataset's records, epoch after epoch, through `tfliquid.minio_cache`.

    python -m benchmarks.clairvoyant_run [--workers 2] [--capacity 0.1] [--epochs 6] [--bandwidth 4e6]

Items are whole record files, read through the throttle; the fetched bytes are padded to the largest record's
size so that a byte budget holds a whole number of items, as the unit-size simulator assumes (the reads, and so
the storage bytes and times, are the records' own). Lookups run one at a time (`num_parallel_calls=1`), in the
order's sequence, as the simulator replays them. Per worker and policy: hit ratio over the epochs after the
first, storage bytes (prefetch reads included), and the median epoch time of those epochs. The clairvoyant
policy runs with and without Lobster's prefetch (0.5 background reads per read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

# The runs: a cache policy and Lobster's prefetch bandwidth (background reads per read; 0: none).
RUNS = {
    "minio": ("minio", 0.0),
    "lru": ("lru", 0.0),
    "clairvoyant": ("clairvoyant", 0.0),
    "clairvoyant+prefetch": ("clairvoyant", 0.5),
}


def run_worker(
    dataset: str, run_name: str, workers: int, worker: int, capacity: float, epochs: int, seed: int, bandwidth: float
) -> dict:
    """One worker's run (in this process): per-epoch hits, misses, prefetch reads, storage bytes and seconds."""

    import tfliquid
    from tfliquid._common.timing import timed_pass
    from tfliquid.order import SeededOrder

    policy, prefetch_bandwidth = RUNS[run_name]
    fetch, num_items = record_fetch(dataset)
    order = SeededOrder(num_items, seed, workers, worker)
    slots = int(capacity * num_items)
    cache = tfliquid.MinIOCache(
        item_budget(fetch, slots, num_items), policy=policy, order=order if policy == "clairvoyant" else None
    )
    tfliquid.io.set_read_bandwidth(bandwidth)
    result = {"epochs": []}
    for epoch in range(epochs):
        before = tfliquid.io.read_stats()["bytes_read"]
        keys = order.dataset(epochs=1, first_epoch=epoch)
        reads = keys.apply(
            tfliquid.minio_cache(
                fetch, cache=cache, num_parallel_calls=1, deterministic=True, prefetch_bandwidth=prefetch_bandwidth
            )
        )
        seconds = timed_pass(reads).seconds  # the iterator's teardown apart (tfliquid._common.timing)
        stats = cache.stats().epochs[-1]
        storage = tfliquid.io.read_stats()["bytes_read"] - before
        result["epochs"].append(
            {
                "hits": stats.hits,
                "misses": stats.misses,
                "prefetch_reads": stats.prefetch_reads,
                "bytes": storage,
                "seconds": seconds,
            }
        )
    result["max_items"] = cache.stats().items
    result["slots"] = slots
    return result


def record_fetch(dataset: str, queue=None):
    """(fetch, number of records): fetch(record number) reads the record file through the read throttle (in read
    queue `queue` if given), padded to the largest record's size, so that a byte budget holds a whole number of
    items as the unit-size simulator assumes (the reads, and so the storage bytes and times, are the records' own)."""
    import tensorflow as tf

    import tfliquid
    from tfliquid.pcr import format as pcr_format

    index = pcr_format.read_index(dataset)
    paths = [os.path.join(dataset, r.path) for r in index.records]
    item_bytes = max(os.path.getsize(p) for p in paths)
    path_table = tf.constant(paths)
    padding = tf.constant(b"\0" * item_bytes)

    def fetch(key):
        data = tfliquid.io.read_file(tf.gather(path_table, key), queue=queue)
        return tf.strings.substr(tf.strings.join([data, padding]), 0, item_bytes)

    return fetch, len(paths)


def item_budget(fetch, slots: int, num_items: int) -> int:
    """The byte budget of a cache of `slots` items of `fetch`: slots x the encoded size of the item with the longest
    key (keys are part of it)."""
    import tensorflow as tf

    import tfliquid

    probe = tfliquid.MinIOCache(1 << 40)
    longest = tf.data.Dataset.from_tensors(tf.constant(num_items - 1, tf.int64))
    list(longest.apply(tfliquid.minio_cache(fetch, cache=probe)))
    return slots * probe.stats().bytes


def run(dataset: str, workers: int, capacity: float, epochs: int, seed: int, bandwidth: float) -> dict:
    """Every run (RUNS), its workers as concurrent processes; {run name: [worker results]}."""
    results = {}
    for run_name in RUNS:
        command = [sys.executable, "-m", "benchmarks.clairvoyant_run", "--worker-of", dataset, run_name]
        settings = ["--workers", str(workers), "--capacity", str(capacity), "--epochs", str(epochs)]
        settings += ["--seed", str(seed), "--bandwidth", str(bandwidth)]
        processes = [
            subprocess.Popen([*command, str(w), *settings], stdout=subprocess.PIPE, text=True) for w in range(workers)
        ]
        outputs = [p.communicate()[0] for p in processes]
        if any(p.returncode for p in processes):
            raise RuntimeError(f"a {run_name} worker failed")
        results[run_name] = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    return results


def summary(worker_results: list[dict]) -> dict:
    """Over the epochs after the first (the first fills the caches): hit ratio per worker, storage bytes and the
    median epoch time over workers (the slowest worker's, per epoch: the step waits for it)."""
    later = [r["epochs"][1:] for r in worker_results]
    ratios = [sum(e["hits"] for e in w) / sum(e["hits"] + e["misses"] for e in w) for w in later]
    epoch_times = [max(w[i]["seconds"] for w in later) for i in range(len(later[0]))]
    return {
        "hit_ratios": ratios,
        "bytes_per_epoch": sum(sum(e["bytes"] for e in w) for w in later) / len(later[0]),
        "prefetch_reads_per_epoch": sum(sum(e["prefetch_reads"] for e in w) for w in later) / len(later[0]),
        "epoch_seconds": statistics.median(epoch_times),
        "epoch_seconds_range": (min(epoch_times), max(epoch_times)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker-of", nargs=3, metavar=("DATASET", "RUN", "WORKER"), help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help="a PCR dataset (default: made from the shipped photos in --workdir)")
    parser.add_argument("--workdir", default="bench_data")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--capacity", type=float, default=0.1, help="per-worker cache, fraction of the records")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bandwidth", type=float, default=4e6, help="each worker's read link, bytes/s")
    args = parser.parse_args()
    if args.worker_of:
        dataset, run_name, worker = args.worker_of
        result = run_worker(
            dataset, run_name, args.workers, int(worker), args.capacity, args.epochs, args.seed, args.bandwidth
        )
        print(json.dumps(result))
        return
    print(
        json.dumps(
            run(
                records_dataset(args.workdir) if args.dataset is None else args.dataset,
                args.workers,
                args.capacity,
                args.epochs,
                args.seed,
                args.bandwidth,
            )
        )
    )


def records_dataset(workdir: str) -> str:
    """A PCR dataset of 500 records of 4 crops each (128x128) of the shipped photos, made once per workdir."""
    import tfliquid

    from benchmarks import common

    path = os.path.join(workdir, "pcr-500x4")
    if not os.path.exists(os.path.join(path, "index.pcrindex")):
        tfliquid.pcr.convert(common.photo_folder(workdir, 200, 128), path, images_per_record=4, progress=False)
    return path


if __name__ == "__main__":
    main()
