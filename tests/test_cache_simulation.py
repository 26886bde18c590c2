"""The policy simulator reproduces CoorDL's finding: under per-epoch shuffling MinIO hits exactly the cached
fraction, LRU fewer, and Belady's OPT (checked against exhaustive search on small traces) bounds both."""

import functools
import itertools

import pytest

import tfliquid
from tfliquid.cache import simulation


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.75, 0.9])
def test_minio_hits_the_fraction_and_lru_thrashes(fraction):
    num_items, epochs = 2000, 5
    capacity = int(fraction * num_items)
    results = {
        policy: tfliquid.cache.simulate(policy, num_items, capacity, epochs, seed=1)
        for policy in ("minio", "lru", "opt")
    }
    for result in results.values():
        assert result.hits[0] == 0  # a cold cache
    assert results["minio"].hit_ratios[1:] == [capacity / num_items] * (epochs - 1)
    for epoch in range(1, epochs):
        assert results["lru"].hit_ratios[epoch] < fraction - 0.02  # thrashing costs hits
        assert results["opt"].hits[epoch] >= results["minio"].hits[epoch]


def test_full_and_empty_caches():
    assert tfliquid.cache.simulate("lru", 50, 50, 3).hits == [0, 50, 50]
    assert tfliquid.cache.simulate("minio", 50, 80, 3).hits == [0, 50, 50]
    assert tfliquid.cache.simulate("opt", 50, 0, 3).hits == [0, 0, 0]


def _best_possible_hits(trace, capacity):
    """Exhaustive search over every admission and eviction choice: the true optimum for tiny traces."""

    @functools.cache
    def best(t, cached):
        if t == len(trace):
            return 0
        item = trace[t]
        if item in cached:
            return 1 + best(t + 1, cached)
        options = [best(t + 1, cached)]  # bypass
        if len(cached) < capacity:
            options.append(best(t + 1, cached | {item}))
        else:
            options += [best(t + 1, (cached - {victim}) | {item}) for victim in cached]
        return max(options)

    return best(0, frozenset())


def test_opt_is_optimal_on_small_traces():
    for num_items, capacity, epochs, seed in itertools.product([4, 5], [1, 2, 3], [3], range(4)):
        result = tfliquid.cache.simulate("opt", num_items, capacity, epochs, seed=seed)
        trace = tuple(int(i) for order in simulation.epoch_orders(num_items, epochs, seed) for i in order)
        assert sum(result.hits) == _best_possible_hits(trace, capacity)


def test_report_and_validation():
    text = str(tfliquid.cache.simulate("minio", 10, 5, 2))
    assert "minio: 10 items, capacity 5 (50.0%)" in text and "epoch 1: hit ratio 0.5000" in text
    with pytest.raises(ValueError, match="policy"):
        tfliquid.cache.simulate("fifo", 10, 5, 2)
    with pytest.raises(ValueError, match="num_items"):
        tfliquid.cache.simulate("lru", 0, 5, 2)
    with pytest.raises(ValueError, match="capacity"):
        tfliquid.cache.simulate("lru", 10, -1, 2)
    with pytest.raises(ValueError, match="epochs"):
        tfliquid.cache.simulate("lru", 10, 5, 1.5)


def test_cli_prints_the_policies_side_by_side(capsys):
    from tfliquid import cli

    assert cli.main(["simulate", "cache", "--items", "400", "--capacity", "0.25", "--epochs", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "400 items, cache of 100 (25.0%); hit ratio per epoch"
    assert lines[1].split() == ["epoch", "minio", "lru", "opt"]
    epoch2 = [float(x) for x in lines[4].split()[1:]]
    assert epoch2[0] == 0.25 and epoch2[1] < 0.25 <= epoch2[2]


def test_every_policy_a_cache_can_run_has_a_simulator_twin():
    assert tfliquid.cache.store_policies()[0] == "minio"  # the default
    assert set(tfliquid.cache.store_policies()) <= set(simulation.POLICIES)
