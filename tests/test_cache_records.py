"""Records read through a MinIO cache (PCRDataset and LiquidDataset with cache=): what the cache admits, and
under which key, so that a cached record is only ever served for the bytes it was read from."""

import shutil

import pytest
import tensorflow as tf

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
