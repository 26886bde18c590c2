"""The seeded order (Python oracle and C++ op) and the clairvoyant policy in the C++ stores."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.cache import multiworker
from tfliquid.order import SeededOrder


@pytest.mark.parametrize(
    "num_items, seed, workers",
    [(1, 0, 1), (2, 1, 2), (7, 3, 3), (64, 5, 4), (1000, 2**64 - 1, 8), (4097, 11, 1)],
)
def test_every_item_once_per_epoch_across_workers_and_the_op_matches_the_oracle(num_items, seed, workers):
    orders = [SeededOrder(num_items, seed, workers, w) for w in range(workers)]
    for epoch in (0, 1, 17):
        slices = [order.keys(epoch) for order in orders]
        assert sorted(np.concatenate(slices).tolist()) == list(range(num_items))
        assert [len(s) for s in slices] == [o.slice_length for o in orders]
        for order, keys in zip(orders, slices):
            op_keys = tfliquid.load_ops().liquid_seeded_order_keys(epoch, order=order.spec).numpy()
            np.testing.assert_array_equal(op_keys, keys)
            np.testing.assert_array_equal(order.positions(keys, epoch), np.arange(order.start, order.start + len(keys)))
    if num_items > 2:  # epochs and seeds differ
        assert not np.array_equal(orders[0].global_order(0), orders[0].global_order(1))
        other_seed = SeededOrder(num_items, seed ^ 1, workers, 0)
        assert not np.array_equal(orders[0].global_order(0), other_seed.global_order(0))


def test_huge_orders_need_no_materialising():
    order = SeededOrder(2**40, 9, num_workers=2**30, worker_index=12345)
    keys = tfliquid.load_ops().liquid_seeded_order_keys(3, order=order.spec).numpy()
    np.testing.assert_array_equal(keys, order.keys(3))
    assert len(keys) == 1024 and keys.max() < 2**40 and len(set(keys.tolist())) == 1024


def test_the_same_order_in_another_process():
    code = "from tfliquid.order import SeededOrder; print(SeededOrder(500, 42, 3, 1).keys(5).tolist())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert other.strip() == str(SeededOrder(500, 42, 3, 1).keys(5).tolist())


def test_next_use_equals_a_brute_force_scan():
    order = SeededOrder(30, 4, num_workers=3, worker_index=2)
    trace = np.concatenate([order.keys(e) for e in range(12)])
    for t, item in enumerate(trace[: 3 * order.slice_length]):
        later = np.flatnonzero(trace[t + 1 :] == item)
        expected = t + 1 + later[0] if len(later) else None
        epoch, index = divmod(t, order.slice_length)
        found = order.next_use(int(item), epoch, index)
        if expected is None:  # beyond the 12 epochs scanned: the order still finds it, later
            assert found is None or order.clock(*found) >= len(trace)
        else:
            assert order.clock(*found) == expected


def test_dataset_yields_the_keys_epoch_after_epoch():
    order = SeededOrder(50, 1, num_workers=2, worker_index=1)
    keys = list(order.dataset(epochs=3).as_numpy_iterator())
    assert keys == np.concatenate([order.keys(e) for e in range(3)]).tolist()
    assert list(order.dataset(epochs=1, first_epoch=2).as_numpy_iterator()) == order.keys(2).tolist()


def _run_cache(
    order: SeededOrder, policy: str, slots: int, epochs: int, directory=None, prefetch_bandwidth=0.0, parallel=1
):
    """Reads `epochs` epochs of the worker's keys through a cache holding exactly `slots` same-size items;
    returns the cache, after checking the budget after every epoch."""

    def fetch(key):
        return tf.strings.as_string(key, width=200)  # every item 200 bytes

    item = tfliquid.MinIOCache(1 << 30)
    list(
        tf.data.Dataset.from_tensors(tf.constant(order.num_items - 1, tf.int64)).apply(
            tfliquid.minio_cache(fetch, cache=item)
        )
    )
    capacity = slots * item.stats().bytes
    cache = tfliquid.MinIOCache(
        capacity, directory=directory, policy=policy, order=order if policy == "clairvoyant" else None
    )
    for epoch in range(epochs):
        keys = order.dataset(epochs=1, first_epoch=epoch)
        cached = keys.apply(
            tfliquid.minio_cache(fetch, cache=cache, num_parallel_calls=parallel, prefetch_bandwidth=prefetch_bandwidth)
        )
        assert [int(v) for v in cached.as_numpy_iterator()] == order.keys(epoch).tolist()
        stats = cache.stats()
        assert stats.bytes <= capacity and stats.items <= slots
    return cache


@pytest.mark.parametrize("workers, slots", [(1, 20), (2, 10), (4, 6)])
def test_memory_store_clairvoyant_replays_the_simulator(workers, slots):
    order = SeededOrder(80, 3, num_workers=workers, worker_index=workers - 1)
    cache = _run_cache(order, "clairvoyant", slots, epochs=5)
    expected = multiworker.replay("clairvoyant", order, capacity=slots, epochs=5)
    assert [e.hits for e in cache.stats().epochs] == expected


@pytest.mark.parametrize("directory", [False, True])
@pytest.mark.parametrize("workers, slots, bandwidth", [(4, 6, 0.25), (4, 12, 1.0), (2, 10, 0.6)])
def test_prefetch_replays_the_simulator(tmp_path, directory, workers, slots, bandwidth):
    """Lobster's prefetch in the stores: the same hits and prefetch reads as the simulator's, step for step, the
    last epoch's included (neither prefetches into an epoch not yet read), the budget kept (_run_cache), every
    item correct."""
    order = SeededOrder(80, 3, num_workers=workers, worker_index=1)
    epochs = 5
    cache = _run_cache(
        order, "clairvoyant", slots, epochs, tmp_path / "cache" if directory else None, prefetch_bandwidth=bandwidth
    )
    hits, prefetched = multiworker.replay_worker("clairvoyant", order, slots, epochs, prefetch_bandwidth=bandwidth)
    stats = cache.stats().epochs
    assert [e.hits for e in stats] == hits.reshape(epochs, -1).sum(axis=1).tolist()
    expected_reads = prefetched.reshape(epochs, -1).sum(axis=1).tolist()
    assert [e.prefetch_reads for e in stats] == expected_reads
    assert [e.prefetched_items for e in stats] == expected_reads  # each planned item was admitted
    assert sum(expected_reads) > 0
    # Prefetch turns demand misses into hits: more than without it on the same order.
    plain = multiworker.replay("clairvoyant", order, slots, epochs)
    assert sum(e.hits for e in stats) > sum(plain)


def test_prefetch_under_autotuned_parallel_reads_hits_nearly_what_the_simulator_hits():
    """Parallel reads let a prefetch race its own item's demand read, which then fetches the item itself: a few
    hits fewer than the simulator's reads one by one (docs/cache.md), and as few storage reads within as many."""
    order = SeededOrder(400, 3, num_workers=4, worker_index=1)
    epochs, slots = 5, 30
    cache = _run_cache(order, "clairvoyant", slots, epochs, prefetch_bandwidth=1.0, parallel=tf.data.AUTOTUNE)
    hits, prefetched = multiworker.replay_worker("clairvoyant", order, slots, epochs, prefetch_bandwidth=1.0)
    stats = cache.stats().epochs
    got, expected = sum(e.hits for e in stats), int(hits.sum())
    print(f"\nAUTOTUNE: {got} hits, the simulator {expected}")
    assert 0.95 * expected <= got <= expected
    reads, simulated_reads = sum(e.misses + e.prefetch_reads for e in stats), (~hits).sum() + prefetched.sum()
    assert reads <= 1.05 * simulated_reads, (reads, simulated_reads)


