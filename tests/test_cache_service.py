"""CoorDL on tf.data service: partitioned caching (6.2) with a dispatcher and two worker processes, each caching
its static shard, and coordinated prep (6.3) with a job shared by two trainers through CrossTrainerCache."""

import collections
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time
import types

import pytest
import tensorflow as tf

import tfliquid
from tfliquid._common.ports import free_ports

service = tf.data.experimental.service

# A tf.data service worker in its own process, as on another machine, holding one cache per NAME=CAPACITY argument;
# it writes each cache's stats to STATS_PREFIX-NAME.json.
_WORKER_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    import tensorflow as tf, tfliquid
    dispatcher, port, stats_prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    worker = tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(
        dispatcher_address=dispatcher, worker_address=f"localhost:{port}", port=port))
    caches = {}
    for argument in sys.argv[4:]:
        name, capacity = argument.split("=")
        caches[name] = tfliquid.MinIOCache(int(capacity), name=name)
    while True:
        for name, cache in caches.items():
            epochs = cache.stats().epochs
            stats_path = f"{stats_prefix}-{name}.json"
            with open(stats_path + ".tmp", "w") as f:
                json.dump({"hits": [e.hits for e in epochs], "lookups": [e.hits + e.misses for e in epochs]}, f)
            os.replace(stats_path + ".tmp", stats_path)
        time.sleep(0.05)
""")

NUM_ITEMS, ITEM_SIZE = 80, 2000
CAPACITY_FRACTIONS_PER_WORKER = (0.3, 0.7)


def _worker_epochs(stats_paths, epoch, lookups, timeout=60):
    """Per worker, the hits of its pass `epoch`, once the workers' reports add up to `lookups` lookups."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reports = []
        for path in stats_paths:
            try:
                with open(path) as f:
                    reports.append(json.load(f))
            except (FileNotFoundError, json.JSONDecodeError):
                break
        else:
            done = [r for r in reports if len(r["lookups"]) > epoch]
            if len(done) == len(reports) and sum(r["lookups"][epoch] for r in done) == lookups:
                return [r["hits"][epoch] for r in done]
        time.sleep(0.05)
    raise AssertionError(f"the workers did not report epoch {epoch} in {timeout} s: {reports}")


@pytest.fixture(scope="module")
def partitioned_service(tmp_path_factory):
    """80 items of equal size, and a dispatcher (static sharding over two worker addresses) whose two worker
    processes each hold a cache of 0.3 and one of 0.7 of the items, named after the fraction: each test's pipeline
    names the cache it goes through."""
    root = tmp_path_factory.mktemp("partitioned")
    paths = []
    for i in range(NUM_ITEMS):  # equal sizes: a byte budget is a whole number of items
        path = root / f"{i:03d}.bin"
        path.write_bytes(os.urandom(ITEM_SIZE))
        paths.append(str(path))
    path_length = len(paths[0])
    key_length = len("string:") + path_length  # a cache key carries its dtype
    encoded_item = 16 + key_length + 4 + (8 + 8 + path_length) + (8 + 8 + ITEM_SIZE)  # docs/formats/cache.md
    capacities = {
        f"partitioned-{fraction}": int(fraction * NUM_ITEMS) * encoded_item
        for fraction in CAPACITY_FRACTIONS_PER_WORKER
    }
    dispatcher_port, *worker_ports = free_ports(3)
    dispatcher = service.DispatchServer(
        service.DispatcherConfig(port=dispatcher_port, worker_addresses=[f"localhost:{p}" for p in worker_ports])
    )
    stats_prefixes = [str(root / f"worker{i}") for i in range(2)]
    caches = [f"{name}={capacity}" for name, capacity in capacities.items()]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER_SCRIPT, f"localhost:{dispatcher_port}", str(port), stats_prefix, *caches]
        )
        for port, stats_prefix in zip(worker_ports, stats_prefixes)
    ]
    try:
        # A job started before both workers have registered would run on one of them: wait for both.
        deadline = time.monotonic() + 120
        while dispatcher._num_workers() < 2:
            assert time.monotonic() < deadline, "the worker processes did not register with the dispatcher"
            assert all(w.poll() is None for w in workers), "a worker process exited"
            time.sleep(0.1)
        yield types.SimpleNamespace(
            paths=paths, capacities=capacities, dispatcher=dispatcher, stats_prefixes=stats_prefixes, workers=workers
        )
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()


