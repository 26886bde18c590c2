"""The data-stall analyzer (tfliquid.analysis) and StallMonitor: the scaling fit and the what-if arithmetic on
hand-computed cases; every phase on real pipelines (PNG files read through the throttle, a PCR dataset) with a
small Keras model; fetch-bound and prep-bound setups told apart; the op table naming the op made slow on
purpose; the recommendation's code run; the CLI; the thread plan; the monitor in model.fit."""

import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.analysis import Change, Measurements, ScalingFit, fit_scaling, phases, predict
from tfliquid.analysis.monotone import monotone_prep_by_group
from tfliquid.analysis.recommendation import checked_recommendation
from tfliquid.analysis.whatif import NEAR_BEST, candidate_changes, fetch_with_cache, recommend
from tfliquid.samples import photos as sample_photos

ROOT = Path(__file__).resolve().parent.parent
BATCH = 16


def test_fit_recovers_a_piecewise_linear_curve():
    rng = np.random.default_rng(0)
    threads = [1, 2, 3, 4, 5, 6, 7, 8]
    rates = [min(100 * k, 350) * (1 + rng.normal(0, 0.01)) for k in threads]
    fit = fit_scaling(threads, rates)
    assert fit.knee == pytest.approx(3.5, abs=0.15)
    assert fit.slope == pytest.approx(100, rel=0.05) and fit.peak == pytest.approx(350, rel=0.02)
    assert fit.threads_at_peak() == 4  # 3 threads give 300: 86% of the peak
    flat = fit_scaling([1, 2, 3], [200, 199, 201])
    assert flat.threads_at_peak() == 1 and flat.peak == pytest.approx(200, rel=0.01)
    with pytest.raises(ValueError, match="two or more thread counts"):
        fit_scaling([2, 2], [1, 1])


def test_prep_by_scan_group_is_held_to_the_decoding_order():
    # Groups 2 and 3 measured out of order (3 faster than 2): pooled at their mean time per item, 1 / ((1/90 +
    # 1/95) / 2) = 92.43; group 1 and full fidelity keep theirs.
    fitted = monotone_prep_by_group({None: 50.0, 3: 95.0, 1: 100.0, 2: 90.0})
    assert fitted == pytest.approx({1: 100.0, 2: 2 / (1 / 90 + 1 / 95), 3: 2 / (1 / 90 + 1 / 95), None: 50.0})
    # A run of three, full fidelity in it: group 5 at 80 after group 6's 85 and full fidelity's 90.
    fitted = monotone_prep_by_group({4: 100.0, 5: 80.0, 6: 85.0, None: 90.0})
    assert fitted[4] == 100.0 and fitted[5] == fitted[6] == fitted[None] == pytest.approx(
        3 / (1 / 80 + 1 / 85 + 1 / 90)
    )
    in_order = {1: 9.0, 2: 8.0, None: 7.0}
    assert monotone_prep_by_group(in_order) == in_order and monotone_prep_by_group({None: 5.0}) == {None: 5.0}


def _measured(**overrides) -> Measurements:
    values = dict(
        ingestion=1000.0,
        prep=400.0,
        prep_by_threads={1: 200.0, 2: 400.0, 3: 400.0},
        scaling=ScalingFit(0.0, 200.0, 2.0),
        fetch_bytes_per_second=100_000.0,
        fetch_cpu_seconds_per_item=0.0002,
        cache_fetch=10_000.0,
        cache_fetch_by_scan_group={None: 10_000.0, 2: 40_000.0},
        cache_cpu_by_scan_group={None: 0.0001, 2: 0.00005},
        training=95.0,
        training_cached=300.0,
        training_served_by_threads={None: 300.0, 1: 250.0, 2: 300.0},
        training_cpu_by_threads={None: 0.004, 1: 0.006, 2: 0.004},
        bytes_per_item={None: 1000.0, 2: 250.0},
        scan_group=None,
        scan_groups=4,
        prep_by_scan_group={None: 400.0, 2: 500.0},
        read_cpu_by_scan_group={None: 0.0002, 2: 0.0001},
        model_on_cpu=False,
        cores=2,
        dataset_bytes=1_000_000,
    )
    return Measurements(**(values | overrides))


