"""LiquidDataset on real photos: exact per-batch composition, every image once, lossless pixels, constant storage
reads per batch with a cache, corrupt records, checkpoints and tf.data service."""

import collections
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.liquid import format as liquid_format
from tfliquid.samples import photos as sample_photos


@pytest.fixture(scope="module")
def crops(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("liquid-ds-src") / "crops"
    sample_photos.write_image_folder(str(root), 12, size=48, seed=4)  # 120 images
    return root


@pytest.fixture(scope="module")
def mixed(crops, tmp_path_factory) -> pathlib.Path:
    """png:raw:l3 at 5:3:2 (60, 36, 24 images), records of 8: 15 records, the last of each format partial."""
    dst = tmp_path_factory.mktemp("liquid-ds") / "mixed"
    tfliquid.liquid.convert(
        str(crops), str(dst), formats="png,raw,l3", ratio="5:3:2", images_per_record=9, seed=2, progress=False
    )
    return dst


def _batches(dataset, batch_size):
    return list(dataset.batch(batch_size).as_numpy_iterator())


@pytest.mark.parametrize("batch_size", [1, 7, 10, 32, 120, 500])
def test_every_batch_holds_the_ratio_and_every_image_appears_once(mixed, batch_size):
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=batch_size, seed=5, with_keys=True)
    batches = _batches(ds, batch_size)
    keys = [k for b in batches for k in b["key"]]
    assert len(keys) == len(set(keys)) == 120
    sizes = [60, 36, 24]
    expected = liquid_format.batch_counts(sizes, batch_size)
    assert len(batches) == len(expected)
    for batch, row in zip(batches, expected):
        counts = collections.Counter(f.decode() for f in batch["format"])
        assert [counts["png"], counts["raw"], counts["l3"]] == row.tolist()
        for size, count in zip(sizes, row):  # floor or ceil of the share of this batch
            assert count in (len(batch["label"]) * size // 120, len(batch["label"]) * size // 120 + 1)


def test_batch_composition_with_a_remainder_ratio(crops, tmp_path):
    dst = tmp_path / "thirds"
    tfliquid.liquid.convert(str(crops), str(dst), formats="jpeg,raw", ratio="1:2", images_per_record=16, progress=False)
    ds = tfliquid.LiquidDataset(str(dst), batch_size=16, seed=1)
    for batch in _batches(ds, 16):  # 16/3 = 5.33 jpeg per batch: 5 or 6, never 4 or 7
        jpegs = sum(f == b"jpeg" for f in batch["format"])
        assert jpegs in (5, 6) if len(batch["format"]) == 16 else jpegs in (2, 3)  # last batch: 8 images


def test_images_decode_to_the_stored_pixels_and_the_seed_fixes_the_order(mixed):
    reference = {item.key: item for item in liquid_format.read_records(str(mixed))}
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=9, with_keys=True)
    seen = list(ds.as_numpy_iterator())
    for x in seen:
        item = reference[x["key"]]
        assert x["format"].decode() == item.format and x["label"] == item.label
        if item.format == "raw":
            expected = liquid_format.decode_raw(item.data)
        elif item.format == "png":
            expected = tf.io.decode_png(item.data, channels=3).numpy()
        else:
            expected = tfliquid.l3.decode_l3(item.data).numpy()
        np.testing.assert_array_equal(x["image"], expected)
    assert [x["key"] for x in ds.as_numpy_iterator()] != [x["key"] for x in seen]  # reshuffled each epoch
    again = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=9, with_keys=True)
    assert [x["key"] for x in again.as_numpy_iterator()] == [x["key"] for x in seen]
    undecoded = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=9, with_keys=True, decode=False)
    assert all(x["image"] == reference[x["key"]].data for x in undecoded.as_numpy_iterator())


def test_with_a_cache_every_later_batch_reads_the_same_number_of_images_from_storage(mixed):
    total = sum(f.num_bytes for f in liquid_format.read_manifest(str(mixed)).formats)
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=12, seed=3, cache=total // 2)
    planned = ds.storage_images_per_batch()
    assert planned.max() - planned.min() <= 1
    first = [np.sum(~b["cached"]) for b in _batches(ds, 12)]
    assert sum(first) == 120  # the first epoch fills the cache: everything from storage
    for _ in range(2):
        from_storage = [int(np.sum(~b["cached"])) for b in _batches(ds, 12)]
        assert from_storage == planned.tolist()
        assert max(from_storage) - min(from_storage) <= 1
        assert 120 - sum(from_storage) >= 30  # whole records of 9 images: about half the bytes are cached
    epochs = ds.minio_cache.stats().epochs  # counted in records: every cached record missed once, then always hit
    assert epochs[0].hits == 0 and epochs[0].misses == epochs[1].hits == epochs[2].hits > 0
    assert epochs[1].misses == epochs[2].misses == 0


