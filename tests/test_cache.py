"""The minio_cache transform with the in-memory store, on real JPEG files read through tfliquid's reader: hit
ratios under reshuffling, fetch only on misses, the budget, Keras epochs, parallel calls, the LRU baseline against
the simulator, and parameter errors."""

import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.cache import simulation


def _bytes_read():
    return tfliquid.io.read_stats()["bytes_read"]


def _keys(paths, seed=None):
    return tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)


def _contents(paths):
    return {p: pathlib.Path(p).read_bytes() for p in paths}


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75])
def test_every_epoch_after_the_first_hits_the_cached_fraction(jpeg_files, fraction):
    contents = _contents(jpeg_files)
    total = sum(len(c) for c in contents.values())
    # An item is (path, file bytes); its budget size (docs/formats/cache.md) is the file plus a fixed overhead,
    # fixed because every path here has the same length.
    path_length = len(jpeg_files[0].encode())
    assert all(len(p.encode()) == path_length for p in jpeg_files)
    key_length = len("string:") + path_length  # a cache key carries its dtype
    overhead = 16 + key_length + 4 + (8 + 8 + path_length) + (8 + 8)
    dataset_bytes = total + overhead * len(jpeg_files)
    cache = tfliquid.MinIOCache(int(fraction * dataset_bytes))
    with_keys = _keys(jpeg_files).apply(
        tfliquid.minio_cache(lambda path: (path, tfliquid.io.read_file(path)), cache=cache)
    )
    orders = []
    for epoch in range(4):
        before = _bytes_read()
        got = list(with_keys.as_numpy_iterator())
        fetched = _bytes_read() - before
        orders.append([path for path, _ in got])
        assert {path.decode(): data for path, data in got} == contents  # hits serve exactly the file
        stats = cache.stats()
        assert stats.bytes <= cache.capacity_bytes
        this = stats.epochs[epoch]
        assert this.hits + this.misses == len(jpeg_files)
        if epoch == 0:
            assert fetched == total and this.hits == 0
            continue
        # Every cached item hits, every epoch; nothing more is admitted or evicted.
        assert this.hits == stats.epochs[1].hits == stats.items and this.admitted_items == 0
        # Byte hit ratio = capacity fraction, to within the one item that did not fit any more.
        assert stats.bytes / dataset_bytes == pytest.approx(fraction, abs=0.01)
        # Only the misses were fetched: every byte not cached, and no other.
        assert fetched == total - (stats.bytes - overhead * stats.items)
    assert len({tuple(o) for o in orders}) == 4  # the keys were reshuffled every epoch


def test_fetch_runs_only_on_misses(jpeg_files):
    paths = jpeg_files[:100]
    sizes = {p: os.path.getsize(p) for p in paths}
    cache = tfliquid.MinIOCache(sum(sizes.values()) // 3)
    ds = _keys(paths).apply(tfliquid.minio_cache(tfliquid.io.read_file, cache=cache))
    list(ds)
    cached_items = cache.stats().items
    for _ in range(2):
        before = _bytes_read()
        assert len(list(ds)) == len(paths)
        epoch = cache.stats().epochs[-1]
        assert epoch.misses == len(paths) - cached_items
        # Exactly the misses' files were read: every cached file was served without a read.
        missed_bytes = _bytes_read() - before
        assert sum(sizes.values()) - missed_bytes < cache.capacity_bytes


def test_budget_is_never_exceeded_and_counts_the_encoded_size(jpeg_files):
    paths = jpeg_files[:50]
    capacity = 100_000
    cache = tfliquid.MinIOCache(capacity)
    ds = tf.data.Dataset.from_tensor_slices(paths).apply(
        tfliquid.minio_cache(tfliquid.io.read_file, cache=cache, num_parallel_calls=1)
    )
    list(ds)
    # docs/formats/cache.md: 16 header + key + 4 CRC; per tensor 8 + 8 x rank, then a string is 8 + its length.
    used, items = 0, 0
    for p in paths:  # admitted in key order while each fits
        size = 16 + len(b"string:" + p.encode()) + 4 + 8 + 8 + os.path.getsize(p)
        if used + size <= capacity:
            used, items = used + size, items + 1
    stats = cache.stats()
    assert (stats.bytes, stats.items) == (used, items)
    assert stats.bytes <= capacity and items < len(paths)
    assert stats.epochs[0].admitted_bytes == used


def test_nested_outputs_and_decoded_images_round_trip(jpeg_files):
    paths = jpeg_files[:20]

    def fetch(path):
        image = tf.io.decode_jpeg(tfliquid.io.read_file(path), channels=3)
        return {"image": image, "shape": tf.shape(image), "path": path}

    cache = tfliquid.MinIOCache(1 << 30)
    ds = tf.data.Dataset.from_tensor_slices(paths).apply(tfliquid.minio_cache(fetch, cache=cache))
    assert ds.element_spec["image"].shape.as_list() == [None, None, 3]
    first = list(ds.as_numpy_iterator())
    second = list(ds.as_numpy_iterator())
    assert cache.stats().epochs[1].hits == len(paths)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a["image"], b["image"])
        assert a["image"].dtype == np.uint8 and list(a["shape"]) == list(a["image"].shape)