def test_whatif_arithmetic_by_hand():
    m = _measured()
    assert fetch_with_cache(100, 10_000, 0.5) == pytest.approx(1 / (0.5 / 10_000 + 0.5 / 100))
    assert predict(m, Change())["rate"] == pytest.approx(100)  # fetch-bound
    assert predict(m, Change(cache_fraction=0.5))["rate"] == pytest.approx(198.0198, rel=1e-5)
    assert predict(m, Change(cache_fraction=1.0))["rate"] == pytest.approx(400)  # now prep-bound: capped by P
    # scan group 2 reads a quarter of the bytes: F' = 100 items/s * 1000 / 250 = 400; its prep runs at 500
    assert predict(m, Change(scan_group=2)) == pytest.approx(
        {"ingestion": 1000, "prep": 500, "fetch": 400, "rate": 400}
    )
    assert predict(m, Change(cache_fraction=1.0, prep_parallelism=1))["rate"] == pytest.approx(200)  # fit(1)/fit(2)
    # The model on the CPU: R = 300 without fetch splits 1/G : 1/P = 2 : 5; prep twice as fast (scan group 2)
    # scales prep's part of its time and of its CPU seconds (4 ms per item: 1.2 of the 2 cores) by s = 0.643.
    cpu = _measured(model_on_cpu=True, prep_by_scan_group={None: 400.0, 2: 800.0})
    share = (1 / 1000) / (1 / 1000 + 1 / 400)
    s = share + (1 - share) / 2
    assert predict(cpu, Change(scan_group=2))["rate"] == pytest.approx(min(300 / s, 400))  # storage: 400
    assert predict(cpu, Change(scan_group=2, cache_fraction=1.0))["rate"] == pytest.approx(300 / s)
    assert predict(cpu, Change(cache_fraction=1.0))["rate"] == pytest.approx(300)  # the cores are not all busy
    assert predict(cpu, Change(cache_fraction=0.5))["rate"] == pytest.approx(200)  # storage: 100 / (1 - 0.5)
    assert predict(cpu, Change(cache_fraction=1.0, prep_parallelism=1))["rate"] == pytest.approx(250)  # R(1)
    # Reads that cost 4 ms of CPU per item on fast storage, where the job was measured with cache hits of 0.1 ms:
    # the cores' budget binds, 2 / (4 ms + 3.9 ms) = 253.2.
    costly_reads = _measured(model_on_cpu=True, fetch_cpu_seconds_per_item=0.004, fetch_bytes_per_second=1e9)
    assert predict(costly_reads, Change())["rate"] == pytest.approx(2 / 0.0079)
    # At scan group 2 (prep 500 here) they were measured at half the CPU: the budget, 2 / (4 ms * s2 + 1.9 ms) =
    # 375.3, no longer binds; R' = 300 / s2 = 350 does.
    s2 = share + (1 - share) * 400 / 500
    assert predict(costly_reads, Change(scan_group=2))["rate"] == pytest.approx(300 / s2)  # 350
    # Half of the reads from the cache (0.1 ms): the budget, 2 / (4 ms + 0.5 * 4 ms + 0.5 * 0.1 ms - 0.1 ms) =
    # 336.1, no longer binds; R = 300 does.
    assert predict(costly_reads, Change(cache_fraction=0.5))["rate"] == pytest.approx(300)
    # The job's speed-up measured with scan group 2's prep (twice as fast): 1.25x, so its time follows beta =
    # (1 / 1.25 - 1) / (400 / 800 - 1) = 0.4 of a change in prep's time: R' = 300 / (1 - 0.4 * 0.5) = 375 at group 2
    # (not 300 / s = 467 as the split has it). Its CPU seconds still scale by s: the budget, 2 / (4 ms * s), = 778.
    responsive = _measured(
        model_on_cpu=True, prep_by_scan_group={None: 400.0, 2: 800.0}, response_variant=2, response_speedup=1.25
    )
    assert responsive.prep_response == pytest.approx(0.4)
    assert cpu.prep_response == pytest.approx(1 - share)  # not measured: the split's
    assert predict(responsive, Change(scan_group=2, cache_fraction=1.0))["rate"] == pytest.approx(375)
    assert predict(responsive, Change(cache_fraction=1.0))["rate"] == pytest.approx(300)  # its own prep: R
    # A cheaper prep that measured slower (noise) does not make the job slower: beta is 0, not negative.
    assert dataclasses.replace(responsive, response_speedup=0.98).prep_response == 0
    # A second speed-up measured (a check): scan group 3's prep 1.25x as fast (x = 400 / 500 - 1 = -0.2), its job
    # 1 / 0.9x as fast (y = -0.1). One response is fitted to both points: beta = (0.5 * 0.2 + 0.2 * 0.1) / (0.5^2 +
    # 0.2^2) = 0.4138, which every variant then takes: group 2's job at R / (1 - 0.4138 * 0.5) = 378.3, not the 375
    # its own speed-up alone gave.
    checked = dataclasses.replace(
        responsive, prep_by_scan_group={None: 400.0, 2: 800.0, 3: 500.0}, checked_speedups={3: 1 / 0.9}
    )
    assert checked.prep_response == pytest.approx(0.12 / 0.29)
    assert predict(checked, Change(scan_group=2, cache_fraction=1.0))["rate"] == pytest.approx(
        300 / (1 - 0.12 / 0.29 * 0.5)
    )
    # A prep within a tenth of the pipeline's (scan group 2 at 430 against 400) is predicted as the pipeline's: the
    # job's rate and its CPU unchanged (300, where 430 would give 300 / (1 - 0.4 * 0.07) = 308.6).
    close = dataclasses.replace(responsive, prep_by_scan_group={None: 400.0, 2: 430.0})
    group_2 = predict(close, Change(scan_group=2, cache_fraction=1.0))
    assert (group_2["prep"], group_2["rate"]) == pytest.approx((400, 300))


