"""Clairvoyant caching for data-parallel input: every worker reads its slice of one seeded order through its own
cache, which plans from that worker's known future (docs/cache.md, "Clairvoyant caching").

    python examples/clairvoyant_workers.py [--epochs 4] [--capacity 0.1]

Two set-ups, both run here on the shipped photos (a PCR dataset of 250 records; items are whole record files):

1. `tf.distribute`: `distribute_datasets_from_function` hands each input pipeline its `InputContext`; pipeline i
   of n reads `SeededOrder(num_records, seed, n, i)`. With `MultiWorkerMirroredStrategy` on n hosts each host
   is one pipeline; here one host, one pipeline, two replicas on two logical CPUs.
2. tf.data service with static assignment: each trainer has its own input worker (a dispatcher and a worker, which
   could run on an input host of its own), serving that trainer's slice; the cache lives in the worker process.
   A dispatcher shared by all trainers with `ShardingPolicy.DYNAMIC` would hand splits to whichever worker asks
   first: no worker's future would be known, and the clairvoyant policy refuses keys outside its slice.

Each trainer prints its cache's hit ratio beside MinIO's on the same slice.
"""

from __future__ import annotations

import argparse
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402
from tfliquid.order import SeededOrder  # noqa: E402
from tfliquid.pcr import format as pcr_format  # noqa: E402
from tfliquid.samples import photos  # noqa: E402

SEED = 0


def records_of(dataset_dir: str) -> list[str]:
    return [os.path.join(dataset_dir, r.path) for r in pcr_format.read_index(dataset_dir).records]


def cached_records(records: list[str], order: SeededOrder, cache: tfliquid.MinIOCache, epochs: int):
    """The worker's record files, epoch after epoch in its seeded order, through `cache`; then the JPEGs' sizes
    (a stand-in for decoding and augmenting)."""
    paths = tf.constant(records)
    reads = order.dataset(epochs=epochs).apply(
        tfliquid.minio_cache(
            lambda key: tfliquid.io.read_file(tf.gather(paths, key)), cache=cache, num_parallel_calls=1
        )
    )
    return reads.map(tf.strings.length).batch(25)


def capacity_bytes(records: list[str], fraction: float) -> int:
    """A budget of `fraction` of the records, at the records' average size (plus the cache's per-item overhead)."""
    sizes = [os.path.getsize(r) + 64 for r in records]
    return int(fraction * sum(sizes))


def hit_ratio(cache: tfliquid.MinIOCache) -> str:
    """Over the whole run: one pass of the cache reads every epoch (the policy counts epochs by the reads)."""
    (run,) = cache.stats().epochs
    return f"{run.hit_ratio:.3f}"


def with_tf_distribute(records: list[str], epochs: int, fraction: float) -> None:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    caches = {}

    def dataset_fn(context: tf.distribute.InputContext):
        order = SeededOrder(len(records), SEED, context.num_input_pipelines, context.input_pipeline_id)
        cache = tfliquid.MinIOCache(capacity_bytes(records, fraction), policy="clairvoyant", order=order)
        caches[context.input_pipeline_id] = cache
        # One pass over all epochs: the clairvoyant policy counts the epochs by the reads it sees.
        return cached_records(records, order, cache, epochs)

    distributed = strategy.distribute_datasets_from_function(dataset_fn)
    batches = sum(1 for _ in distributed)
    for pipeline, cache in caches.items():
        print(
            f"tf.distribute, input pipeline {pipeline} of {len(caches)}: {batches} batches; hit ratio over {epochs} "
            f"epochs {hit_ratio(cache)} (one pipeline reads every item each epoch: the clairvoyant policy keeps what "
            "MinIO would)"
        )


def with_tf_data_service(records: list[str], epochs: int, fraction: float, trainers: int) -> None:
    for trainer in range(trainers):
        order = SeededOrder(len(records), SEED, trainers, trainer)
        dispatcher = tf.data.experimental.service.DispatchServer()
        address = dispatcher.target.split("://")[1]
        input_worker = tf.data.experimental.service.WorkerServer(
            tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
        )
        results = {}
        for policy in ("minio", "clairvoyant"):
            cache = tfliquid.MinIOCache(
                capacity_bytes(records, fraction), policy=policy, order=order if policy == "clairvoyant" else None
            )
            served = cached_records(records, order, cache, epochs).apply(
                tf.data.experimental.service.distribute(
                    processing_mode=tf.data.experimental.service.ShardingPolicy.OFF, service=dispatcher.target
                )
            )
            for _ in served:
                pass
            # The worker runs in this process here, so its cache's stats are readable from the trainer.
            results[policy] = hit_ratio(cache)
        input_worker.stop()  # would serve while referenced
        print(
            f"tf.data service, trainer {trainer} of {trainers}: hit ratio over {epochs} epochs: clairvoyant "
            f"{results['clairvoyant']}; MinIO {results['minio']}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--capacity", type=float, default=0.1, help="per-worker cache, fraction of the records")
    parser.add_argument("--trainers", type=int, default=2)
    args = parser.parse_args()
    # Two logical CPUs for two replicas; configured before TensorFlow initialises its devices.
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    with tempfile.TemporaryDirectory() as workdir:
        photos.write_image_folder(os.path.join(workdir, "photos"), images_per_class=50, size=96)
        tfliquid.pcr.convert(
            os.path.join(workdir, "photos"), os.path.join(workdir, "pcr"), images_per_record=2, progress=False
        )
        records = records_of(os.path.join(workdir, "pcr"))
        with_tf_distribute(records, args.epochs, args.capacity)
        with_tf_data_service(records, args.epochs, args.capacity, args.trainers)


if __name__ == "__main__":
    main()