def test_integer_keys(jpeg_files):
    paths = tf.constant(jpeg_files[:10])
    cache = tfliquid.MinIOCache(1 << 20)
    ds = tf.data.Dataset.range(10).apply(
        tfliquid.minio_cache(lambda i: tfliquid.io.read_file(tf.gather(paths, i)), cache=cache)
    )
    assert list(ds.as_numpy_iterator()) == list(ds.as_numpy_iterator())
    assert cache.stats().epochs[1].hits == 10


def test_parallel_calls_with_repeated_keys(jpeg_files):
    paths = jpeg_files[:40]
    contents = _contents(paths)
    keys = tf.data.Dataset.from_tensor_slices(paths * 5).shuffle(200, seed=3)
    cache = tfliquid.MinIOCache(sum(len(c) for c in contents.values()) // 2)
    ds = keys.apply(
        tfliquid.minio_cache(
            lambda p: (p, tfliquid.io.read_file(p)), cache=cache, num_parallel_calls=8, deterministic=False
        )
    )
    for _ in range(3):
        got = list(ds.as_numpy_iterator())
        assert len(got) == 200 and all(contents[p.decode()] == data for p, data in got)
    stats = cache.stats()
    assert stats.bytes <= cache.capacity_bytes
    assert sum(e.admitted_items for e in stats.epochs) == stats.items  # each item admitted once


def test_survives_keras_epochs_and_partial_epochs(jpeg_files):
    paths = jpeg_files[:64]
    labels = {p: i % 2 for i, p in enumerate(paths)}
    label_table = tf.constant([labels[p] for p in paths])
    path_table = tf.constant(paths)
    cache = tfliquid.MinIOCache(sum(os.path.getsize(p) for p in paths) // 2)

    def fetch(i):
        return tfliquid.io.read_file(tf.gather(path_table, i)), tf.gather(label_table, i)

    def prepare(data, label):  # augmentation after the cache, as it should be
        image = tf.image.resize(tf.io.decode_jpeg(data, channels=3), [32, 32]) / 255.0
        return tf.image.random_flip_left_right(image), label

    ds = (
        tf.data.Dataset.range(len(paths))
        .shuffle(len(paths))
        .apply(tfliquid.minio_cache(fetch, cache=cache))
        .map(prepare)
        .batch(16)
    )
    model = tf.keras.Sequential([tf.keras.Input((32, 32, 3)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=3, verbose=0, shuffle=False)
    model.fit(ds.take(2), epochs=1, verbose=0, shuffle=False)  # a partial epoch
    epochs = cache.stats().epochs
    assert len(epochs) == 4
    cached = cache.stats().items
    assert [e.hits for e in epochs[:3]] == [0, cached, cached]
    assert epochs[3].hits + epochs[3].misses >= 32  # the partial pass counted (plus prefetched keys)
    assert 0 < epochs[3].hits < 32


def test_one_cache_shared_by_two_datasets(jpeg_files):
    paths = jpeg_files[:30]
    cache = tfliquid.MinIOCache(1 << 20)
    as_bytes = tf.data.Dataset.from_tensor_slices(paths).apply(tfliquid.minio_cache(tfliquid.io.read_file, cache=cache))
    list(as_bytes)
    before = _bytes_read()
    reordered = tf.data.Dataset.from_tensor_slices(paths[::-1]).apply(
        tfliquid.minio_cache(tfliquid.io.read_file, cache=cache)
    )
    assert [bytes(x) for x in reordered.as_numpy_iterator()] == [pathlib.Path(p).read_bytes() for p in paths[::-1]]
    assert _bytes_read() == before and cache.stats().epochs[1].hits == 30


def test_zero_capacity_and_release(jpeg_files):
    paths = jpeg_files[:10]
    empty = tfliquid.MinIOCache(0)
    ds = tf.data.Dataset.from_tensor_slices(paths).apply(tfliquid.minio_cache(tfliquid.io.read_file, cache=empty))
    list(ds), list(ds)
    assert [e.hits for e in empty.stats().epochs] == [0, 0] and empty.stats().items == 0
    with tfliquid.MinIOCache(1 << 20) as cache:
        ds = tf.data.Dataset.from_tensor_slices(paths).apply(tfliquid.minio_cache(tfliquid.io.read_file, cache=cache))
        list(ds)
        assert cache.stats().items == 10
    assert cache.stats().items == 0  # released: the name now means a new, empty cache


def test_closed_admission_fetches_without_admitting_and_reopens_mid_pass(jpeg_files):
    paths = jpeg_files[:12]
    cache = tfliquid.MinIOCache(1 << 20)
    ds = tf.data.Dataset.from_tensor_slices(paths).apply(
        tfliquid.minio_cache(tfliquid.io.read_file, cache=cache, num_parallel_calls=1)
    )
    cache.admit(False)
    assert len(list(ds)) == 12 and cache.stats().items == 0  # closed from the start: every miss offered, none held
    iterator = iter(ds)
    for _ in range(4):
        next(iterator)
    cache.admit(True)  # the running pass admits from its next miss on (the reader may be an item or two ahead)
    assert len(list(iterator)) == 8
    held = cache.stats().items
    assert 6 <= held <= 8
    cache.admit(False)  # closed again: what it holds still hits
    before = _bytes_read()
    got = [bytes(item.numpy()) for item in ds]
    assert got == [pathlib.Path(p).read_bytes() for p in paths]
    first, second, third = cache.stats().epochs
    assert (first.closed, first.admitted_items) == (12, 0)
    assert (second.closed, second.admitted_items) == (12 - held, held)
    assert (third.hits, third.misses, third.closed, third.admitted_items) == (held, 12 - held, 12 - held, 0)
    # Only the misses, the items before admission opened, were read.
    assert _bytes_read() - before == sum(os.path.getsize(p) for p in paths[: 12 - held])
    with pytest.raises(tfliquid.ArgumentError, match="admitting must be True or False"):
        cache.admit(1)


@pytest.mark.parametrize("policy", ["minio", "lru"])
def test_memory_store_replays_the_simulator(tmp_path, policy):
    """The C++ policies and the simulator's, on one trace: every epoch's hits agree exactly."""
    num_items, capacity_items, epochs = 60, 25, 4
    paths = []
    for i in range(num_items):  # same-size items, so a byte budget holds exactly capacity_items
        path = tmp_path / f"{i:04d}.bin"
        path.write_bytes(bytes([i]) * 100)
        paths.append(str(path))
    item_bytes = 16 + len("string:" + paths[0]) + 4 + 8 + 8 + 100
    cache = tfliquid.MinIOCache(capacity_items * item_bytes, policy=policy)
    for order in simulation.epoch_orders(num_items, epochs, seed=7):
        keys = tf.data.Dataset.from_tensor_slices([paths[i] for i in order])
        list(keys.apply(tfliquid.minio_cache(tfliquid.io.read_file, cache=cache, num_parallel_calls=1)))
    expected = tfliquid.cache.simulate(policy, num_items, capacity_items, epochs, seed=7)
    assert [e.hits for e in cache.stats().epochs] == expected.hits


def test_parameters_are_validated(jpeg_files):
    with pytest.raises(ValueError, match="capacity_bytes"):
        tfliquid.MinIOCache(-1)
    with pytest.raises(ValueError, match="capacity_bytes"):
        tfliquid.MinIOCache(1.5)
    with pytest.raises(ValueError, match="policy"):
        tfliquid.MinIOCache(10, policy="fifo")
    with pytest.raises(ValueError, match="needs capacity_bytes or cache"):
        tfliquid.minio_cache(tf.io.read_file)
    cache = tfliquid.MinIOCache(10)
    with pytest.raises(ValueError, match="contradicts"):
        tfliquid.minio_cache(tf.io.read_file, 20, cache=cache)
    with pytest.raises(TypeError, match="MinIOCache"):
        tfliquid.minio_cache(tf.io.read_file, cache=object())
    with pytest.raises(TypeError, match="scalar string or integer keys"):
        tf.data.Dataset.range(3).map(lambda i: tf.cast(i, tf.float32)).apply(
            tfliquid.minio_cache(lambda k: k, cache=cache)
        )
    with pytest.raises(TypeError, match="dense tensors"):
        tf.data.Dataset.range(3).apply(
            tfliquid.minio_cache(lambda k: tf.RaggedTensor.from_row_lengths([1, 2, 3], [1, 2]), cache=cache)
        )
    for nothing in (None, (), {}):  # TensorFlow's map would fail on it inside its own op
        with pytest.raises(tfliquid.ArgumentError, match="fetch must return a tensor .*; it returned nothing"):
            tf.data.Dataset.range(3).apply(tfliquid.minio_cache(lambda k, nothing=nothing: nothing, cache=cache))
    with pytest.raises(tfliquid.ArgumentError, match="exists with capacity_bytes=10"):
        tfliquid.MinIOCache(11, name=cache.name)


@pytest.mark.slow
def test_training_example_runs(tmp_path):
    import subprocess
    import sys

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "minio_cache_training.py")
    result = subprocess.run(
        [
            sys.executable,
            example,
            "--workdir",
            str(tmp_path),
            "--epochs",
            "2",
            "--images-per-class",
            "10",
            "--read-bandwidth",
            "20e6",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    minio_epochs = result.stdout.split("MinIO cache")[1].splitlines()[1:]
    hit_ratios = [float(line.split("hit ratio ")[1].split(",")[0]) for line in minio_epochs]
    # Half the bytes are cached: about half the files, more or fewer as the first epoch's order admits smaller
    # or larger ones first.
    assert hit_ratios[0] == 0 and 0.4 <= hit_ratios[1] <= 0.6


def test_keys_carry_their_type_so_pipelines_sharing_a_cache_get_their_own_items():
    cache = tfliquid.MinIOCache(1 << 20)

    def tagged(keys, tag):
        return keys.apply(tfliquid.minio_cache(lambda k: tf.constant(tag), cache=cache))

    sources = {
        "int64": tf.data.Dataset.from_tensors(tf.constant(1, tf.int64)),
        "int32": tf.data.Dataset.from_tensors(tf.constant(1, tf.int32)),
        "string": tf.data.Dataset.from_tensors(tf.constant("1")),
    }
    for tag, keys in sources.items():  # each fetch is cached under its own key
        assert list(tagged(keys, tag).as_numpy_iterator()) == [tag.encode()]
    for tag, keys in sources.items():  # hits: each pipeline gets the item it cached
        assert list(tagged(keys, "fetched again").as_numpy_iterator()) == [tag.encode()]
    assert cache.stats().items == 3


def test_a_released_cache_reads_as_empty_without_being_created_again():
    cache = tfliquid.MinIOCache(1 << 20, name="released-stats")
    list(tf.data.Dataset.range(5).apply(tfliquid.minio_cache(lambda k: k, cache=cache)))
    cache.release()
    assert cache.stats().items == 0
    again = tfliquid.MinIOCache(10, name="released-stats")  # another capacity: no conflict, the old one is gone
    assert again.stats().items == 0 and again.capacity_bytes == 10


def test_a_released_cache_stays_released_for_running_pipelines_until_opened_again():
    cache = tfliquid.MinIOCache(1 << 20, name="released-live")
    # A sequential map, and no prefetch injected after it: nothing is computed ahead of the element asked for.
    ds = tf.data.Dataset.range(10).apply(tfliquid.minio_cache(lambda k: k * 2, cache=cache, num_parallel_calls=None))
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    ds = ds.with_options(options)
    running = iter(ds)
    assert next(running) == 0
    cache.release()
    released = r"MinIO cache 'released-live' was released \(MinIOCache.release\(\)\); a new tfliquid.MinIOCache"
    with pytest.raises(tf.errors.FailedPreconditionError, match=released):  # Lookup
        next(running)
    with pytest.raises(tf.errors.FailedPreconditionError, match=released):  # BeginPass
        next(iter(ds))
    again = tfliquid.MinIOCache(1 << 20, name="released-live")
    assert again.stats().items == 0 and again.stats().epochs == []  # a new cache: nothing admitted after release
    assert list(ds.as_numpy_iterator()) == [2 * k for k in range(10)]
    assert again.stats().items == 10 and [e.misses for e in again.stats().epochs] == [10]


@pytest.mark.parametrize("in_directory", [False, True])
def test_a_key_too_long_to_store_is_uncacheable_and_the_pipeline_goes_on(tmp_path, in_directory):
    cache = tfliquid.MinIOCache(1 << 20, directory=tmp_path / "cache" if in_directory else None)
    long_key = "k" * 70_000  # 70,007 bytes as stored, with "string:": over the format's 65,536
    keys = tf.data.Dataset.from_tensor_slices(["short", long_key])
    ds = keys.apply(tfliquid.minio_cache(lambda key: tf.strings.length(key), cache=cache))
    for _ in range(2):
        assert sorted(ds.as_numpy_iterator()) == [5, 70_000]
    stats = cache.stats()
    assert stats.items == 1  # the short key's
    assert [(e.hits, e.misses, e.uncacheable, e.admitted_items) for e in stats.epochs] == [(0, 2, 1, 1), (1, 1, 1, 0)]
    assert str(stats).splitlines()[1:] == [
        "  epoch 0: 0 hits, 2 misses (hit ratio 0.000), 1 admitted, 1 uncacheable",
        "  epoch 1: 1 hits, 1 misses (hit ratio 0.500), 0 admitted, 1 uncacheable",
    ]