def test_the_response_with_prep_on_fewer_threads_than_the_cores_by_hand():
    # On every core (2), the job followed 0.4 of scan group 2's change in prep's time (see above). With both preps
    # on 1 thread, group 2's made the job 1 / 0.7x as fast: beta(1) = (0.7 - 1) / (400 / 800 - 1) = 0.6, so group
    # 2 all cached on 1 thread runs R(1) / (1 - 0.6 * 0.5) = 250 / 0.7 = 357.1 (the cores' budget, 2 / (6 ms *
    # 0.643) = 518.5, does not bind); on 2 threads still R(2) / (1 - 0.4 * 0.5) = 375.
    both = _measured(
        model_on_cpu=True,
        prep_by_scan_group={None: 400.0, 2: 800.0},
        response_variant=2,
        response_speedup=1.25,
        single_thread_speedup=1 / 0.7,
    )
    assert both.prep_response_at(1) == pytest.approx(0.6)
    assert both.prep_response_at(2) == both.prep_response_at(None) == both.prep_response == pytest.approx(0.4)
    assert predict(both, Change(scan_group=2, cache_fraction=1.0, prep_parallelism=1))["rate"] == pytest.approx(
        250 / 0.7
    )
    assert predict(both, Change(scan_group=2, cache_fraction=1.0, prep_parallelism=2))["rate"] == pytest.approx(375)
    # Unmeasured on 1 thread (1 core, or no response measured), every parallelism takes the cores' response.
    assert dataclasses.replace(both, single_thread_speedup=None).prep_response_at(1) == pytest.approx(0.4)
    # On 4 cores, beta moves linearly from 1 thread's to the cores': at 2 threads 0.6 + (0.4 - 0.6) / 3.
    four = dataclasses.replace(both, cores=4)
    assert four.prep_response_at(2) == pytest.approx(0.6 - 0.2 / 3) and four.prep_response_at(4) == pytest.approx(0.4)
    # Clamped as the cores' response is: a cheaper prep that measured slower on 1 thread does not slow the job.
    assert dataclasses.replace(both, single_thread_speedup=0.97).prep_response_at(1) == 0


def test_cache_capacity_by_hand():
    # 1,000 items of 1,000 bytes, and a cache that counted 1.001 bytes per byte stored on the subset: 1,000 bytes
    # of headers and keys for the whole dataset, at any scan group; 1% over.
    m = _measured(cache_bytes_per_stored_byte=1.001)
    assert m.cache_capacity(Change(cache_fraction=1.0)) == 1_011_010  # (1,000,000 + 1,000) * 1.01
    assert m.cache_capacity(Change(cache_fraction=0.5, scan_group=2)) == 126_755  # 0.5 * (250,000 + 1,000) * 1.01
    assert m.cache_capacity(Change()) == 0
    # the budget: with 300 kB, no cache of full fidelity over 0.2, and of scan group 2 none over 1.0
    changes = candidate_changes(m, 300_000)
    assert max(c.cache_fraction for c in changes if c.scan_group is None) == 0.2
    assert max(c.cache_fraction for c in changes if c.scan_group == 2) == 1.0


def test_cache_share_of_whole_records_by_hand():
    # The dataset in 4 records of 250 kB (62.5 kB at scan group 2), no headers: a cache holds whole records.
    m = _measured(cache_item_bytes={None: (250_000,) * 4, 2: (62_500,) * 4})
    assert m.cache_share(Change(cache_fraction=0.5)) == 0.5  # 505,000 bytes: 2 records
    assert m.cache_share(Change(cache_fraction=0.7)) == 0.5  # 707,000: still 2 (3 take 750,000)
    assert m.cache_share(Change(cache_fraction=0.7, scan_group=2)) == 0.5  # 176,750: 2 of 62,500
    assert m.cache_share(Change(cache_fraction=1.0)) == 1.0 and m.cache_share(Change()) == 0.0
    # so 70% predicts what 50% does where records are unknown (items too small to matter: the fraction itself)
    assert _measured().cache_share(Change(cache_fraction=0.7)) == 0.7
    # Whole records of 2.5 s each on storage, one read at a time: the job waits for each (record_reads), 133.3
    # items/s (tests/test_record_reads.py), where reads spread over the epoch would give 198.0 (F'(h), h = 0.5).
    assert predict(m, Change(cache_fraction=0.7))["rate"] == pytest.approx(1000 / 7.5)
    assert predict(m, Change(cache_fraction=0.7))["fetch"] == pytest.approx(198.0198, rel=1e-5)


def test_liquid_ratio_whatif_by_hand():
    # PNG preps at 400 items/s and raw at 4,000; raw holds 3x PNG's 1,000 bytes. At png:raw 6:4 prep runs at
    # 1 / (0.6 / 400 + 0.4 / 4000) = 625 and an item is 0.6 * 1000 + 0.4 * 3000 = 1,800 bytes: storage gives
    # 100,000 / 1,800 = 55.6 items/s, the cache 10,000 * 1000 / 1800 = 5,556.
    m = _measured(raw_prep=4000.0, raw_bytes_ratio=3.0)
    assert predict(m, Change(liquid_ratio=6)) == pytest.approx(
        {"ingestion": 1000, "prep": 625, "fetch": 100_000 / 1800, "rate": 100_000 / 1800}
    )
    assert predict(m, Change(liquid_ratio=6, cache_fraction=1.0)) == pytest.approx(
        {"ingestion": 1000, "prep": 625, "fetch": 10_000_000 / 1800, "rate": 625}
    )
    assert predict(m, Change(liquid_ratio=10)) == pytest.approx(predict(m, Change()))  # 10:0 is PNG alone
    # Cached whole, raw alone (0:10) preps fastest and the model's 1,000 items/s bind: the best of all changes.
    change, prediction, best = recommend(m, memory_budget_bytes=1e12)
    assert best == pytest.approx(1000) and prediction["rate"] >= NEAR_BEST * best
    assert change.liquid_ratio is not None and change.cache_fraction == 1.0
    assert predict(m, Change(liquid_ratio=change.liquid_ratio, cache_fraction=1.0))["prep"] >= NEAR_BEST * 1000


