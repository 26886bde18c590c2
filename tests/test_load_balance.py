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
    assert load_balance.fetch_times(np.zeros((3, 0), np.int64), 4).ratio == 1.0  # slices shorter than a step


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


def _eventually(condition, seconds: float = 60.0) -> bool:
    """Whether `condition()` holds within `seconds`, polled: states of threads, not their timing."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_read_queue_admits_its_threads_reads_at_a_time_and_counts_its_load(tmp_path):
    """Real reads, held by a slow throttle: the queue admits as many as its threads, the others wait in it, more
    threads admit more, and every file is read once (through a pipeline too)."""
    import threading

    import tensorflow as tf

    import tfliquid

    for i in range(5):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]) * 2_000)
    paths = [str(tmp_path / f"{i}.bin") for i in range(5)]
    got = {}

    def read(i):
        got[i] = tfliquid.io.read_file(paths[i], queue="lb-test").numpy()

    tfliquid.io.set_read_threads("lb-test", 2)
    tfliquid.io.set_read_bandwidth(1_000)  # two seconds a read, one after another on the link
    readers = [threading.Thread(target=read, args=(i,)) for i in range(5)]
    try:
        for reader in readers:
            reader.start()
        assert _eventually(lambda: tfliquid.io.read_queue_counts(["lb-test"]) == [(2, 3)], seconds=2.0)
        assert tfliquid.io.read_queue_lengths(["lb-test", "lb-test-unknown"]) == [5, 0]
        tfliquid.io.set_read_threads("lb-test", 4)  # more threads admit more of the waiting reads
        assert _eventually(lambda: tfliquid.io.read_queue_counts(["lb-test"])[0][0] >= 3, seconds=2.0)
        for reader in readers:
            reader.join()
    finally:
        tfliquid.io.set_read_bandwidth(None)
    assert got == {i: bytes([i]) * 2_000 for i in range(5)}
    assert tfliquid.io.read_queue_counts(["lb-test"]) == [(0, 0)]
    pipeline = tf.data.Dataset.from_tensor_slices(paths).map(
        lambda path: tfliquid.io.read_file(path, queue="lb-test"), num_parallel_calls=4, deterministic=True
    )
    assert list(pipeline.as_numpy_iterator()) == [got[i] for i in range(5)]  # every file once, in order
    with pytest.raises(tfliquid.ArgumentError, match="threads must be"):
        tfliquid.io.set_read_threads("lb-test", 0)
    with pytest.raises(tfliquid.ArgumentError, match="reads the whole file"):
        tfliquid.io.read_file(paths[0], offset=3, queue="lb-test")


def test_the_balancer_splits_by_the_misses_ahead_or_else_by_the_queues():
    import tfliquid

    queues = ["lb-balance-0", "lb-balance-1", "lb-balance-2"]
    predicted = np.array([[9, 0, 1], [1, 1, 1], [0, 9, 1]])
    balancer = load_balance.ReadBalancer(queues, 9, predicted, lookahead=2)
    assert balancer.step(0).tolist() == load_balance.split_threads([9, 2, 9], 9).tolist()
    assert balancer.step(2).tolist() == [3, 3, 3]  # the last step: 1 read each
    assert balancer.equal().tolist() == [3, 3, 3]
    measured = load_balance.ReadBalancer(queues, 9)  # no order: the queues' lengths, here all 0: equal
    assert measured.step(0).tolist() == [3, 3, 3]
    assert tfliquid.io.read_queue_lengths(queues) == [0, 0, 0]
    with pytest.raises(ArgumentError, match="a row per queue"):
        load_balance.ReadBalancer(queues, 9, predicted[:2])
    with pytest.raises(ArgumentError, match="distinct names"):
        load_balance.ReadBalancer(["a", "a"], 4)


def test_predicted_reads_are_the_replayed_misses_and_prefetches():
    from tfliquid.order import SeededOrder

    orders = [SeededOrder(400, 2, 4, w) for w in range(4)]
    predicted = load_balance.predicted_step_misses(orders, 25, 3, 10, prefetch_bandwidth=0.5)
    assert predicted.shape == (4, 30)
    for w, order in enumerate(orders):
        hits, prefetched = multiworker.replay_worker("clairvoyant", order, 25, 3, 0.5)
        assert predicted[w].sum() == (~hits).sum() + prefetched.sum()
    # The first epoch fills the caches: each of a worker's 100 records comes from storage once, read or prefetched.
    assert predicted[:, :10].sum(axis=1).tolist() == [100] * 4


def test_pcr_and_liquid_datasets_read_their_records_through_their_queue(photo_folder, tmp_path):
    import threading

    import tfliquid

    pcr, liquid = tmp_path / "pcr", tmp_path / "liquid"
    tfliquid.pcr.convert(str(photo_folder), str(pcr), images_per_record=2, progress=False)
    tfliquid.liquid.convert(
        str(photo_folder), str(liquid), formats="png,raw", ratio="1:1", images_per_record=2, progress=False
    )

    def datasets(queue):
        return {
            "pcr": tfliquid.PCRDataset(str(pcr), with_keys=True, decode=False, read_queue=queue),
            "liquid": tfliquid.LiquidDataset(str(liquid), batch_size=4, with_keys=True, read_queue=queue),
        }

    def keys(dataset, into):
        into.extend(x["key"] for x in dataset.as_numpy_iterator())

    plain = {name: [] for name in ("pcr", "liquid")}
    for name, dataset in datasets(None).items():
        keys(dataset, plain[name])
    tfliquid.io.set_read_threads("lb-datasets", 1)
    for name, dataset in datasets("lb-datasets").items():
        seen, lengths = [], []
        tfliquid.io.set_read_bandwidth(2e6)
        try:
            reader = threading.Thread(target=keys, args=(dataset, seen))
            reader.start()
            while reader.is_alive():
                lengths.append(tfliquid.io.read_queue_lengths(["lb-datasets"])[0])
            reader.join()
        finally:
            tfliquid.io.set_read_bandwidth(None)
        assert sorted(seen) == sorted(plain[name]) and len(seen) == len(set(seen)), name  # every image once
        assert max(lengths) >= 1, name  # its reads waited in the queue or were in flight there
    with pytest.raises(tfliquid.ArgumentError, match="read_queue must be a queue's name"):
        tfliquid.PCRDataset(str(pcr), read_queue=3)
