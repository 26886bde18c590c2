"""Records read through a MinIO cache (PCRDataset and LiquidDataset with cache=): what the cache admits, and
under which key, so that a cached record is only ever served for the bytes it was read from."""

import shutil

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.pcr import format as pcr_format


@pytest.fixture(scope="module")
def pcr_dataset(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("pcr") / "photos"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=6, seed=1, progress=False)
    return dst


def _images(ds):
    return {bytes(x["key"]): x["image"].tobytes() for x in ds.as_numpy_iterator()}


def test_a_damaged_record_is_not_admitted_and_its_repair_is_read(pcr_dataset, tmp_path):
    path, directory = tmp_path / "pcr", tmp_path / "cache"
    shutil.copytree(pcr_dataset, path)
    entry = pcr_format.read_index(str(path)).records[1]
    record = path / entry.path
    good = record.read_bytes()
    damaged = bytearray(good)
    damaged[entry.prefix_ends[-1] - 10] ^= 0x40  # in the last scan group
    record.write_bytes(bytes(damaged))

    def read():
        cache = tfliquid.MinIOCache(1 << 22, directory=directory)
        ds = tfliquid.PCRDataset(str(path), shuffle=False, with_keys=True, cache=cache, num_parallel_reads=1)
        return _images(ds), cache.stats()

    with pytest.raises(tf.errors.DataLossError, match=rf"{entry.path}: offset \d+: group \d+ CRC32C mismatch"):
        read()
    record.write_bytes(good)  # repaired, as a conversion rerun does
    expected = _images(tfliquid.PCRDataset(str(pcr_dataset), shuffle=False, with_keys=True))
    images, stats = read()
    assert images == expected and stats.items == len(pcr_format.read_index(str(path)).records)


def _pixels(path, cache):
    ds = tfliquid.LiquidDataset(path, batch_size=4, shuffle=False, cache=cache, with_keys=True)
    return {bytes(k): image.tobytes() for x in ds.as_numpy_iterator() for k, image in zip(x["key"], x["image"])}


@pytest.mark.slow
def test_one_relative_path_in_two_working_directories_names_two_datasets(tmp_path, monkeypatch):
    """Two datasets at one relative path (from two working directories) read through one cache directory: each
    reads its own pixels, the second never hits the first's records."""
    rng = np.random.default_rng(0)
    cache_dir = tmp_path / "cache"
    read = {}
    for side in ("a", "b"):
        source = tmp_path / side / "images" / "class"
        source.mkdir(parents=True)
        for i in range(4):
            Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(source / f"{i}.png")
        monkeypatch.chdir(tmp_path / side)
        tfliquid.liquid.convert("images", "ds", formats="raw", ratio="1", images_per_record=2, progress=False)
        read[side] = _pixels("ds", tfliquid.MinIOCache(1 << 22, directory=cache_dir))
        fresh = tfliquid.LiquidDataset("ds", batch_size=4, shuffle=False, with_keys=True)
        assert read[side] == {
            bytes(k): i.tobytes() for x in fresh.as_numpy_iterator() for k, i in zip(x["key"], x["image"])
        }
    assert read["a"] != read["b"]


def test_a_dataset_reconverted_in_place_is_read_anew_through_a_kept_cache(tmp_path):
    """Other pixels of the same sizes, names and labels, converted to the same path: a cache directory kept from
    the first dataset serves none of its records (their identities differ), and the new pixels are read."""
    rng = np.random.default_rng(1)
    old, new = tmp_path / "old" / "class", tmp_path / "new" / "class"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    for i in range(4):
        pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(old / f"{i}.png")
        Image.fromarray(pixels[:, ::-1]).save(new / f"{i}.png")
    path, cache_dir = str(tmp_path / "ds"), tmp_path / "cache"
    options = {"formats": "raw", "ratio": "1", "images_per_record": 2, "progress": False}
    tfliquid.liquid.convert(str(old.parent), path, **options)
    before = _pixels(path, tfliquid.MinIOCache(1 << 22, directory=cache_dir, name="first"))
    tfliquid.liquid.convert(str(new.parent), path, overwrite=True, **options)
    cache = tfliquid.MinIOCache(1 << 22, directory=cache_dir, name="second")
    after = _pixels(path, cache)
    assert cache.stats().epochs[0].hits == 0
    assert after == _pixels(path, None) and after.keys() == before.keys() and after != before