def test_recommendation_is_the_cheapest_change_near_the_best():
    # Scan group 2 preps faster (500) and reads a quarter of the bytes: the best is 500, prep-bound, and only
    # group 2 gets within NEAR_BEST (97%) of it; the least cache that does: f = 0.2 (F' = 498.8; f = 0.1 gives 443.9).
    change, prediction, best = recommend(_measured(), memory_budget_bytes=1e12)
    assert best == pytest.approx(500)
    assert (change.scan_group, change.cache_fraction, change.l3) == (2, pytest.approx(0.2), False)
    assert prediction["rate"] == pytest.approx(1 / (0.2 / 40_000 + 0.8 / 400))
    # AUTOTUNE is predicted alike, but a fixed parallelism is preferred: the one predicted fastest (1 thread: 250)
    assert change.prep_parallelism == 2
    # AUTOTUNE's runs measured ahead of every fixed parallelism (360 against 300 on 2 threads, model on the CPU, both
    # fidelities' prep alike): it is predicted at most as fast as 2 threads, and those are recommended, with the
    # least cache that reaches them: f = 0.7 (storage allows 100 / 0.3 = 333 items/s; f = 0.6, 250).
    autotune_ahead = _measured(
        model_on_cpu=True,
        prep_by_scan_group={None: 400.0, 2: 400.0},
        training_served_by_threads={None: 360.0, 1: 250.0, 2: 300.0},
    )
    assert predict(autotune_ahead, Change(cache_fraction=1.0))["rate"] == pytest.approx(300)
    assert predict(autotune_ahead, Change(cache_fraction=0.7))["rate"] == pytest.approx(300)
    change, prediction, best = recommend(autotune_ahead, memory_budget_bytes=1e12)
    assert change == Change(cache_fraction=pytest.approx(0.7), scan_group=None, prep_parallelism=2)
    assert prediction["rate"] == best == pytest.approx(300)
    # measured behind them, it is predicted as measured
    autotune_behind = dataclasses.replace(autotune_ahead, training_served_by_threads={None: 280.0, 1: 250.0, 2: 300.0})
    assert predict(autotune_behind, Change(cache_fraction=1.0))["rate"] == pytest.approx(280)
    # When both fidelities reach the best (400), keeping full fidelity wins over saving memory: f = 0.8 (480.8
    # items/s of fetch; f = 0.7 gives 325.7) rather than group 2 without a cache.
    same_prep = _measured(prep_by_scan_group={None: 400.0, 2: 400.0})
    change, prediction, best = recommend(same_prep, memory_budget_bytes=1e12)
    assert best == pytest.approx(400) and prediction["rate"] == pytest.approx(400)
    assert (change.scan_group, change.cache_fraction) == (None, pytest.approx(0.8))
    # With memory for a tenth of the dataset, the scan group is what remains.
    change, prediction, _ = recommend(same_prep, memory_budget_bytes=100_000)
    assert change.scan_group == 2 and change.cache_fraction == 0 and prediction["rate"] == pytest.approx(400)
    fetch_stall, prep_stall = _measured().stall_fractions()
    assert fetch_stall == pytest.approx(1 - 95 / 300) and prep_stall == pytest.approx((1 / 300 - 1 / 1000) * 95)


def test_served_runs_are_paired_within_their_rounds():
    # Two parallelisms in 3 rounds while the machine's speed moves (1, 1.3, 0.8): 2 threads ran 1.95, 2.0 and 2.1
    # times 1 thread's rate. The medians of each one's own runs (100 and 195) give 1.95; paired within the rounds,
    # 2.0, the median of the rounds' ratios, at the level of the rounds' median geometric mean (139.6).
    def runs(*rates):
        return [phases.TrainingRate(rate, 1 / rate, 5) for rate in rates]

    paired = phases._paired_runs({1: runs(100.0, 130.0, 80.0), 2: runs(195.0, 260.0, 168.0)})
    assert paired[2].items_per_second / paired[1].items_per_second == pytest.approx(2.0)
    level = (100.0 * 195.0) ** 0.5
    assert paired[1].items_per_second * paired[2].items_per_second == pytest.approx(level**2)
    # the CPU seconds per item of each one's median run
    assert paired[1].cpu_seconds_per_item == pytest.approx(1 / 100) and paired[2].cpu_seconds_per_item == 1 / 195


