"""Pipelines through the MinIO cache checkpoint mid-epoch and resume where they were (PCRDataset, LiquidDataset,
minio_cache)."""

import pytest
import tensorflow as tf

import tfliquid


@pytest.fixture(scope="module")
def pcr(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("checkpoints") / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=5, progress=False)
    return str(dst)


def _resumes(make, tmp_path, head_length: int) -> None:
    """A checkpoint taken after `head_length` elements restores, in a new pipeline, to the same remaining keys."""
    iterator = iter(make())
    head = [next(iterator)["key"].numpy() for _ in range(head_length)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    tail = [x["key"].numpy() for x in iterator]
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert [x["key"].numpy() for x in restored] == tail
    assert len(head) == head_length and tail


@pytest.mark.parametrize("epoch", [0, 1])  # the pass that fills the cache, and one that hits it
def test_a_pcr_dataset_through_a_cache_checkpoints(pcr, tmp_path, epoch):
    cache = tfliquid.MinIOCache(1 << 26)
    make = lambda: tfliquid.PCRDataset(pcr, decode=False, seed=3, with_keys=True, cache=cache)  # noqa: E731
    for _ in range(epoch):
        list(make())
    _resumes(make, tmp_path, 7)
    assert cache.stats().items == tfliquid.PCRDataset(pcr).num_records


def test_a_liquid_dataset_through_a_cache_checkpoints(liquid_photos, tmp_path):
    make = lambda: tfliquid.LiquidDataset(liquid_photos, 4, seed=2, cache=1 << 26, with_keys=True)  # noqa: E731
    _resumes(make, tmp_path, 5)


def test_a_minio_cache_pipeline_checkpoints(tmp_path):
    cache = tfliquid.MinIOCache(1 << 20)
    keys = tf.data.Dataset.range(40).shuffle(40, seed=1, reshuffle_each_iteration=False)
    make = lambda: keys.apply(  # noqa: E731
        tfliquid.minio_cache(lambda k: {"key": tf.strings.as_string(k)}, cache=cache, num_parallel_calls=2)
    )
    list(make())  # some later reads are hits
    _resumes(make, tmp_path, 11)
