"""The multi-worker cache simulator: clairvoyant is the optimum, on one worker it is MinIO, prefetch only helps."""

import numpy as np
import pytest
from cache_oracles import best_possible_hits

from tfliquid import cli
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
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:]}
    assert set(rows) == set(multiworker.POLICIES)
    assert float(rows["clairvoyant"][0]) == float(rows["opt"][0]) > float(rows["minio"][0])
    assert cli.main(["simulate", "cache", "--prefetch-bandwidth", "0.5"]) == 1
