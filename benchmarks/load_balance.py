"""Lobster's load balance: data-parallel workers on one node, their read threads equal or split by their misses.

    python -m benchmarks.load_balance [--workers 4] [--capacity 0.0625] [--batch 8] [--read-threads 8]
                                      [--epochs 4] [--rounds 3] [--bandwidth 4e6] [--prefetch-bandwidth 0.5]

W workers read a PCR dataset's records (benchmarks.clairvoyant_run's: 500 records of 4 crops of the shipped
photos), each its slice of one seeded order (`SeededOrder(500, 0, W, w)`), through its own clairvoyant cache of
`capacity` of the records (a directory each, under one shared directory) with Lobster's prefetch, storage
throttled for the whole node (`tfliquid.io.set_read_bandwidth`). The workers are replicas of one process, as under
`distribute_datasets_from_function`: every step takes each worker's next batch of `batch` records at once, and
the step ends when the slowest has its batch (the gradient exchange waits for it). Every read goes through its
worker's read queue (`tfliquid.io.read_file(..., queue=)`); the node has `read_threads` of them. Peers, one run
each per round, taking turns:
  - equal: every queue read_threads / W threads;
  - split: before each step, Lobster's split of the threads by each worker's reads in that step and the next
    (`tfliquid.cache.load_balance.ReadBalancer` of `predicted_step_misses`, replayed from the orders and the
    caches' rule).
Per run, over the epochs after the first (which fills the caches): the epoch time (the sum of its steps), the
straggler (per step, the slowest worker's wait for its batch over the workers' mean, averaged), the hit ratio,
and a check that every worker read exactly its order's records in every epoch. The simulator's model of the same
steps (`tfliquid.cache.load_balance.fetch_times`) is printed first: the gain predicted before it is run.

Targets (issue 55): simulated slowest fetch with the split <= 0.8x equal threads; measured epoch time >= 1.2x
faster with the split, hit ratio unchanged, every record read once per epoch per its order.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

import numpy as np

from benchmarks import clairvoyant_run, common


def pipelines(dataset: str, args, root: str):
    """Per worker: (its SeededOrder, its cache, its dataset of batches of (record number, record bytes))."""
    import tensorflow as tf

    import tfliquid
    from tfliquid.order import SeededOrder

    made = []
    for worker in range(args.workers):
        fetch, num_items = clairvoyant_run.record_fetch(dataset, queue=f"worker{worker}")
        order = SeededOrder(num_items, args.seed, args.workers, worker)
        keyed = lambda key, fetch=fetch: (key, fetch(key))  # noqa: E731 - the item carries its key, for the check
        budget = clairvoyant_run.item_budget(keyed, _slots(args, num_items), num_items)
        cache = tfliquid.MinIOCache(
            budget, directory=os.path.join(root, f"worker{worker}"), policy="clairvoyant", order=order
        )
        # One cache pass per epoch, told its epoch: the stats count each epoch's hits.
        reads = order.epochs_dataset(args.epochs).flat_map(
            lambda epoch, order=order, cache=cache, keyed=keyed: tf.data.Dataset.from_tensor_slices(
                order.epoch_keys(epoch)
            ).apply(
                tfliquid.minio_cache(
                    keyed,
                    cache=cache,
                    num_parallel_calls=args.read_threads,
                    deterministic=True,
                    prefetch_bandwidth=args.prefetch_bandwidth,
                    epoch=epoch,
                )
            )
        )
        # A parallel call holds a pipeline thread while its read waits: a pool of the node's threads for each
        # worker, so that its queue, not the pool, bounds its reads in flight.
        options = tf.data.Options()
        options.threading.private_threadpool_size = args.read_threads
        made.append((order, cache, reads.batch(args.batch).prefetch(1).with_options(options)))
    return made


def _slots(args, num_items: int) -> int:
    return int(round(args.capacity * num_items))


def run(dataset: str, args, split: bool, predicted: np.ndarray) -> dict:
    """One run: every step's per-worker waits, epoch times, hit ratio, and whether each epoch read its order."""
    import tfliquid
    from tfliquid.cache.load_balance import ReadBalancer

    queues = [f"worker{w}" for w in range(args.workers)]
    balancer = ReadBalancer(queues, args.read_threads, predicted)
    with tempfile.TemporaryDirectory(dir=args.workdir) as root:
        made = pipelines(dataset, args, root)
        iterators = [iter(batches) for _, _, batches in made]
        steps = predicted.shape[1]
        waits = np.zeros((args.workers, steps))
        keys = [[] for _ in made]
        tfliquid.io.set_read_bandwidth(args.bandwidth)
        try:
            if not split:
                balancer.equal()
            for step in range(steps):
                if split:
                    balancer.step(step)
                started = time.perf_counter()

                def take(w, step=step, started=started):
                    batch = next(iterators[w])
                    waits[w, step] = time.perf_counter() - started
                    keys[w].extend(batch[0].numpy().tolist())

                threads = [threading.Thread(target=take, args=(w,)) for w in range(args.workers)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            tfliquid.io.set_read_bandwidth(None)
        stats = [cache.stats().epochs for _, cache, _ in made]
        orders = [order for order, _, _ in made]
    per_epoch = steps // args.epochs
    later = waits[:, per_epoch:]
    step_times = later.max(axis=0)
    hits = sum(e.hits for s in stats for e in s[1:])
    misses = sum(e.misses for s in stats for e in s[1:])
    every_record = all(
        keys[w][e * len(orders[w].keys(e)) : (e + 1) * len(orders[w].keys(e))] == orders[w].keys(e).tolist()
        for w in range(args.workers)
        for e in range(args.epochs)
    )
    return {
        "epoch_seconds": [float(step_times[e * per_epoch : (e + 1) * per_epoch].sum()) for e in range(args.epochs - 1)],
        "straggler": float(np.mean(later.max(axis=0) / np.maximum(later.mean(axis=0), 1e-9))),
        "hit_ratio": hits / max(hits + misses, 1),
        "every_record_once": every_record,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="bench_data")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--capacity", type=float, default=0.0625, help="each worker's cache, a fraction of the records")
    parser.add_argument("--batch", type=int, default=8, help="records per worker per step")
    parser.add_argument("--read-threads", type=int, default=8, help="the node's read threads")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bandwidth", type=float, default=4e6, help="the node's storage, bytes/s")
    parser.add_argument("--prefetch-bandwidth", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    from tfliquid.cache import load_balance
    from tfliquid.order import SeededOrder

    dataset = clairvoyant_run.records_dataset(args.workdir)
    _, num_items = clairvoyant_run.record_fetch(dataset)
    orders = [SeededOrder(num_items, args.seed, args.workers, w) for w in range(args.workers)]
    predicted = load_balance.predicted_step_misses(
        orders, _slots(args, num_items), args.epochs, args.batch, prefetch_bandwidth=args.prefetch_bandwidth
    )
    per_epoch = predicted.shape[1] // args.epochs
    model = load_balance.fetch_times(predicted[:, per_epoch:], args.read_threads)
    print(
        f"{num_items} records, {args.workers} workers, caches of {_slots(args, num_items)} records each, "
        f"{args.read_threads} read threads, {args.batch} records a step, {args.bandwidth / 1e6:g} MB/s"
    )
    print(
        f"model (storage reads per step, epochs 1-{args.epochs - 1}): slowest worker's fetch {model.equal:.2f} reads "
        f"with equal threads, {model.split:.2f} split ({model.ratio:.3f}x; target <= 0.8), bound {model.bound:.2f}"
    )
    results = {"equal": [], "split": []}
    for round_ in range(args.rounds):
        for name in common.turn_order(list(results), round_):
            results[name].append(run(dataset, args, name == "split", predicted))
    for name, runs in results.items():
        epochs = [s for r in runs for s in r["epoch_seconds"]]
        print(
            f"  {name:<6} epoch {statistics.median(epochs):.2f} s [{min(epochs):.2f}-{max(epochs):.2f}], straggler "
            f"{common.median_and_range([r['straggler'] for r in runs])}, hit ratio "
            f"{common.median_and_range([r['hit_ratio'] for r in runs])}, every record once per epoch: "
            f"{all(r['every_record_once'] for r in runs)}"
        )
    speedups = [
        statistics.median(e["epoch_seconds"]) / statistics.median(s["epoch_seconds"])
        for e, s in zip(results["equal"], results["split"], strict=True)
    ]
    print("  targets:")
    met = [common.verdict("epoch time, equal / split", speedups, 1.2)]
    met.append(common.verdict("model: slowest fetch, split / equal", model.ratio, 0.8, higher_is_better=False))
    print("\nall targets met" if all(met) else "\nsome targets missed")
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
