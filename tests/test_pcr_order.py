"""PCRDataset driven by a SeededOrder: each worker reads its slice of every epoch's record permutation, and a
clairvoyant cache of record prefixes ranks the records by their next use (issue 18)."""

import collections

import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid._common.errors import ArgumentError
from tfliquid.cache import multiworker
from tfliquid.order import SeededOrder
from tfliquid.pcr import format as pcr_format
from tfliquid.samples.photos import photo_path

RECORDS = 10  # one-digit items: every record's cache key, and so its cache item, has the same length


@pytest.fixture(scope="module")
def same_size_records(tmp_path_factory):
    """A PCR dataset of RECORDS records of 2 images each, all of one photo crop: every record has the same bytes
    but for its images' keys (names of one length), so a byte budget holds a whole number of records."""
    folder = tmp_path_factory.mktemp("order-photos") / "photos"
    (folder / "astronaut").mkdir(parents=True)
    crop = Image.open(photo_path("skimage", "astronaut.png")).convert("RGB").crop((100, 100, 164, 164))
    for i in range(2 * RECORDS):
        crop.save(folder / "astronaut" / f"img-{i:03d}.jpg", quality=90)
    path = folder.parent / "pcr"
    tfliquid.pcr.convert(str(folder), str(path), images_per_record=2, progress=False)
    return str(path)


def _record_of_each_image(path: str) -> dict[bytes, int]:
    index = pcr_format.read_index(path)
    owner = {}
    for r, entry in enumerate(index.records):
        record = tfliquid.pcr.PCRRecordDataset(f"{path}/{entry.path}", list(entry.prefix_ends), with_keys=True)
        owner.update({x["key"]: r for x in record.as_numpy_iterator()})
    return owner


def test_each_worker_reads_its_slice_of_every_epoch_in_the_orders_sequence(same_size_records):
    owner = _record_of_each_image(same_size_records)
    for epoch in (0, 3):
        seen = collections.Counter()
        for worker in range(3):
            order = SeededOrder(RECORDS, 5, num_workers=3, worker_index=worker)
            ds = tfliquid.PCRDataset(
                same_size_records, decode=False, with_keys=True, order=order, epochs=1, first_epoch=epoch
            )
            keys = [x["key"] for x in ds.as_numpy_iterator()]
            records_in_reading_order = list(dict.fromkeys(owner[k] for k in keys))
            assert records_in_reading_order == order.keys(epoch).tolist()
            assert len(keys) == ds.images_in_epoch(epoch)
            seen.update(keys)
        assert set(seen) == set(owner) and set(seen.values()) == {1}  # every image once per epoch, over workers


def test_epochs_follow_one_another_and_the_images_in_a_record_reshuffle(same_size_records):
    order = SeededOrder(RECORDS, 2)
    owner = _record_of_each_image(same_size_records)
    ds = tfliquid.PCRDataset(same_size_records, decode=False, with_keys=True, order=order, epochs=3, seed=1)
    keys = [x["key"] for x in ds.as_numpy_iterator()]
    epochs = [keys[i * 2 * RECORDS : (i + 1) * 2 * RECORDS] for i in range(3)]
    assert len(keys) == 3 * 2 * RECORDS
    for e, epoch_keys in enumerate(epochs):
        assert list(dict.fromkeys(owner[k] for k in epoch_keys)) == order.keys(e).tolist()
    assert keys == [x["key"] for x in ds.as_numpy_iterator()]  # the same seed reads the same again
    # 10 two-image records over 3 epochs: some record's images come out in both orders
    pairs = {tuple(epoch_keys[i : i + 2]) for epoch_keys in epochs for i in range(0, 2 * RECORDS, 2)}
    assert any((b, a) in pairs for a, b in pairs)


def test_the_cardinality_is_the_images_of_the_epochs_read(tmp_path):
    """Records of 2, 2, 2 and 1 images over 3 workers: what a worker reads changes from epoch to epoch, and its
    declared cardinality is the sum over the epochs it reads (infinite without end)."""
    folder = tmp_path / "photos" / "astronaut"
    folder.mkdir(parents=True)
    crop = Image.open(photo_path("skimage", "astronaut.png")).convert("RGB").crop((100, 100, 164, 164))
    for i in range(7):
        crop.save(folder / f"img-{i}.jpg", quality=90)
    path = str(tmp_path / "pcr")
    tfliquid.pcr.convert(str(folder.parent), path, images_per_record=2, progress=False)
    per_epoch = set()
    for worker in range(3):
        order = SeededOrder(4, 1, num_workers=3, worker_index=worker)
        ds = tfliquid.PCRDataset(path, decode=False, order=order, epochs=4, first_epoch=1)
        images = [ds.images_in_epoch(e) for e in range(1, 5)]
        assert ds.cardinality() == sum(1 for _ in ds) == sum(images)
        per_epoch.add(tuple(images))
    assert any(len(set(images)) > 1 for images in per_epoch)
    assert tfliquid.PCRDataset(path, order=order).cardinality() == tf.data.INFINITE_CARDINALITY