def test_prefetch_needs_a_cache_that_knows_the_future():
    keys = tf.data.Dataset.range(3)
    with pytest.raises(ValueError, match="needs a cache that knows the keys' future"):
        keys.apply(tfliquid.minio_cache(tf.identity, 1000, prefetch_bandwidth=1.0))
    order = SeededOrder(3, 0)
    cache = tfliquid.MinIOCache(1000, policy="clairvoyant", order=order)
    with pytest.raises(ValueError, match="prefetch_bandwidth must be a number of reads >= 0"):
        keys.apply(tfliquid.minio_cache(tf.identity, cache=cache, prefetch_bandwidth=-1))


def test_on_one_worker_clairvoyant_hits_what_minio_hits():
    order = SeededOrder(100, 8)
    clairvoyant = _run_cache(order, "clairvoyant", 30, epochs=4)
    minio = _run_cache(order, "minio", 30, epochs=4)
    assert [e.hits for e in clairvoyant.stats().epochs] == [e.hits for e in minio.stats().epochs] == [0, 30, 30, 30]


@pytest.mark.slow
def test_directory_store_evicts_for_a_process_holding_it_alone(tmp_path):
    order = SeededOrder(80, 3, num_workers=4, worker_index=0)
    memory = _run_cache(order, "clairvoyant", 6, epochs=4)
    directory = _run_cache(order, "clairvoyant", 6, epochs=4, directory=tmp_path / "cache")
    assert [e.hits for e in directory.stats().epochs] == [e.hits for e in memory.stats().epochs]
    assert sum(e.hits for e in directory.stats().epochs) > 0
    code = f"import tfliquid\ntfliquid.MinIOCache({directory.capacity_bytes}, directory={str(tmp_path / 'cache')!r})\n"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert other.returncode != 0
    assert "is in use by another process whose cache policy evicts" in other.stderr