def test_epochs_follow_each_other_in_one_iteration_each_holding_every_image_and_the_ratio(mixed, tmp_path):
    batch_size, sizes = 7, [60, 36, 24]
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=batch_size, seed=5, with_keys=True, epochs=3)
    elements = list(ds.as_numpy_iterator())
    assert len(elements) == 360
    epochs = [elements[e * 120 : (e + 1) * 120] for e in range(3)]
    for epoch in epochs:
        assert len({x["key"] for x in epoch}) == 120
        rows = [
            [sum(x["format"] == f for x in epoch[i : i + batch_size]) for f in (b"png", b"raw", b"l3")]
            for i in range(0, 120, batch_size)
        ]
        assert rows == liquid_format.batch_counts(sizes, batch_size).tolist()
    assert len({tuple(x["key"] for x in epoch) for epoch in epochs}) == 3  # reshuffled every epoch
    endless = tfliquid.LiquidDataset(str(mixed), batch_size=batch_size, seed=5, with_keys=True, epochs=None)
    assert [x["key"] for x in endless.take(360).as_numpy_iterator()] == [x["key"] for x in elements]
    assert ds.cardinality() == 360 and endless.cardinality() == tf.data.INFINITE_CARDINALITY  # declared, for Keras
    iterator = iter(ds)
    for _ in range(150):  # into the second epoch
        next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    tail = [x["key"].numpy() for x in iterator]
    restored = iter(ds)
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert len(tail) == 210 and [x["key"].numpy() for x in restored] == tail


def test_epochs_with_a_cache_are_one_cache_pass_each(mixed):
    total = sum(f.num_bytes for f in liquid_format.read_manifest(str(mixed)).formats)
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=12, seed=3, cache=total // 2, epochs=3)
    from_storage = [int(np.sum(~b["cached"])) for b in _batches(ds, 12)]
    assert sum(from_storage[:10]) == 120 and from_storage[10:] == ds.storage_images_per_batch().tolist() * 2
    epochs = ds.minio_cache.stats().epochs
    assert len(epochs) == 3 and epochs[0].hits == 0 and epochs[0].misses == epochs[1].hits == epochs[2].hits > 0


def test_its_minio_cache_is_minio_cache_and_cache_is_tf_datas(mixed):
    cache = tfliquid.MinIOCache(1 << 24)
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=12, seed=3, cache=cache, decode=False, with_keys=True)
    assert ds.minio_cache is cache and tfliquid.LiquidDataset(str(mixed), batch_size=12).minio_cache is None
    kept = ds.cache()  # tf.data's: the first iteration's elements, kept in memory
    first = [x["key"] for x in kept.as_numpy_iterator()]
    assert [x["key"] for x in kept.as_numpy_iterator()] == first and sorted(first) == sorted(
        x["key"] for x in ds.as_numpy_iterator()
    )
    assert ds.minio_cache.stats().epochs[0].misses > 0
    cache.release()


def test_corrupt_and_truncated_records_name_the_file_and_offset(mixed, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(mixed, copy)
    record = sorted((copy / "records").glob("raw-*.lqr"))[0]
    data = record.read_bytes()
    record.write_bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    with pytest.raises(tf.errors.DataLossError, match=rf"{record.name}: offset \d+: group 1 CRC32C mismatch"):
        list(tfliquid.LiquidDataset(str(copy), batch_size=8))
    record.write_bytes(data[:-100])
    with pytest.raises(tf.errors.DataLossError, match=rf"{record.name}: offset \d+: file is \d+ bytes"):
        list(tfliquid.LiquidDataset(str(copy), batch_size=8))


def test_checkpoint_restores_mid_epoch(mixed, tmp_path):
    def make():
        return tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=12, with_keys=True)

    iterator = iter(make())
    head = [next(iterator)["key"].numpy() for _ in range(37)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    tail = [x["key"].numpy() for x in iterator]
    assert len(set(head + tail)) == 120
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert [x["key"].numpy() for x in restored] == tail


def test_tf_data_service_round_trip_keeps_the_batches(mixed):
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(  # noqa: F841 - serves while referenced
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=1, with_keys=True).batch(10)
    distributed = ds.apply(tf.data.experimental.service.distribute("parallel_epochs", dispatcher.target))
    batches = list(distributed.as_numpy_iterator())
    assert sorted(k for b in batches for k in b["key"]) == sorted(k for b in ds.as_numpy_iterator() for k in b["key"])
    expected = liquid_format.batch_counts([60, 36, 24], 10)
    for batch, row in zip(batches, expected):
        assert [sum(f == name for f in batch["format"]) for name in (b"png", b"raw", b"l3")] == row.tolist()


def test_dynamic_sharding_is_refused_in_one_line(mixed):
    """Dynamic sharding would split every stream and the batch pattern apart between the workers, each worker's
    pattern then asking for images its streams do not have: images were lost without an error."""
    service = tf.data.experimental.service
    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address)) for _ in range(2)]  # noqa: F841
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=1, with_keys=True, decode=False)
    dynamic = service.distribute(processing_mode=service.ShardingPolicy.DYNAMIC, service=dispatcher.target)
    distributed = ds.apply(dynamic)
    with pytest.raises(tf.errors.FailedPreconditionError, match="LiquidDataset cannot be sharded dynamically"):
        list(distributed)