def _hits_per_epoch(path: str, order: SeededOrder, policy: str, slots: int, epochs: int) -> list[int]:
    probe = tfliquid.MinIOCache(1 << 30)
    list(tfliquid.PCRDataset(path, decode=False, order=order, epochs=1, cache=probe).as_numpy_iterator())
    item_bytes = probe.stats().bytes // probe.stats().items
    cache = tfliquid.MinIOCache(slots * item_bytes, policy=policy, order=order if policy == "clairvoyant" else None)
    ds = tfliquid.PCRDataset(path, decode=False, order=order, epochs=epochs, cache=cache, num_parallel_reads=1)
    assert sum(1 for _ in ds) == sum(ds.images_in_epoch(e) for e in range(epochs))
    stats = cache.stats()
    assert stats.bytes <= slots * item_bytes and stats.items <= slots
    return [e.hits for e in stats.epochs]


@pytest.mark.parametrize("workers, slots", [(1, 4), (2, 2), (4, 1)])
def test_a_clairvoyant_record_cache_hits_what_the_simulator_replays(same_size_records, workers, slots):
    order = SeededOrder(RECORDS, 3, num_workers=workers, worker_index=workers - 1)
    hits = _hits_per_epoch(same_size_records, order, "clairvoyant", slots, epochs=6)
    assert hits == multiworker.replay("clairvoyant", order, capacity=slots, epochs=6)
    assert sum(hits) >= sum(_hits_per_epoch(same_size_records, order, "minio", slots, epochs=6))


def test_a_clairvoyant_cache_resumes_at_any_epoch_and_takes_partial_epochs_and_two_iterators(same_size_records):
    """The cache is told each pass's epoch: it no longer infers it from the reads it has counted, so a new cache
    (a restarted process) resuming at epoch 5, an epoch read in part, and two iterators on one cache all read."""
    order = SeededOrder(RECORDS, 0, num_workers=4, worker_index=1)

    def keys(dataset):
        return [element["key"].numpy() for element in dataset]

    def reading(first_epoch, epochs=1, cache=None):
        cache = cache or tfliquid.MinIOCache(1 << 20, policy="clairvoyant", order=order)
        options = dict(decode=False, with_keys=True, shuffle=False, epochs=epochs, first_epoch=first_epoch)
        return tfliquid.PCRDataset(same_size_records, cache=cache, **options), cache

    resumed, _ = reading(first_epoch=5)
    options = dict(decode=False, with_keys=True, shuffle=False, epochs=1, first_epoch=5)
    expected = tfliquid.PCRDataset(same_size_records, order=order, **options)  # no cache
    assert keys(resumed) == keys(expected) and keys(resumed)
    partial, cache = reading(first_epoch=0, epochs=3)
    assert len(keys(partial.take(1))) == 1  # a part of epoch 0, then a new iterator from its start
    assert len(keys(partial)) == sum(order.slice_length * 2 for _ in range(3))
    first, second = iter(partial), iter(partial)  # two iterators on one cache, interleaved
    assert [next(first)["key"].numpy() for _ in range(3)] == [next(second)["key"].numpy() for _ in range(3)]
    assert sum(e.hits for e in cache.stats().epochs) > 0  # records read again came from the cache


def test_orders_and_caches_that_do_not_fit_are_refused(same_size_records):
    order = SeededOrder(RECORDS, 0, num_workers=2, worker_index=0)
    with pytest.raises(ArgumentError, match="order is over 11 items, the dataset has 10 records"):
        tfliquid.PCRDataset(same_size_records, order=SeededOrder(RECORDS + 1, 0))
    clairvoyant = tfliquid.MinIOCache(1 << 20, policy="clairvoyant", order=order)
    assert tfliquid.PCRDataset(same_size_records, cache=clairvoyant).order == order  # the order is given once
    with pytest.raises(ArgumentError, match="give the order to the cache only"):
        tfliquid.PCRDataset(same_size_records, cache=clairvoyant, order=order.for_worker(1))
    with pytest.raises(ArgumentError, match="pass order= too"):
        tfliquid.PCRDataset(same_size_records, epochs=2)
    with pytest.raises(ArgumentError, match="has no order"):
        tfliquid.PCRDataset(same_size_records).images_in_epoch(0)


def test_more_workers_than_records_are_refused_saying_how_to_convert_for_them(same_size_records):
    with pytest.raises(ArgumentError) as raised:  # the README's block on a dataset converted as one record
        SeededOrder(1, seed=0, num_workers=2, worker_index=0)
    assert str(raised.value) == (
        "an order of 1 item has fewer items than num_workers=2: every worker reads at least one per epoch. An order "
        "over a dataset's records needs a record per worker: convert it with --images-per-record N, N <= its images "
        "/ 2"
    )
    num_records = tfliquid.PCRDataset(same_size_records).num_records
    with pytest.raises(ArgumentError, match=f"an order of {RECORDS} items has fewer items than num_workers=11"):
        SeededOrder(num_records, seed=0, num_workers=11)


def test_an_order_driven_dataset_checkpoints_mid_epoch(same_size_records, tmp_path):
    order = SeededOrder(RECORDS, 4, num_workers=2, worker_index=1)
    ds = tfliquid.PCRDataset(same_size_records, decode=False, with_keys=True, order=order, epochs=2)
    expected = [x["key"].numpy() for x in ds]
    iterator = iter(ds)
    head = [next(iterator)["key"].numpy() for _ in range(7)]
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    next(iterator)
    checkpoint.restore(saved)
    assert head + [x["key"].numpy() for x in iterator] == expected