@pytest.fixture(scope="module")
def pcr_of_single_images(tmp_path_factory) -> str:
    """24 small crops of the shipped photos (3 classes), one per record."""
    from tfliquid.samples.photos import load_photos

    root = tmp_path_factory.mktemp("clairvoyant")
    photos = [photo.convert("RGB") for _, photo in load_photos()]
    rng = np.random.default_rng(0)
    for i in range(24):
        photo, side = photos[i % len(photos)], int(rng.integers(40, 96))
        x, y = int(rng.integers(0, photo.width - side)), int(rng.integers(0, photo.height - side))
        (root / "photos" / f"class{i % 3}").mkdir(parents=True, exist_ok=True)
        photo.crop((x, y, x + side, y + side)).save(root / "photos" / f"class{i % 3}" / f"{i:03d}.jpg", quality=90)
    tfliquid.pcr.convert(str(root / "photos"), str(root / "pcr"), images_per_record=1, progress=False)
    return str(root / "pcr")


def test_a_restarted_worker_ranks_and_evicts_what_its_directory_holds(pcr_of_single_images, tmp_path):
    """A worker that opens its directory again (a restart at epoch 5) goes on as if it had never stopped: the items
    its first life left are evicted by the same rule as the ones it admits (they stayed forever, and the restarted
    worker hit fewer than on an empty directory)."""
    path = pcr_of_single_images
    order = SeededOrder(tfliquid.PCRDataset(path).num_records, seed=0, num_workers=2, worker_index=0)
    capacity = 9000  # 3 to 5 of the records of a slice of 12

    def hits(directory, first_epoch, epochs):
        cache = tfliquid.MinIOCache(capacity, directory=str(directory), policy="clairvoyant", order=order)
        ds = tfliquid.PCRDataset(
            path, decode=False, cache=cache, epochs=epochs, first_epoch=first_epoch, num_parallel_reads=1, shuffle=False
        )
        assert sum(1 for _ in ds) == sum(order.slice_length for _ in range(epochs))
        stats = cache.stats()
        cache.release()  # the process lets the directory go, as one that stops
        return [epoch.hits for epoch in stats.epochs]

    uninterrupted = hits(tmp_path / "uninterrupted", 0, 10)
    first_life = hits(tmp_path / "restarted", 0, 5)
    assert first_life == uninterrupted[:5]
    assert hits(tmp_path / "restarted", 5, 5) == uninterrupted[5:]


def test_a_restarted_lru_worker_evicts_what_its_directory_holds(tmp_path):
    """The items a first life left are the least recently used of a restarted one: evicted first, so the directory
    stays within its budget (they were never evicted, and new items were admitted beyond it)."""

    def fetch(key):
        return tf.strings.as_string(key, width=200)  # with two-digit keys, every item the same size

    def read(keys, cache):
        list(tf.data.Dataset.from_tensor_slices(keys).apply(tfliquid.minio_cache(fetch, cache=cache)))
        stats = cache.stats()
        cache.release()
        return stats

    item = read(np.array([10]), tfliquid.MinIOCache(1 << 20)).bytes
    open_cache = lambda: tfliquid.MinIOCache(10 * item, directory=str(tmp_path / "lru"), policy="lru")  # noqa: E731
    assert read(np.arange(10, 30), open_cache()).items == 10
    restarted = read(np.arange(30, 50), open_cache())
    assert restarted.items == 10 and restarted.bytes <= 10 * item