def test_training_rate_runs_epochs_until_min_seconds():
    model = _small_model()
    data = tf.data.Dataset.from_tensors((tf.zeros([BATCH, 32, 32, 3]), tf.zeros([BATCH], tf.int64)))

    class EpochCount(keras.callbacks.Callback):
        epochs = 0

        def on_epoch_end(self, epoch, logs=None):
            EpochCount.epochs += 1

    phases.training_rate(model, data, 2, BATCH, epochs=3, callbacks=[EpochCount()])
    assert EpochCount.epochs == 3
    EpochCount.epochs = 0
    start = time.perf_counter()
    rate = phases.training_rate(model, data, 2, BATCH, epochs=3, callbacks=[EpochCount()], min_seconds=0.5)
    # epochs of a few milliseconds: many more than 3, until the ones after the first last 0.5 s
    assert EpochCount.epochs > 3 and time.perf_counter() - start >= 0.5 and rate.items_per_second > 0
    assert rate.epochs == EpochCount.epochs
    # pooled: the timed epochs' items over their time
    EpochCount.epochs = 0
    pooled = phases.training_rate(model, data, 2, BATCH, epochs=3, callbacks=[EpochCount()], pooled=True)
    assert pooled.epochs == EpochCount.epochs == 3 and pooled.items_per_second > 0 and pooled.cpu_seconds_per_item > 0
    with pytest.raises(ValueError, match="at least 2"):
        phases.training_rate(model, data, 2, BATCH, epochs=1)


def test_training_runs_in_turns_reverse_their_order_every_other_round():
    # In one fixed order each run would always follow the same neighbour.
    model = _small_model()
    data = tf.data.Dataset.from_tensors((tf.zeros([BATCH, 32, 32, 3]), tf.zeros([BATCH], tf.int64)))
    started = []

    class RunStart(keras.callbacks.Callback):
        def __init__(self, key):
            super().__init__()
            self.key = key

        def on_train_begin(self, logs=None):
            started.append(self.key)

    runs = {key: (data, dict(callbacks=[RunStart(key)])) for key in ("a", "b", "c")}
    rates = phases._rates_in_turns(model, runs, 2, BATCH, rounds=3)
    assert started == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert all(len(rates[key]) == 3 and rates[key][0].items_per_second > 0 for key in runs)


def test_op_table_names_the_op_made_slow_on_purpose():
    def heavy(x):
        m = tf.fill([120, 120], tf.cast(x, tf.float32) / 1e3)
        for _ in range(8):
            m = tf.matmul(m, m) / 120.0
        return tf.reduce_sum(m)

    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False  # keep the sequential map what it is,
    options.experimental_optimization.map_and_batch_fusion = False  # and apart from the batch
    dataset = (
        tf.data.Dataset.range(400)
        .map(lambda x: x + 1, num_parallel_calls=2)
        .map(heavy)
        .batch(8)
        .prefetch(2)
        .with_options(options)
    )
    rows = phases.op_table(dataset, 40)  # of 50 batches
    slowest = max(rows, key=lambda row: row.cpu_share)
    assert slowest.name.strip() == "Map" and slowest.cpu_share > 0.5, rows
    assert [row.name.strip() for row in rows][:3] == ["Prefetch", "BatchV2", "Map"], rows
    assert any(row.name.strip() == "ParallelMapV2" and row.parallelism is not None for row in rows), rows


@pytest.fixture(scope="module")
def png_files(tmp_path_factory) -> tuple[list[str], list[int]]:
    """96 PNG crops (96x96) of the shipped photos, in 3 classes."""
    root = tmp_path_factory.mktemp("png")
    paths, labels = [], []
    rng = np.random.default_rng(0)
    for label, (package, name) in enumerate(sample_photos.PHOTOS[:3]):
        photo = np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB"))
        for i in range(32):
            y, x = rng.integers(0, photo.shape[0] - 96), rng.integers(0, photo.shape[1] - 96)
            path = root / f"{label}-{i}.png"
            Image.fromarray(photo[y : y + 96, x : x + 96]).save(path)
            paths.append(str(path))
            labels.append(label)
    return paths, labels


def _small_model(classes: int = 3):
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(8, 3, strides=2),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(classes),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _light(element):
    return tf.image.resize(element["image"], [32, 32]) / 255.0, element["label"]


def _heavy(element):
    image = tf.cast(element["image"], tf.float32)
    for _ in range(12):  # a costly augmentation, on purpose
        image = tf.image.resize(tf.image.resize(image, [192, 192]), [96, 96])
    return tf.image.resize(image, [32, 32]) / 255.0, element["label"]


def test_prep_variants_in_turns_keep_their_order_and_share_the_reference(png_files):
    paths, labels = png_files
    light = tfliquid.analysis.file_pipeline(paths[:32], labels[:32], _light, BATCH, seed=0)
    raw, _ = phases.cached_raw(light, 32)
    variants = {None: (light, raw), "same": (light, raw), "heavy": (light.replace(preprocess=_heavy), raw)}
    rates = phases.prep_rates_in_turns(variants, None, parallelism=2, rounds=3)
    assert set(rates) == set(variants)
    # The reference's rate is its best pass; each variant is that times its median ratio, pass for pass.
    assert 0.7 < rates["same"] / rates[None] < 1.3, rates
    assert rates["heavy"] < 0.5 * rates[None], rates  # 12 resizes at twice the size, each way, per item


def test_job_speedup_pairs_the_jobs_round_by_round(png_files):
    paths, labels = png_files
    light = tfliquid.analysis.file_pipeline(paths[:32], labels[:32], _light, BATCH, seed=0)
    raw, _ = phases.cached_raw(light, 32)
    model = _small_model()
    speedup = phases.job_speedup(model, light, raw, light.replace(preprocess=_heavy), raw, 32, 2, rounds=2)
    # The heavy prep (12 resizes at twice the size, each way) holds the job to less than half its rate.
    assert 0 < speedup < 0.5, speedup