@pytest.mark.slow
@pytest.mark.parametrize("capacity_fraction_per_worker", CAPACITY_FRACTIONS_PER_WORKER)
def test_partitioned_caching_adds_the_workers_capacities(partitioned_service, capacity_fraction_per_worker):
    paths, num_items = partitioned_service.paths, NUM_ITEMS
    name = f"partitioned-{capacity_fraction_per_worker}"
    capacity = partitioned_service.capacities[name]
    stats_paths = [f"{prefix}-{name}.json" for prefix in partitioned_service.stats_prefixes]
    assert all(w.poll() is None for w in partitioned_service.workers), "a worker process exited"
    # Static sharding (the SHARD_HINT before the shuffle): each worker owns the same half of the keys every
    # epoch and shuffles it anew; its cache holds part of its half.
    keys = (
        tf.data.Dataset.from_tensor_slices(paths)
        .shard(tf.data.experimental.SHARD_HINT, tf.data.experimental.SHARD_HINT)
        .shuffle(num_items, reshuffle_each_iteration=True)
    )
    cache = tfliquid.MinIOCache(capacity, name=name)
    ds = keys.apply(tfliquid.minio_cache(lambda p: (p, tfliquid.io.read_file(p)), cache=cache)).apply(
        service.distribute(processing_mode=service.ShardingPolicy.HINT, service=partitioned_service.dispatcher.target)
    )
    expected_ratio = min(1.0, 2 * int(capacity_fraction_per_worker * num_items) / num_items)
    for epoch in range(3):
        got = {p.decode(): data for p, data in ds.as_numpy_iterator()}
        assert got == {p: pathlib.Path(p).read_bytes() for p in paths}  # every item once, hit or fetched
        hits = _worker_epochs(stats_paths, epoch, num_items)
        aggregate = sum(hits) / num_items
        if epoch == 0:
            assert aggregate == 0
        else:
            assert aggregate == pytest.approx(expected_ratio, abs=0.01)
            assert min(hits) > 0  # both workers' caches serve


@pytest.mark.slow
def test_coordinated_prep_runs_the_preprocessing_once_for_two_trainers(jpeg_files):
    paths = jpeg_files[:32]
    sizes = tf.constant([os.path.getsize(p) for p in paths], tf.int64)
    dispatcher = service.DispatchServer()
    worker = service.WorkerServer(service.WorkerConfig(dispatcher_address=dispatcher.target.split("://")[1]))

    def prepare(i):  # read (counted by tfliquid's reader) and decode: the work coordinated prep shares
        image = tf.io.decode_jpeg(tfliquid.io.read_file(tf.gather(tf.constant(paths), i)), channels=3)
        return i, tf.image.resize(image, [24, 24])

    prepared = tf.data.Dataset.range(len(paths)).repeat().map(prepare).batch(8)

    def trainer(trainer_id):
        return iter(
            prepared.apply(
                service.distribute(
                    processing_mode=service.ShardingPolicy.OFF,
                    service=dispatcher.target,
                    job_name="hp-search",
                    cross_trainer_cache=service.CrossTrainerCache(trainer_id=trainer_id),
                )
            )
        )

    before = tfliquid.io.read_stats()["bytes_read"]
    trainers = [trainer("trial-a"), trainer("trial-b")]
    steps = 100
    seen = {0: [], 1: []}
    for _ in range(steps):
        for t, it in enumerate(trainers):
            seen[t].append(next(it)[0].numpy().tolist())
    read = tfliquid.io.read_stats()["bytes_read"] - before
    per_element = float(tf.reduce_mean(tf.cast(sizes, tf.float64)))
    elements_prepared = read / per_element
    # Two trainers consumed 2 x 100 batches of 8. Independent jobs would have prepared all 1600 elements; the
    # shared job prepared each batch once: 800, plus what the worker's buffers ran ahead (150-200 seen).
    consumed = steps * 8
    assert consumed <= elements_prepared < 1.5 * consumed
    assert seen[0] == seen[1]  # and both trials trained on the very same batches
    del worker


@pytest.fixture(scope="module")
def pcr_photos(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("pcr") / "photos"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=3, seed=1, progress=False)
    return str(dst)


@pytest.mark.slow
def test_dynamic_sharding_reads_every_element_of_a_cached_pipeline_once(pcr_photos, liquid_photos):
    """Under ShardingPolicy.DYNAMIC the keys of minio_cache and the records of PCRDataset(cache=) are split
    between the workers: every element arrives exactly once, in each of two epochs. LiquidDataset(cache=), whose
    batches hold each format's share of a pass one worker reads whole, is refused in words, not with TensorFlow's
    "the dataset is not unary"."""
    service = tf.data.experimental.service
    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address)) for _ in range(2)]

    def distributed(ds, job_name):
        return ds.apply(
            service.distribute(
                processing_mode=service.ShardingPolicy.DYNAMIC, service=dispatcher.target, job_name=job_name
            )
        )

    keys = tf.data.Dataset.range(40).apply(
        tfliquid.minio_cache(lambda k: k * 2, cache=tfliquid.MinIOCache(1 << 20, name="dynamic-keys"))
    )
    images = tfliquid.PCRDataset(
        pcr_photos, decode=False, with_keys=True, shuffle=False, cache=tfliquid.MinIOCache(1 << 24, name="dynamic-pcr")
    )
    expected = collections.Counter(x["key"] for x in images.as_numpy_iterator())
    for epoch in range(2):
        assert sorted(distributed(keys, f"keys-{epoch}").as_numpy_iterator()) == list(range(0, 80, 2))
        got = collections.Counter(x["key"] for x in distributed(images, f"pcr-{epoch}").as_numpy_iterator())
        assert got == expected
    liquid = tfliquid.LiquidDataset(liquid_photos, batch_size=4, cache=tfliquid.MinIOCache(1 << 24, name="dynamic-l"))
    with pytest.raises(tf.errors.FailedPreconditionError) as raised:
        list(distributed(liquid, "liquid"))
    assert "LiquidDataset cannot be sharded dynamically" in raised.value.message
    for worker in workers:
        worker.stop()
