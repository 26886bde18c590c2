"""LiquidDataset driven by a SeededOrder (data-parallel workers): each worker reads its slice of every epoch's
record permutation, every batch holds its epoch's format shares, and a clairvoyant cache ranks the records."""

import collections
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid.dataset import batch_rows
from tfliquid.order import SeededOrder
from tfliquid.samples import photos as sample_photos

FORMATS = ("png", "raw", "l3")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> pathlib.Path:
    """png:raw:l3 at 5:3:2 of 120 crops, records of 4: 15 + 9 + 6 = 30 records."""
    root = tmp_path_factory.mktemp("liquid-order")
    sample_photos.write_image_folder(str(root / "crops"), 12, size=32, seed=6)
    dst = root / "mixed"
    tfliquid.liquid.convert(
        str(root / "crops"),
        str(dst),
        formats=",".join(FORMATS),
        ratio="5:3:2",
        images_per_record=4,
        seed=1,
        progress=False,
    )
    return dst


def _epochs(dataset, batch_size: int, epochs: int) -> list[list[dict]]:
    """The batches of each epoch, the dataset read once (one iterator over all epochs)."""
    per_epoch = [dataset.images_in_epoch(e) for e in range(epochs)]
    elements = list(dataset.as_numpy_iterator())
    assert len(elements) == sum(per_epoch) == dataset.cardinality()
    result, start = [], 0
    for count in per_epoch:
        epoch = elements[start : start + count]
        result.append([epoch[i : i + batch_size] for i in range(0, count, batch_size)])
        start += count
    return result


@pytest.mark.slow
def test_graph_batch_rows_equal_the_oracle():
    rng = np.random.default_rng(3)
    for _ in range(60):
        sizes = rng.integers(0, 50, rng.integers(1, 5))
        if sizes.sum() == 0:
            continue
        batch_size = int(rng.integers(1, 30))
        rows = np.array(list(batch_rows(tf.constant(sizes), batch_size).as_numpy_iterator()))
        np.testing.assert_array_equal(rows, liquid_format.batch_counts(sizes.tolist(), batch_size))


@pytest.mark.parametrize("workers, batch_size", [(1, 10), (3, 7)])
def test_workers_read_every_image_once_per_epoch_in_their_epochs_shares(mixed, workers, batch_size):
    epochs = 2
    seen = [collections.Counter() for _ in range(epochs)]
    for w in range(workers):
        order = SeededOrder(30, 5, num_workers=workers, worker_index=w)
        ds = tfliquid.LiquidDataset(
            str(mixed), batch_size, seed=2, decode=False, with_keys=True, order=order, epochs=epochs
        )
        for e, batches in enumerate(_epochs(ds, batch_size, epochs)):
            shares = ds.formats_in_epoch(e)
            expected = liquid_format.batch_counts([shares[f] for f in FORMATS], batch_size)
            assert len(batches) == len(expected)
            for batch, row in zip(batches, expected):
                counts = collections.Counter(x["format"].decode() for x in batch)
                assert [counts[f] for f in FORMATS] == row.tolist()
            seen[e].update(x["key"] for batch in batches for x in batch)
    for epoch_keys in seen:
        assert len(epoch_keys) == 120 and set(epoch_keys.values()) == {1}
    if workers > 1:  # the workers' slices differ from epoch to epoch
        order = SeededOrder(30, 5, num_workers=workers, worker_index=0)
        assert sorted(order.keys(0).tolist()) != sorted(order.keys(1).tolist())


def test_lossless_pixels_a_resumed_epoch_and_the_same_in_another_run(mixed):
    order = SeededOrder(30, 7, num_workers=2, worker_index=1)

    def read(**kwargs):
        ds = tfliquid.LiquidDataset(str(mixed), 8, seed=3, with_keys=True, order=order, **kwargs)
        return [(x["key"], x["format"], x["image"].tobytes()) for x in ds.as_numpy_iterator()]

    two = read(epochs=2)
    assert read(epochs=2) == two
    resumed = read(epochs=1, first_epoch=1)  # a restarted worker, from its second epoch
    assert len(resumed) == tfliquid.LiquidDataset(str(mixed), 8, order=order).images_in_epoch(1)
    assert resumed == two[len(two) - len(resumed) :]
    reference = tfliquid.LiquidDataset(str(mixed), 8, shuffle=False, with_keys=True)
    pixels = {x["key"]: x["image"].tobytes() for x in reference.as_numpy_iterator()}
    assert all(image == pixels[key] for key, _, image in two)  # png, raw and l3 are lossless


def test_a_clairvoyant_cache_ranks_the_records_and_beats_minio(mixed):
    order = SeededOrder(30, 4, num_workers=3, worker_index=0)
    record_bytes = max(f.num_bytes // len(f.records) for f in liquid_format.read_manifest(str(mixed)).formats)
    hits = {}
    for policy in ("minio", "clairvoyant"):
        cache = tfliquid.MinIOCache(3 * record_bytes, policy=policy, order=order if policy == "clairvoyant" else None)
        ds = tfliquid.LiquidDataset(str(mixed), 8, seed=1, cache=cache, order=order, epochs=6)
        elements = list(ds.as_numpy_iterator())
        assert sum(x["cached"] for x in elements) > 0
        stats = cache.stats()
        assert len(stats.epochs) == 6 and stats.bytes <= cache.capacity_bytes
        hits[policy] = sum(e.hits for e in stats.epochs[1:])
    assert hits["clairvoyant"] > hits["minio"]


def test_order_arguments_are_checked(mixed):
    with pytest.raises(ValueError, match="order is over 29 items, the dataset has 30 records"):
        tfliquid.LiquidDataset(str(mixed), 8, order=SeededOrder(29, 0))
    other = SeededOrder(30, 1)
    cache = tfliquid.MinIOCache(1 << 20, policy="clairvoyant", order=SeededOrder(30, 0))
    with pytest.raises(ValueError, match="a clairvoyant cache ranks the records by this dataset's order"):
        tfliquid.LiquidDataset(str(mixed), 8, cache=cache, order=other)
    with pytest.raises(ValueError, match="pass order= too"):
        tfliquid.LiquidDataset(str(mixed), 8, first_epoch=1)
    with pytest.raises(ValueError, match=r"epochs \(or None, or 'auto'\) must be an int >= 1, got 0"):
        tfliquid.LiquidDataset(str(mixed), 8, epochs=0)
    ds = tfliquid.LiquidDataset(str(mixed), 8)
    with pytest.raises(ValueError, match="this dataset has no order"):
        ds.images_in_epoch(0)
    assert ds.num_records == 30


def test_checkpoint_restores_mid_epoch_of_an_order(mixed, tmp_path):
    order = SeededOrder(30, 2, num_workers=2, worker_index=0)

    def make():
        return tfliquid.LiquidDataset(str(mixed), 6, seed=4, decode=False, with_keys=True, order=order, epochs=2)

    iterator = iter(make())
    head = [next(iterator)["key"].numpy() for _ in range(23)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    tail = [x["key"].numpy() for x in iterator]
    assert len(head) + len(tail) == make().images_in_epoch(0) + make().images_in_epoch(1)
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert [x["key"].numpy() for x in restored] == tail