def test_a_worker_resuming_at_a_later_epoch_tells_minio_cache_each_epoch():
    """A new cache (a restarted process) cannot place reads it counts from epoch 0 in epoch 4; told each epoch's
    number, it ranks them as the order says."""
    order = SeededOrder(200, 0, num_workers=4, worker_index=0)
    cache = tfliquid.MinIOCache(1 << 20, policy="clairvoyant", order=order)  # room for every item
    fetch = lambda key: tf.fill([100], key)  # noqa: E731
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"tell minio_cache each epoch's number \(epoch=\)"):
        list(order.dataset(epochs=1, first_epoch=4).apply(tfliquid.minio_cache(fetch, cache=cache)))
    cache = tfliquid.MinIOCache(1 << 20, policy="clairvoyant", order=order)
    resumed = order.epochs_dataset(2, first_epoch=4).flat_map(
        lambda e: tf.data.Dataset.from_tensor_slices(order.epoch_keys(e)).apply(
            tfliquid.minio_cache(fetch, cache=cache, epoch=e)
        )
    )
    assert [int(x[0]) for x in resumed.as_numpy_iterator()] == order.keys(4).tolist() + order.keys(5).tolist()
    assert [e.hits for e in cache.stats().epochs] == [0, len(set(order.keys(4)) & set(order.keys(5)))]


def test_clairvoyant_refuses_what_it_cannot_plan():
    with pytest.raises(ValueError, match="needs the keys' seeded order"):
        tfliquid.MinIOCache(1000, policy="clairvoyant")
    order = SeededOrder(10, 0, num_workers=2, worker_index=0)
    cache = tfliquid.MinIOCache(1000, policy="clairvoyant", order=order)
    strings = tf.data.Dataset.from_tensor_slices(["a.jpg"]).apply(tfliquid.minio_cache(tf.identity, cache=cache))
    with pytest.raises(tf.errors.InvalidArgumentError, match="got 'string:a.jpg', which is not an item of an order"):
        list(strings)
    other_worker = SeededOrder(10, 0, num_workers=2, worker_index=1).dataset(epochs=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="which its seeded order does not give it"):
        list(other_worker.apply(tfliquid.minio_cache(lambda k: tf.strings.as_string(k), cache=cache)))
    with pytest.raises(ValueError, match="num_workers"):
        SeededOrder(3, 0, num_workers=4)


@pytest.mark.slow
def test_example_runs_both_set_ups():
    """examples/clairvoyant_workers.py: under tf.distribute and on tf.data service, each trainer's clairvoyant
    cache hits more than MinIO on the same slice."""
    example = Path(__file__).resolve().parent.parent / "examples" / "clairvoyant_workers.py"
    run = subprocess.run([sys.executable, str(example), "--epochs", "3"], capture_output=True, text=True, check=True)
    service = [line for line in run.stdout.splitlines() if line.startswith("tf.data service, trainer")]
    assert len(service) == 2
    for line in service:
        clairvoyant, minio = (float(x) for x in re.findall(r"clairvoyant ([\d.]+); MinIO ([\d.]+)", line)[0])
        assert clairvoyant > minio > 0
    assert "tf.distribute, input pipeline 0 of 1" in run.stdout


def test_prefetch_under_parallel_reads_keeps_items_and_budget():
    """With the transform's parallel map (its default), prefetches race their demand reads: every element is still
    its key's item, the budget holds, and prefetch reads are counted apart from the misses."""
    order = SeededOrder(400, 9, num_workers=2, worker_index=0)

    def fetch(key):
        return tf.strings.as_string(key, width=200)

    cache = tfliquid.MinIOCache(60 * 300, policy="clairvoyant", order=order)
    for epoch in range(4):
        keys = order.dataset(epochs=1, first_epoch=epoch)
        got = keys.apply(tfliquid.minio_cache(fetch, cache=cache, prefetch_bandwidth=1.0))
        assert sorted(int(v) for v in got.as_numpy_iterator()) == sorted(order.keys(epoch).tolist())
        stats = cache.stats()
        assert stats.bytes <= cache.capacity_bytes
    epochs = cache.stats().epochs
    assert all(e.hits + e.misses == order.slice_length for e in epochs)
    assert sum(e.prefetch_reads for e in epochs) > 0
    assert sum(e.hits for e in epochs[1:]) > 0
