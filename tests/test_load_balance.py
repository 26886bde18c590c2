"""Lobster's split of a node's read threads among its workers (tfliquid.cache.load_balance): a worker with more
misses gets more threads, the split is the best one there is, and the simulator predicts what it gains."""

import itertools

import numpy as np
import pytest

from tfliquid import ArgumentError, cli
from tfliquid.cache import load_balance, multiworker


def _best_time(misses, threads) -> int:
    """The least slowest-worker time over every split of `threads` giving each worker one at least."""
    best = None
    for split in itertools.product(range(1, threads + 1), repeat=len(misses)):
        if sum(split) == threads:
            time = load_balance.step_fetch_time(misses, split)
            best = time if best is None else min(best, time)
    return best


def test_a_worker_with_more_misses_gets_more_threads_and_the_split_is_optimal():
    rng = np.random.default_rng(55)
    for _ in range(200):
        workers = int(rng.integers(1, 5))
        threads = int(rng.integers(workers, 10))
        misses = rng.integers(0, 30, workers)
        split = load_balance.split_threads(misses, threads)
        assert split.sum() == threads and (split >= 1).all()
        for a, b in itertools.permutations(range(workers), 2):
            if misses[a] > misses[b]:
                assert split[a] >= split[b], (misses, split)
        time = load_balance.step_fetch_time(misses, split)
        assert time == _best_time(misses, threads), (misses, threads, split)
        assert time <= load_balance.step_fetch_time(misses, load_balance.equal_threads(workers, threads))


def test_without_misses_the_threads_are_equal_and_bad_inputs_are_refused():
    assert load_balance.split_threads([0, 0, 0], 7).tolist() == [3, 2, 2]
    assert load_balance.equal_threads(4, 16).tolist() == [4, 4, 4, 4]
    with pytest.raises(ArgumentError, match="threads must be"):
        load_balance.split_threads([3, 4, 5], 2)
    with pytest.raises(ArgumentError, match="counts >= 0, one per worker"):
        load_balance.split_threads([3, -1], 4)
    with pytest.raises(ArgumentError, match=r"\[workers, steps\]"):
        load_balance.fetch_times([1, 2, 3], 4)


def test_fetch_times_of_balanced_and_skewed_steps():
    balanced = load_balance.fetch_times([[8, 8], [8, 8], [8, 8], [8, 8]], 16)
    assert balanced.equal == balanced.split == balanced.bound == 2.0
    skewed = load_balance.fetch_times([[16, 4], [4, 4], [4, 4], [4, 16]], 16)  # one straggler per step
    # 16 misses on 4 threads take 4 reads; split 10/2/2/2, every worker takes 2.
    assert skewed.equal == 4.0 and skewed.split == 2.0 and skewed.bound == 1.75 and skewed.ratio == 0.5


def test_the_simulator_predicts_the_split_between_the_bound_and_equal_threads():
    results = multiworker.simulate_workers(
        ["minio", "clairvoyant"], 4000, 4, 0.0625, 4, prefetch_bandwidth=0.5, read_threads=16
    )
    for result in results:
        fetch = result.fetch
        assert fetch.bound <= fetch.split <= fetch.equal, result.policy
        misses = result.step_misses
        assert misses.shape == (4, result.slice_length * 3 // 32)
    clairvoyant = results[1].fetch
    assert clairvoyant.split < clairvoyant.equal  # its steps' misses are uneven: the split pays


def test_cli_prints_the_fetch_times_for_the_read_threads_given(capsys):
    args = ["simulate", "cache", "--items", "2000", "--workers", "4", "--capacity", "0.1", "--epochs", "3"]
    tables = {}
    for threads in ("4", "16"):
        assert cli.main([*args, "--policies", "clairvoyant", "--read-threads", threads]) == 0
        out = capsys.readouterr().out
        assert f"of {threads} read threads" in out
        row = next(line.split() for line in out.splitlines() if line.startswith("clairvoyant"))
        tables[threads] = [float(value.replace(",", "")) for value in row[1:]]
    assert tables["4"][4] > tables["16"][4]  # fewer threads, longer fetches
    assert cli.main([*args, "--read-threads", "3"]) == 2  # fewer threads than workers
