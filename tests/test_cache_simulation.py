"""The policy simulator reproduces CoorDL's finding: under per-epoch shuffling MinIO hits exactly the cached
fraction, LRU fewer, and Belady's OPT (checked against exhaustive search on small traces) bounds both."""

import itertools

import pytest
from cache_oracles import best_possible_hits

import tfliquid
from tfliquid.cache import multiworker, simulation


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


def test_opt_is_optimal_on_small_traces():
    for num_items, capacity, epochs, seed in itertools.product([4, 5], [1, 2, 3], [3], range(4)):
        result = tfliquid.cache.simulate("opt", num_items, capacity, epochs, seed=seed)
        trace = tuple(int(i) for order in simulation.epoch_orders(num_items, epochs, seed) for i in order)
        assert sum(result.hits) == best_possible_hits(trace, capacity)


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
    # The single-reader simulator holds the order-free policies; the clairvoyant one needs a seeded order, so its
    # twin is in the multi-worker simulator (replayed against the C++ store in tests/test_clairvoyant_cache.py).
    assert tfliquid.cache.store_policies()[0] == "minio"  # the default
    order_free = set(tfliquid.cache.store_policies()) - {"clairvoyant"}
    assert order_free <= set(simulation.POLICIES)
    assert set(tfliquid.cache.store_policies()) <= set(multiworker.POLICIES)


@pytest.mark.parametrize(
    "options, refusal",
    [
        (["--items", "0"], "argument --items: must be a whole number >= 1, got '0'"),
        (["--capacity", "1.5"], "argument --capacity: must be a fraction in [0, 1) or a whole number of items"),
        (["--capacity", "inf"], "argument --capacity: must be a fraction in [0, 1) or a whole number of items"),
        (["--capacity", "-0.5"], "argument --capacity: must be a fraction in [0, 1) or a whole number of items"),
        (["--items", "10000000"], "10000000 items x 5 epochs = 50,000,000 reads to replay; the simulation replays"),
        (["--workers", "2", "--prefetch-bandwidth", "nan"], "prefetch_bandwidth must be a number of reads per read"),
    ],
)
def test_cli_refuses_sizes_it_cannot_simulate_with_one_line(capsys, options, refusal):
    from tfliquid import cli

    try:
        status = cli.main(["simulate", "cache", *options])
    except SystemExit as e:  # argparse's refusals exit themselves
        status = e.code
    assert status == cli.EXIT_USAGE
    assert refusal in capsys.readouterr().err.strip().splitlines()[-1]


def test_cli_shows_the_progress_of_many_workers(capsys):
    from tfliquid import cli

    options = ["--items", "2000", "--workers", "200", "--epochs", "2", "--policies", "minio,lru"]
    assert cli.main(["simulate", "cache", *options]) == 0
    progress = capsys.readouterr().err.splitlines()
    assert progress[-1].startswith("400/400 worker replays") and len(progress) >= 2, progress
