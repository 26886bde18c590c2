"""Pipelines through the MinIO cache checkpoint mid-epoch and resume where they were (PCRDataset, LiquidDataset,
minio_cache), also in a new process."""

import subprocess
import sys

import pytest
import tensorflow as tf

import tfliquid


@pytest.fixture(scope="module")
def pcr(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("checkpoints") / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=5, progress=False)
    return str(dst)


@pytest.fixture(scope="module")
def pcr1(photo_folder, tmp_path_factory):
    """One image per record: an order over many records."""
    dst = tmp_path_factory.mktemp("checkpoints") / "pcr1"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=1, progress=False)
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


# A PCR dataset read in a seeded order through a clairvoyant cache (worker 1 of 2), `epochs` epochs.
_CLAIRVOYANT_PCR = """
import tensorflow as tf, tfliquid
from tfliquid.order import SeededOrder
def make(path, epochs):
    order = SeededOrder(tfliquid.PCRDataset(path).num_records, seed=5, num_workers=2, worker_index=1)
    cache = tfliquid.MinIOCache(1 << 14, policy="clairvoyant", order=order)
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return tfliquid.PCRDataset(path, decode=False, with_keys=True, cache=cache, epochs=epochs,
                               num_parallel_reads=1).with_options(options)
"""


@pytest.mark.slow  # a new process
def test_a_clairvoyant_pipeline_restores_in_a_new_process(pcr1, tmp_path):
    """The cache of a new process has not seen the pass a checkpoint is in: the restored pass reads its epoch, as
    the saved one did, and the clairvoyant policy places its reads there."""
    scope = {}
    exec(_CLAIRVOYANT_PCR, scope)
    full = [x["key"].numpy().decode() for x in scope["make"](pcr1, 4)]
    head_length = len(full) // 2 + 1  # into epoch 2: a new policy, counting its reads, would place them in 0 or 1
    iterator = iter(scope["make"](pcr1, 4))
    for _ in range(head_length):
        next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    code = _CLAIRVOYANT_PCR + (
        f"it = iter(make({pcr1!r}, 4))\n"
        f"tf.train.Checkpoint(iterator=it).restore({saved!r})\n"
        "for x in it: print(x['key'].numpy().decode())\n"
    )
    restored = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert restored.stdout.split() == full[head_length:]


@pytest.mark.parametrize("kind", ["pcr", "liquid", "liquid cache"])
def test_a_restore_late_in_an_epoch_reads_the_later_epochs_as_the_uninterrupted_run(pcr, liquid_photos, kind, tmp_path):
    """A checkpoint taken once a parallel interleave has opened every record of the epoch saves no position of a
    shuffle or a random draw before it: the orders of the later epochs must come from what the pipeline saves."""
    make = {
        "pcr": lambda: tfliquid.PCRDataset(pcr, decode=False, with_keys=True, seed=3, num_parallel_reads=2).repeat(3),
        "liquid": lambda: tfliquid.LiquidDataset(
            liquid_photos, 4, seed=3, decode=False, with_keys=True, num_parallel_reads=2
        ).repeat(3),
        "liquid cache": lambda: tfliquid.LiquidDataset(
            liquid_photos, 4, seed=3, decode=False, with_keys=True, num_parallel_reads=2, cache=1 << 16, epochs=3
        ),
    }[kind]
    full = [x["key"].numpy() for x in make()]
    per_epoch = len(full) // 3
    first, second = full[:per_epoch], full[per_epoch : 2 * per_epoch]
    assert sorted(first) == sorted(second) and first != second  # every epoch reshuffled
    iterator = iter(make())
    for _ in range(per_epoch - 2):
        next(iterator)
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert [x["key"].numpy() for x in restored] == full[per_epoch - 2 :]
