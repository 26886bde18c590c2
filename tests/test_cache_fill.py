"""What a MinIO cache holds of a dataset of whole records (tfliquid.analysis.cache_fill): the admission by hand, and
a real cache filled by a PCR dataset of the shipped photos against the model's range."""

import itertools

import numpy as np
import pytest

import tfliquid
from tfliquid.analysis.cache_fill import admitted_bytes, held_share


def _admitted(sizes, capacity, header=0):
    sizes = np.asarray(sizes, dtype=np.float64)
    return admitted_bytes(sizes, sizes + header, capacity)


def test_admission_by_hand():
    assert _admitted([5, 5, 5], 12) == 10  # two fit, the third would overflow
    assert _admitted([6, 6, 3], 10) == 9  # the second does not fit; the smaller third fills the room it left
    assert _admitted([6, 6, 3, 1], 10) == 10  # and the fourth what is left after that
    assert _admitted([6, 6, 3], 10, header=1) == 6  # with a header each: 7, then 7 > 3 left, then 4 > 3 left
    assert _admitted([20, 1], 10) == 1  # the first is larger than the whole cache


def test_held_share_by_hand():
    records = [100] * 10
    assert held_share(records, 0, 450) == pytest.approx(0.4)  # 4 whole records, in any order
    assert held_share(records, 10, 450) == pytest.approx(0.4)  # 4 x 110 = 440 fits, a fifth does not
    assert held_share(records, 0, 1000) == 1.0
    assert held_share([1] * 10_000, 0, 5_000) == pytest.approx(0.5)  # items 5,000 times smaller: fine-grained
    # One record of 500 bytes and ten of 50, a cache of 600: the large one is admitted where it comes with 2 small
    # ones or fewer before it (3 of its 11 places), with 2 small ones (0.6 of the bytes); else all ten small ones
    # are (0.5). Expected: 0.5 + 0.1 * 3 / 11; the mean of the seeded orders comes near it.
    share = held_share([500] + [50] * 10, 0, 600)
    assert share == pytest.approx(0.5 + 0.1 * 3 / 11, abs=0.03) and share not in (0.5, 0.6)
    with pytest.raises(ValueError, match="one or more items"):
        held_share([], 0, 100)


def test_a_real_cache_holds_whole_records_within_the_models_range(photo_folder, tmp_path):
    path = str(tmp_path / "pcr")
    tfliquid.pcr.convert(str(photo_folder), path, images_per_record=2, progress=False)
    probe = tfliquid.PCRDataset(path, decode=False)
    sizes = probe.record_bytes()
    assert len(sizes) == 8 and sum(sizes) == probe.bytes_per_epoch() and len(set(sizes)) > 1
    with tfliquid.MinIOCache(1 << 30) as whole:
        assert sum(1 for _ in tfliquid.PCRDataset(path, decode=False, cache=whole)) == probe.num_images
        header = (whole.stats().bytes - sum(sizes)) / len(sizes)  # what the cache counts per record besides its bytes
    assert 0 < header < 200
    capacity = int(0.5 * (sum(sizes) + header * len(sizes)))
    rng = np.random.default_rng(0)
    costs = np.asarray(sizes, dtype=np.float64) + header
    orders = (rng.permutation(len(sizes)) for _ in range(2000))
    outcomes = [admitted_bytes(np.asarray(sizes)[o], costs[o], capacity) for o in orders]
    # every subset of whole records, for the bytes the cache holds to be one of them (headers vary by a few bytes)
    whole_records = {sum(c) for n in range(len(sizes) + 1) for c in itertools.combinations(sizes, n)}
    for seed in range(3):
        with tfliquid.MinIOCache(capacity) as cache:
            for _ in tfliquid.PCRDataset(path, decode=False, cache=cache, seed=seed):
                pass
            stats = cache.stats()
        held = stats.bytes - stats.items * header
        assert stats.bytes <= capacity and 0 < stats.items < len(sizes), str(stats)
        assert min(abs(held - s) for s in whole_records) <= 8 * stats.items, (held, sorted(sizes))
        assert min(outcomes) - 8 * stats.items <= held <= max(outcomes) + 8 * stats.items
    assert min(outcomes) < 0.5 * sum(sizes)  # a cache sized for half the bytes may hold less than half