def test_a_scan_groups_job_speedup_runs_as_the_cache_serves_it(tmp_path):
    # A PCR dataset's scan groups each have a subset a cache serves: the job's speed-up with another group's prep
    # runs both jobs over those (the what-if's base is the served job).
    folder, pcr = tmp_path / "photos", tmp_path / "pcr"
    sample_photos.write_image_folder(str(folder), 16, size=64, seed=0)
    tfliquid.pcr.convert(str(folder), str(pcr), images_per_record=16, progress=False)
    pipeline = tfliquid.analysis.pcr_pipeline(str(pcr), _light, BATCH, seed=0)
    heavy = pipeline.replace(scan_group=1, preprocess=_heavy)
    items = 2 * BATCH
    prep_variants = {
        None: (pipeline, phases.cached_raw(pipeline, items)[0]),
        1: (heavy, phases.cached_raw(heavy, items)[0]),
    }
    with phases.served_subset(pipeline, items) as own, phases.served_subset(heavy, items) as variant:
        served = {None: own, 1: variant}
        assert sum(1 for _ in phases.served_epoch(pipeline, own)) == pipeline.num_items  # an epoch of the job's size
        before = [s.cache.stats().epochs for s in (own, variant)]
        speedup = phases.variant_speedup(
            _small_model(len(sample_photos.PHOTOS)), pipeline, prep_variants, 1, items, 2, rounds=2, served=served
        )
        after = [s.cache.stats().epochs for s in (own, variant)]
    # The heavy prep (12 resizes at twice the size, each way) holds the job to less than half its rate.
    assert 0 < speedup < 0.5, speedup
    # Both jobs read their caches (lookups of whole records), every lookup a hit: the subsets in memory went unread.
    for old, new in zip(before, after):
        assert sum(e.hits for e in new) > sum(e.hits for e in old), new
        assert sum(e.misses for e in new) == sum(e.misses for e in old), new


def test_the_recommendations_prep_is_checked_before_it_is_recommended(png_files):
    # By hand, the job's response unmeasured (1 - m = 0.71), scan group 2's prep (twice as fast) is predicted to
    # lift the job to 467 items/s with a fifth of it cached: the recommendation. Its prep is then measured in the
    # job: here "scan group 2" is a heavy prep, so the job runs at less than half the rate with it, the response
    # to it is 0 (a cheaper prep does not slow the job), and the recommendation moves to full fidelity, 70% cached
    # (300 items/s: R). The pipeline's own prep needs no check.
    paths, labels = png_files
    light = tfliquid.analysis.file_pipeline(paths[:32], labels[:32], _light, BATCH, seed=0)
    raw, _ = phases.cached_raw(light, 32)
    guessed = _measured(model_on_cpu=True, prep_by_scan_group={None: 400.0, 2: 800.0})
    assert recommend(guessed, 1e12)[0] == Change(cache_fraction=0.2, scan_group=2, prep_parallelism=2)
    variants = {None: (light, raw), 2: (light.replace(preprocess=_heavy), raw)}
    model = _small_model()
    before = [w.copy() for w in model.get_weights()]
    try:
        checked, (change, prediction, _) = checked_recommendation(model, light, variants, 32, guessed, 1e12, 3)
    finally:
        model.set_weights(before)
    assert set(checked.checked_speedups) == {2} and 0 < checked.checked_speedups[2] < 0.5, checked.checked_speedups
    assert checked.prep_response == 0 and guessed.prep_response > 0.5  # fitted to the check: 1 - m no longer
    assert change == Change(cache_fraction=pytest.approx(0.7), scan_group=None, prep_parallelism=2)
    assert prediction["rate"] == pytest.approx(300)
    # A prep within a tenth of the pipeline's is not checked: it is predicted as the pipeline's (whatif.same_prep).
    # With memory for under a tenth of the dataset at full fidelity, scan group 2 is recommended for its bytes.
    close = _measured(model_on_cpu=True, prep_by_scan_group={None: 400.0, 2: 420.0})
    unchecked, choice = checked_recommendation(model, light, variants, 32, close, 100_000)
    assert choice[0].scan_group == 2 and unchecked.checked_speedups == {} and choice == recommend(close, 100_000)
    # With one speed-up measured, the response fitted to it runs the change at it: 1.1x with group 2, 300 * 1.1.
    faster = dataclasses.replace(guessed, checked_speedups={2: 1.1})
    assert predict(faster, Change(scan_group=2))["rate"] == pytest.approx(330)


