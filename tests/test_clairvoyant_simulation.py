"""The multi-worker cache simulator: clairvoyant is the optimum, on one worker it is MinIO, prefetch only helps."""

import numpy as np
import pytest
from cache_oracles import best_possible_hits

from tfliquid import ArgumentError, cli
from tfliquid.cache import multiworker
from tfliquid.order import SeededOrder


@pytest.mark.parametrize("num_items, workers", [(5, 1), (6, 2), (8, 2), (9, 3)])
def test_clairvoyant_equals_opt_and_the_exhaustive_optimum(num_items, workers):
    for seed in range(3):
        for capacity in range(1, 4):
            order = SeededOrder(num_items, seed, workers, workers - 1)
            epochs = 4
            trace = multiworker.worker_trace(order, epochs).tolist()
            clairvoyant = sum(multiworker.replay("clairvoyant", order, capacity, epochs))
            assert clairvoyant == sum(multiworker.replay("opt", order, capacity, epochs))
            assert clairvoyant == best_possible_hits(trace, capacity)


def test_on_one_worker_clairvoyant_and_nopfs_equal_minio():
    order = SeededOrder(500, 3)
    minio = multiworker.replay("minio", order, 120, 5)
    assert minio == [0, 120, 120, 120, 120]
    assert multiworker.replay("clairvoyant", order, 120, 5) == minio
    assert multiworker.replay("nopfs", order, 120, 5) == minio


def test_several_workers_the_policies_rank_as_the_issue_expects():
    results = {r.policy: r for r in multiworker.simulate_workers(multiworker.POLICIES, 4000, 4, 0.0625, 4)}
    assert results["clairvoyant"].hit_ratio == pytest.approx(results["opt"].hit_ratio)
    assert results["clairvoyant"].hit_ratio >= 2.5 * results["minio"].hit_ratio
    assert results["opt"].hit_ratio > results["nopfs"].hit_ratio > results["minio"].hit_ratio > results["lru"].hit_ratio
    reads = {p: r.storage_reads_per_epoch for p, r in results.items()}
    assert reads["clairvoyant"] == min(reads.values())
    assert all(r.imbalance >= 1 for r in results.values())


def test_prefetch_stays_within_its_bandwidth_and_only_adds_hits():
    order = SeededOrder(2000, 1, num_workers=4, worker_index=2)
    plain, _ = multiworker.replay_worker("clairvoyant", order, 100, 4)
    for bandwidth in (0.05, 0.25, 1.0):
        hits, prefetched = multiworker.replay_worker("clairvoyant", order, 100, 4, prefetch_bandwidth=bandwidth)
        assert hits.sum() > plain.sum()
        # Background reads never run ahead of the credit earned: at most bandwidth per read, plus one in hand.
        assert np.all(np.cumsum(prefetched) <= bandwidth * np.arange(1, len(prefetched) + 1) + 1)
        # Demand misses + prefetch reads: each item read from storage is either.
        assert (~hits).sum() + prefetched.sum() >= (~plain).sum() - 1


def test_cli_prints_the_multiworker_table(capsys):
    assert (
        cli.main(["simulate", "cache", "--items", "2000", "--workers", "4", "--capacity", "0.1", "--epochs", "3"]) == 0
    )
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if not line.startswith("fetch:")}
    assert set(rows) == set(multiworker.POLICIES)
    assert float(rows["clairvoyant"][0]) == float(rows["opt"][0]) > float(rows["minio"][0])
    assert cli.main(["simulate", "cache", "--prefetch-bandwidth", "0.5"]) == 2


def test_workers_of_unequal_slices_hit_at_most_every_read():
    """3 items over 2 workers: slices of 1 and 2 items. A cache that holds every item hits at most every read of each
    worker, counted over that worker's own reads."""
    results = multiworker.simulate_workers(list(multiworker.POLICIES), 3, 2, 1.0, 4, seed=0)
    for result in results:
        assert 0 < result.hit_ratio <= 1, result.policy


@pytest.mark.parametrize("method", ["positions", "items_at"])
def test_an_order_refuses_items_outside_it(method):
    order = SeededOrder(10, seed=3, num_workers=2, worker_index=1)
    for outside in (10, -1, [3, 12]):
        with pytest.raises(ArgumentError, match=r"must be in \[0, 10\)"):
            getattr(order, method)(outside, epoch=0)
    with pytest.raises(ArgumentError, match="epoch must be an int >= 0"):
        getattr(order, method)(3, epoch=-1)
    with pytest.raises(ArgumentError, match=r"item must be in \[0, 10\)"):
        order.next_use(10, epoch=0, index=0)  # its cycle walk would not end
    assert sorted(order.items_at(np.arange(10), epoch=2)) == list(range(10))