def test_tf_data_autotune_is_off_downstream_unless_asked_for(mixed):
    # The default holds back TF 2.21's autotune model, which ran this pipeline's decodes at one core's speed for
    # whole epochs (docs/liquid.md); every stage after the dataset inherits the option, as tf.data merges them.
    ds = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=1)
    assert ds.options().autotune.enabled is False
    assert (
        ds.map(lambda x: x["image"], num_parallel_calls=tf.data.AUTOTUNE).batch(10).options().autotune.enabled is False
    )
    kept = tfliquid.LiquidDataset(str(mixed), batch_size=10, seed=1, tf_autotune=True)
    assert kept.options().autotune.enabled is not False
    assert sum(1 for _ in ds) == sum(1 for _ in kept) == 120


def test_bad_arguments(mixed, tmp_path):
    for kwargs in [dict(batch_size=0), dict(batch_size=8, cache=True), dict(batch_size=8, num_parallel_reads=0)]:
        with pytest.raises(tfliquid.ArgumentError):
            tfliquid.LiquidDataset(str(mixed), **kwargs)
    with pytest.raises(liquid_format.LiquidFormatError, match="not a Liquid dataset"):
        tfliquid.LiquidDataset(str(tmp_path), batch_size=8)


def test_raw_item_op_matches_the_reference_and_names_the_offset_of_bad_items():
    from tfliquid.liquid import items as liquid_items

    pixels = np.random.default_rng(1).integers(0, 256, (6, 5, 3), dtype=np.uint8)
    item = liquid_format.encode_raw(pixels)
    np.testing.assert_array_equal(liquid_items.decode_as("raw", tf.constant(item), 3), pixels)
    np.testing.assert_array_equal(liquid_items.raw_item(tf.constant(pixels)).numpy(), item)  # graph encoder too
    for bad, offset in [
        (item[:-1], "offset 16: 89 pixel bytes"),
        (item[:9], "offset 9"),
        (b"\x89RAX" + item[4:], "offset 0"),
    ]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=offset):
            liquid_items.decode_as("raw", tf.constant(bad), 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset 12: 3 channels, the dataset has 1"):
        liquid_items.decode_as("raw", tf.constant(item), 1)


def test_raw_records_are_read_as_pixels_and_name_the_file_and_offset_of_a_mismatch(crops, mixed, tmp_path):
    """LiquidDataset reads raw items as pixels in the record reader (item format "raw"): the same pixels as the
    item decoder; an item of other channels, or a record that is not of whole items, names the file and offset."""
    from tfliquid.records import RecordDataset, record_bytes

    def read(path, size, **options):
        return [x["item"] for x in RecordDataset(record_bytes(path, size), path, **options).as_numpy_iterator()]

    manifest = liquid_format.read_manifest(str(mixed))
    record = next(f for f in manifest.formats if f.name == "raw").records[0]
    path = str(mixed / record.path)
    as_pixels = read(path, record.num_bytes, item_format="raw", item_channels=3)
    as_items = read(path, record.num_bytes)
    assert len(as_pixels) == record.num_images
    for pixels, item in zip(as_pixels, as_items):
        np.testing.assert_array_equal(pixels, liquid_format.decode_raw(item))
    with pytest.raises(tf.errors.DataLossError, match=rf"{record.path}: offset \d+: 3 channels, the dataset has 1"):
        read(path, record.num_bytes, item_format="raw", item_channels=1)
    pcr = tmp_path / "pcr"
    tfliquid.pcr.convert(str(crops), str(pcr), images_per_record=60, progress=False)
    first = tfliquid.pcr.format.read_index(str(pcr)).records[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{first.path}: offset 0: the item format 'raw' reads"):
        read(str(pcr / first.path), first.prefix_ends[-1], item_format="raw", item_channels=3)


@pytest.fixture(scope="module")
def four_formats(crops, tmp_path_factory) -> pathlib.Path:
    """jpeg:png:raw:l3 at 1:1:1:1, records of 8: each format's items, all cropped alike."""
    dst = tmp_path_factory.mktemp("liquid-crop") / "four"
    tfliquid.liquid.convert(
        str(crops), str(dst), formats="jpeg,png,raw,l3", ratio="1:1:1:1", images_per_record=8, seed=3, progress=False
    )
    return dst


def test_center_crops_of_every_format_are_the_crop_of_its_decoded_pixels(four_formats):
    """JPEG items decode the window alone (at 8/8 here: 42 pixels to 24 is less than half), the others crop their
    decoded pixels: either way the pixels of crop_pixels of the whole decode, and normalised in the same op."""
    from tfliquid.jpeg.crop import IMAGENET_MEAN, IMAGENET_STD, center_crop_window, crop_pixels

    def by_key(**options):
        ds = tfliquid.LiquidDataset(str(four_formats), batch_size=8, shuffle=False, with_keys=True, **options)
        return {x["key"]: (x["format"], x["image"]) for x in ds.as_numpy_iterator()}

    whole = by_key()
    centred = by_key(decode_size=(24, 24), crop="center")
    normalised = by_key(decode_size=(24, 24), crop="center", dtype=tf.float32, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert len(whole) == len(centred) == 120
    assert collections.Counter(f for f, _ in centred.values()) == {b"jpeg": 30, b"png": 30, b"raw": 30, b"l3": 30}
    for key, (_, pixels) in whole.items():
        expected = crop_pixels(pixels, center_crop_window(pixels.shape), (24, 24)).numpy()
        assert np.array_equal(centred[key][1], expected), (key, centred[key][0])
        reference = (expected - np.float32(IMAGENET_MEAN)) / np.float32(IMAGENET_STD)
        np.testing.assert_allclose(normalised[key][1], reference, rtol=1e-5, atol=1e-5)
    squashed = tfliquid.LiquidDataset(str(four_formats), batch_size=8, decode_size=(20, 30), channels_first=True)
    assert squashed.element_spec["image"] == tf.TensorSpec([3, 20, 30], tf.uint8)
    assert sum(1 for _ in squashed) == 120


def test_random_crops_replay_by_seed_change_by_epoch_and_resume_from_a_checkpoint(four_formats, tmp_path):
    def make(**options):
        return tfliquid.LiquidDataset(
            str(four_formats), batch_size=8, seed=9, decode_size=(16, 16), crop="random", with_keys=True, **options
        )

    def images(iterator):
        return [(x["key"].numpy(), x["image"].numpy()) for x in iterator]

    run = images(make(epochs=2))
    assert len(run) == 240 and all(image.shape == (16, 16, 3) for _, image in run)
    again = images(make(epochs=2))
    assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(run, again, strict=True))
    first, second = dict(run[:120]), dict(run[120:])
    assert sum(not np.array_equal(first[key], second[key]) for key in first) > 100  # other crops every epoch
    iterator = iter(make(epochs=2))
    head = [next(iterator) for _ in range(50)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    restored = iter(make(epochs=2))
    tf.train.Checkpoint(iterator=restored).restore(saved)
    rest = images(restored)
    assert len(head) + len(rest) == 240
    assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(rest, run[50:], strict=True))


def test_random_crops_with_an_order_replay_by_seed(four_formats):
    order = tfliquid.order.SeededOrder(16, seed=4, num_workers=2, worker_index=1)

    def images():
        ds = tfliquid.LiquidDataset(
            str(four_formats), batch_size=8, order=order, epochs=1, decode_size=(16, 16), crop="random"
        )
        return [x["image"] for x in ds.as_numpy_iterator()]

    run = images()
    assert run and all(np.array_equal(a, b) for a, b in zip(run, images(), strict=True))


def test_crop_options_are_checked(crops, four_formats, tmp_path):
    with pytest.raises(tfliquid.ArgumentError, match="say how images are decoded: decode=True"):
        tfliquid.LiquidDataset(str(four_formats), batch_size=8, decode=False, crop="center")
    with pytest.raises(tfliquid.ArgumentError, match="crop must be 'random', 'center'"):
        tfliquid.LiquidDataset(str(four_formats), batch_size=8, crop="middle")
    grey = tmp_path / "grey"
    tfliquid.liquid.convert(str(crops), str(grey), formats="png", channels=1, images_per_record=60, progress=False)
    with pytest.raises(tfliquid.ArgumentError, match=r"has 1 channel\(s\), and only an RGB dataset"):
        tfliquid.LiquidDataset(str(grey), batch_size=8, crop="center", decode_size=(16, 16))
    assert tfliquid.LiquidDataset(str(grey), batch_size=8).element_spec["image"].shape[-1] == 1