@pytest.mark.slow
def test_fetch_bound_setup_is_classified_as_fetch(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _light, BATCH, seed=0)
    model = _small_model()
    before = [w.copy() for w in model.get_weights()]
    tfliquid.io.set_read_bandwidth(1e6)
    try:
        report = tfliquid.analysis.analyze(model, pipeline, subset_items=64, steps=5, quick=True, progress=False)
    finally:
        tfliquid.io.set_read_bandwidth(None)
    m = report.measured
    assert report.bottleneck == "fetch" and report.stalls[0] > 0.5, str(report)
    # A cache sized as the recommendation sizes it holds every file: the headers and keys it counts are measured.
    with tfliquid.MinIOCache(m.cache_capacity(Change(cache_fraction=1.0))) as cache:
        for _ in range(2):
            assert sum(1 for _ in pipeline.reads(cache=cache)) == len(paths)
        stats = cache.stats()
    assert stats.items == len(paths) and stats.epochs[1].misses == 0 and stats.bytes > m.dataset_bytes, str(stats)
    assert m.fetch * pipeline.bytes_per_item < 1.33e6  # the throttle's 1 MB/s, give or take a burst
    assert m.training * pipeline.bytes_per_item < 1.33e6  # and the job as it is reads no faster
    assert report.change.cache_fraction > 0  # the cure for a fetch stall: cache what storage cannot deliver
    assert report.prediction["rate"] > 2 * m.training
    assert m.l3_prep is not None and 1.0 < m.l3_bytes_ratio < 2.5  # PNG files: L3 was weighed, on the sample
    assert m.raw_prep > m.prep and m.raw_bytes_ratio > 1.5  # and Liquid's raw: no decode, more bytes
    # On the CPU, how much of a change in prep reaches the job was measured with the prep that differs most (raw's
    # or L3's: both preps ran 2-3x PNG's here, and which is further varies from run to run).
    own = m.prep_by_scan_group[m.scan_group]
    differs_most = max(["l3", "raw"], key=lambda v: abs(math.log(m.variant_prep(v) / own)))
    assert m.response_variant == differs_most and m.response_speedup > 0 and 0 <= m.prep_response <= 1
    # the best ratio with nothing else changed (the recommendation may be another Liquid row, with a cache)
    liquid_rows = [p for name, p in report.whatif_rows() if name.startswith("Liquid png:raw") and "," not in name]
    assert len(liquid_rows) == 1 and liquid_rows[0]["rate"] > 0
    assert report.cost.items_read >= 64 * 4 and report.cost.seconds > 0 and "(quick: " in str(report)
    lines = str(report).splitlines()
    header = next(i for i, line in enumerate(lines) if "what if (items/s)" in line)
    table = lines[header : lines.index("", header)]
    assert len(table) == len(report.whatif_rows()) + 1
    assert {len(line) for line in table} == {len(lines[header])}  # every row's rates under the header's columns
    ops_header = next(i for i, line in enumerate(lines) if "tf.data ops (output first)" in line)
    op_rows = lines[ops_header + 1 : lines.index("", ops_header)]
    assert len(op_rows) == len(report.ops) and len({row.index("%") for row in op_rows}) == 1  # CPU shares aligned
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)  # the analysis trained a copy of the weights, then restored them
    as_json = json.loads(report.to_json())
    assert as_json["stalls"]["bottleneck"] == "fetch" and as_json["recommendation"]["code"] == report.code()
    assert as_json["cost"]["rounds"] == dataclasses.asdict(phases.QUICK_ROUNDS)
    assert as_json["prep_response"] == {
        "beta": m.prep_response,
        "variant": m.response_variant,
        "job_speedup": m.response_speedup,
        "checked": [{"variant": v, "job_speedup": s} for v, s in m.checked_speedups.items()],
        "single_thread": {"beta": m.prep_response_at(1), "job_speedup": m.single_thread_speedup},
    }
    assert m.single_thread_speedup > 0 and f"with prep on 1 thread, it follows {m.prep_response_at(1):.2f}" in str(
        report
    )
    # A read from idle storage ends sooner than its bytes at F (the throttle banks up to 50 ms of idle time), but
    # not before it starts; the read stage maps files on its parallel reads (AUTOTUNE: one per core).
    second_file_seconds = m.cache_item_bytes[None][1] / m.fetch_bytes_per_second
    assert -second_file_seconds <= m.storage_idle_offset < 0 and m.read_ahead == os.cpu_count()
    assert as_json["rates_items_per_second"]["storage_idle_offset_seconds"] == m.storage_idle_offset


@pytest.mark.slow
def test_prep_bound_setup_is_classified_as_prep(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _heavy, BATCH, seed=0)
    report = tfliquid.analysis.analyze(_small_model(), pipeline, subset_items=64, steps=5, quick=True, progress=False)
    assert report.bottleneck == "prep", str(report)
    fetch_stall, prep_stall = report.stalls
    # Most of the stall is prep's. Not an absolute bound on the fetch stall: the files are read from the disk
    # (page cache dropped), and beside a load on one of the 2 cores their reads alone stalled 0.26-0.32 of this
    # job (prep 0.6 and more); 0.01-0.11 on an idle machine.
    assert fetch_stall < prep_stall and report.measured.prep < report.measured.fetch
    assert report.change.cache_fraction == 0  # nothing to gain from a cache when prep limits


@pytest.mark.slow
def test_cli_on_the_example_script_and_the_recommended_code_runs(tmp_path):
    env = {**os.environ, "TFLIQUID_ANALYZE_WORKDIR": str(tmp_path / "work"), "READ_BANDWIDTH": "2e6"}
    report_path, plot_path = tmp_path / "report.json", tmp_path / "plot.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfliquid",
            "analyze",
            str(ROOT / "examples" / "analyze_pcr.py"),
            "--subset",
            "64",
            "--steps",
            "5",
            "--quick",
            "--json",
            str(report_path),
            "--plot",
            str(plot_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "recommendation:" in result.stdout and "bottleneck: fetch" in result.stdout, result.stdout
    report = json.loads(report_path.read_text())
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["recommendation"]["speedup"] > 1.5
    assert report["cost"]["rounds"] == dataclasses.asdict(phases.QUICK_ROUNDS)  # --quick reached analyze
    as_it_is = report["whatif"][0]
    assert as_it_is["change"] == "as it is"
    assert report["recommendation"]["predicted_speedup"] == pytest.approx(
        report["recommendation"]["predicted"] / as_it_is["rate"]
    )
    assert any(row["change"].startswith("scan group") for row in report["whatif"])  # a PCR dataset: groups weighed
    namespace = {"tfliquid": tfliquid, "tf": tf, "prep": lambda e: (tf.io.decode_jpeg(e["image"]), e["label"])}
    exec(report["recommendation"]["code"], namespace)
    images, labels = next(iter(namespace["dataset"]))
    assert images.shape[0] == 32 and images.dtype == tf.uint8


@pytest.mark.slow
def test_thread_plan(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _heavy, BATCH, seed=0)
    plan = tfliquid.analysis.plan_threads(pipeline, subset_items=48, cores=2)
    assert set(plan.prep_by_threads) == {1, 2, 3} and 1 <= plan.prep_parallelism <= 2
    assert plan.read_parallelism == max(1, 2 - plan.prep_parallelism)
    planned = plan.apply(pipeline)
    assert planned.prep_parallelism == plan.prep_parallelism
    batches = planned.dataset().with_options(plan.options()).take(2)
    assert [b[0].shape[0] for b in batches] == [BATCH, BATCH]
    assert "thread plan on 2 cores" in str(plan)


def test_stall_monitor_tells_a_slow_pipeline_from_a_fast_one(tmp_path):
    """The slow pipeline reads 256 KB per batch through a 0.8 MB/s throttle (about 330 ms, waiting, not
    computing); the fast one serves batches cached in memory. Epochs 2 and 3 (the first traces). The model's
    steps take some milliseconds: with 1 ms steps, fetching a cached batch (Keras and tf.data's own time per step)
    was 0.15-0.31 of the fast pipeline's epochs."""
    rng = np.random.default_rng(0)
    x, y = rng.random((1024, 256), np.float32), rng.integers(0, 2, 1024)
    blob = tmp_path / "blob"
    blob.write_bytes(rng.integers(0, 256, 256 << 10, dtype=np.uint8).tobytes())

    def slow(a, b):
        # An offset taken from the batch: with constant arguments TensorFlow would read the file once, up front.
        data = tfliquid.io.read_file(str(blob), offset=tf.cast(b[0], tf.int64), length=(256 << 10) - 1)
        return a + 0 * tf.cast(tf.strings.length(data), tf.float32), b

    fast_data = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).cache().prefetch(4)
    slow_data = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).map(slow)
    stalls = {}
    tfliquid.io.set_read_bandwidth(0.8e6)
    try:
        for name, data in (("fast", fast_data), ("slow", slow_data)):
            keras.utils.set_random_seed(0)
            model = keras.Sequential(
                [keras.Input((256,)), keras.layers.Dense(2048, activation="relu"), keras.layers.Dense(2)]
            )
            model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            monitor = tfliquid.keras.StallMonitor()
            history = model.fit(monitor.instrument(data), epochs=3, shuffle=False, verbose=0, callbacks=[monitor])
            stalls[name] = float(np.mean(history.history["data_stall_fraction"][1:]))
            assert all(rate > 0 for rate in history.history["input_rate"])
    finally:
        tfliquid.io.set_read_bandwidth(None)
    assert stalls["slow"] > 0.6 and stalls["fast"] < 0.3, stalls


def test_stall_stamps_count_every_batch_and_item_and_leave_elements_unchanged():
    from tfliquid._lib import load_ops
    from tfliquid.keras.stall_monitor import RING

    monitor = tfliquid.keras.StallMonitor()
    stamped = monitor.instrument(tf.data.Dataset.range(10).batch(4))  # batches of 4, 4 and 2
    before = time.time()
    assert [b.tolist() for b in stamped.as_numpy_iterator()] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    stamps, batches, items = monitor._read()
    assert (batches, items) == (3, 10)
    assert before <= stamps[0] <= stamps[1] <= stamps[2] <= time.time()  # the clock of time.time()
    assert not stamps[3:].any()
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"holds {RING} stamps, not {RING + 1}"):
        load_ops().liquid_stall_ring_read(ring=monitor._ring, capacity=RING + 1)


def test_stall_stamped_iterator_checkpoints_through_the_stamp(tmp_path):
    monitor = tfliquid.keras.StallMonitor()
    iterator = iter(monitor.instrument(tf.data.Dataset.range(12).batch(2)))
    assert next(iterator).numpy().tolist() == [0, 1]
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    assert next(iterator).numpy().tolist() == [2, 3]
    checkpoint.restore(saved)
    assert next(iterator).numpy().tolist() == [2, 3]
    assert monitor._read()[1:] == (3, 6)  # every batch that left, the one read again included
