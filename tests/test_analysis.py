"""The data-stall analyzer (tfliquid.analysis) and StallMonitor: the scaling fit and the what-if arithmetic on
hand-computed cases; the phases on real pipelines (PNG crops of the shipped photos read through the throttle, a
PCR dataset of the conftest photos) with a small Keras model; fetch-bound and prep-bound setups told apart; the op
table naming the op made slow on purpose; the recommendation's code run; the CLI and its refusals; the thread plan;
the monitor in model.fit, with the ways of calling fit it must measure or refuse."""

import ctypes
import dataclasses
import json
import math
import mmap
import os
import runpy
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.analysis import Change, Measurements, Report, ThreadPlan, phases, predict
from tfliquid.analysis.phases import CacheRate, FetchRate, IngestionRate, JobRates, OpTable, PrepRate, VariantPreps
from tfliquid.analysis.whatif import NEAR_BEST, candidate_changes, recommend
from tfliquid.io.storage import drop_page_cache
from tfliquid.pcr.format import read_index
from tfliquid.samples import photos as sample_photos

ROOT = Path(__file__).resolve().parent.parent
BATCH = 8


def test_thread_plan_takes_the_measured_peak_and_says_why():
    # As a newcomer measured on a shared 2-core machine: 3 threads on 2 cores fell to 2,158 items/s.
    plan = ThreadPlan.of({1: 3951.0, 2: 5141.0, 3: 2158.0}, fetch=20_000.0, cores=2)
    assert (plan.peak_threads, plan.threads_at_peak, plan.prep_parallelism, plan.read_parallelism) == (2, 2, 2, 1)
    assert "prep 2 threads, reads 1 (" in str(plan) and ": peak 5141 items/s on 2 threads; reads" in str(plan)
    # within 3% of the peak counts as the peak: the fewest such threads
    near = ThreadPlan.of({1: 100.0, 2: 300.0, 3: 350.0, 4: 352.0, 5: 351.0}, 1e9, cores=4)
    assert (near.peak_threads, near.prep_parallelism) == (4, 3) and "3 threads within 3% of it" in str(near)
    # the peak only past the cores: the best within them
    assert ThreadPlan.of({1: 100.0, 2: 150.0, 3: 400.0}, 1e9, cores=2).prep_parallelism == 2
    # reads slower than prep on fewer threads: prep gives threads up to them
    slow_reads = ThreadPlan.of({1: 3951.0, 2: 5141.0, 3: 2158.0}, fetch=900.0, cores=2)
    assert (slow_reads.prep_parallelism, slow_reads.read_parallelism) == (1, 1)
    assert "prep 1 thread, reads 1" in str(slow_reads) and "1 thread (3951 items/s) still outpaces" in str(slow_reads)
    assert "on 1 core:" in str(ThreadPlan.of({1: 10.0, 2: 9.0}, 1.0, cores=1))


def _pipeline(**overrides) -> tfliquid.analysis.InputPipeline:
    """1,000 items of 1,000 bytes (250 at scan group 2 of 4); never read: the what-if takes its description."""
    sizes = {None: 1_000_000, 2: 250_000}
    described = dict(read=None, decode=None, preprocess=None, batch_size=10, num_items=1000, scan_groups=4)
    return tfliquid.analysis.InputPipeline(bytes_per_epoch=sizes.get, **(described | overrides))


def _measured(**overrides) -> Measurements:
    """On 2 cores: G 1,000 items/s, P 400; storage 100 kB/s (100 items/s at full fidelity), cache hits 10,000
    items/s; the job without fetch 400 items/s (200 with prep on 1 thread); scan group 2's prep 1.25x as fast. The
    model on an accelerator unless `model_on_cpu`."""
    values = dict(
        ingestion=IngestionRate(1000.0),
        prep=PrepRate(400.0),
        fetch=FetchRate(100_000.0),
        cache=CacheRate(10_000.0, 1.0),
        jobs=JobRates(95.0, {None: 400.0, 1: 200.0, 2: 400.0}),
        variants=VariantPreps({2: 1.25}, {}),
        ops=OpTable([]),
        pipeline=_pipeline(),
        cores=2,
        model_on_cpu=False,
    )
    return Measurements(**(values | overrides))


def test_whatif_on_an_accelerator_by_hand():
    m = _measured()
    assert predict(m, Change())["rate"] == pytest.approx(100)  # fetch-bound
    # half the dataset cached: storage's reads spread over the epoch allow 100 / 0.5, the cache's hits 10,000 / 0.5
    assert predict(m, Change(cache_fraction=0.5)) == pytest.approx(dict(ingestion=1000, prep=400, fetch=200, rate=200))
    assert predict(m, Change(cache_fraction=1.0))["fetch"] == pytest.approx(10_000)  # all hits
    assert predict(m, Change(cache_fraction=1.0))["rate"] == pytest.approx(400)  # now the job without fetch
    # scan group 2 reads a quarter of the bytes: storage gives 400 items/s; its prep 500, so the job 500 all cached
    assert predict(m, Change(scan_group=2)) == pytest.approx(dict(ingestion=1000, prep=500, fetch=400, rate=400))
    assert predict(m, Change(cache_fraction=1.0, scan_group=2))["rate"] == pytest.approx(500)
    assert predict(m, Change(cache_fraction=1.0, prep_parallelism=1))["rate"] == pytest.approx(200)  # R(1)
    # a prep within a tenth of the pipeline's is the pipeline's: the passes cannot tell them apart
    assert predict(_measured(variants=VariantPreps({2: 1.05}, {})), Change(1.0, 2))["rate"] == pytest.approx(400)
    assert predict(_measured(variants=VariantPreps({2: 5.0}, {})), Change(1.0, 2))["rate"] == 1000  # G binds
    fetch_stall, prep_stall = m.stall_fractions()
    assert fetch_stall == pytest.approx(1 - 95 / 400) and prep_stall == pytest.approx((1 / 400 - 1 / 1000) * 95)


def test_whatif_with_the_model_on_the_cpu_by_hand():
    # Train steps and prep share the cores: a prep twice as fast (scan group 2) saves its share of the job's time,
    # s = (1/400) / (1/1000 + 1/400) = 5/7 of it, half: R' = R / (1 - 5/14).
    served = {None: 300.0, 1: 250.0, 2: 300.0}
    m = _measured(model_on_cpu=True, jobs=JobRates(95.0, served), variants=VariantPreps({2: 2.0}, {}))
    assert predict(m, Change(cache_fraction=1.0))["rate"] == pytest.approx(300)  # R itself
    assert predict(m, Change(cache_fraction=1.0, prep_parallelism=1))["rate"] == pytest.approx(250)
    assert predict(m, Change(cache_fraction=1.0, scan_group=2))["rate"] == pytest.approx(300 / (1 - 5 / 14))
    assert predict(m, Change(1.0, 2, 1))["rate"] == pytest.approx(250 / (1 - 5 / 14))
    assert predict(m, Change(cache_fraction=0.5))["rate"] == pytest.approx(200)  # storage: 100 / (1 - 0.5)
    # AUTOTUNE measured ahead of every fixed parallelism is predicted at most as fast as the fastest of them;
    # measured behind them, as measured.
    ahead = _measured(model_on_cpu=True, jobs=JobRates(95.0, served | {None: 360.0}), variants=VariantPreps({}, {}))
    assert predict(ahead, Change(cache_fraction=1.0))["rate"] == pytest.approx(300)
    behind = dataclasses.replace(ahead, jobs=JobRates(95.0, served | {None: 280.0}))
    assert predict(behind, Change(cache_fraction=1.0))["rate"] == pytest.approx(280)
    # The least cache whose storage keeps up with 300 items/s even 25% slower (LUMPY_READS): 80 / 0.2 = 400 (a 70%
    # cache would allow 100 / 0.3 = 333, but 80 / 0.3 = 267 at a quarter less).
    change, prediction, best = recommend(ahead, memory_budget_bytes=1e12)
    assert change == Change(cache_fraction=pytest.approx(0.8), prep_parallelism=2)
    assert prediction["rate"] == best == pytest.approx(300)


def test_cache_capacity_budget_and_whole_records_by_hand():
    # A cache counted 1.001 bytes per byte stored on the subset: 1 byte of headers an item; 1% over.
    m = _measured(cache=CacheRate(10_000.0, 1.001))
    assert m.cache_capacity(Change(cache_fraction=1.0)) == 1_011_010  # 1,000 x (1,000 + 1) x 1.01
    assert m.cache_capacity(Change(cache_fraction=0.5, scan_group=2)) == 126_755  # 0.5 x 1,000 x (250 + 1) x 1.01
    assert m.cache_capacity(Change()) == 0
    changes = candidate_changes(m, 300_000)  # full fidelity up to 0.2 of the dataset; scan group 2 all of it
    assert max(c.cache_fraction for c in changes if c.scan_group is None) == 0.2
    assert max(c.cache_fraction for c in changes if c.scan_group == 2) == 1.0
    # 4 records of 250 kB (62.5 kB at scan group 2): a cache holds as many whole records as fit.
    records = _measured(pipeline=_pipeline(records=4))
    assert records.cache_share(Change(cache_fraction=0.5)) == 0.5  # 505,000 bytes: 2 records
    assert records.cache_share(Change(cache_fraction=0.7)) == 0.5  # 707,000: still 2
    assert records.cache_share(Change(cache_fraction=0.7, scan_group=2)) == 0.5  # 176,750: 2 of 62,500
    assert records.cache_share(Change(cache_fraction=1.0)) == 1.0 and _measured().cache_share(Change(0.7)) == 0.7
    assert predict(records, Change(cache_fraction=0.7))["rate"] == pytest.approx(200)  # 100 / (1 - 0.5)


def test_l3_and_liquid_whatif_by_hand():
    # L3 preps at 2x PNG's rate in 1.2x its bytes; raw pixels at 10x in 3x. At png:raw 6:4 prep runs at
    # 400 / (0.6 + 0.4 / 10) = 625 items/s on 0.6 x 1000 + 0.4 x 3000 = 1,800 bytes an item.
    m = _measured(variants=VariantPreps({"l3": 2.0, "raw": 10.0}, {"l3": 1.2, "raw": 3.0}))
    assert predict(m, Change(liquid_ratio=6)) == pytest.approx(
        dict(ingestion=1000, prep=625, fetch=100_000 / 1800, rate=100_000 / 1800)
    )
    assert predict(m, Change(liquid_ratio=6, cache_fraction=1.0))["rate"] == pytest.approx(625)
    assert predict(m, Change(liquid_ratio=10)) == pytest.approx(predict(m, Change()))  # 10:0 is PNG alone
    assert predict(m, Change(l3=True, cache_fraction=1.0))["rate"] == pytest.approx(800)
    assert m.cache_capacity(Change(l3=True, cache_fraction=1.0)) == 1_212_000
    # Cached whole, mostly raw preps fastest and the model's 1,000 items/s bind: the best of all changes.
    change, prediction, best = recommend(m, memory_budget_bytes=1e12)
    assert best == pytest.approx(1000) and prediction["rate"] >= NEAR_BEST * best
    assert change.liquid_ratio is not None and change.cache_fraction == 1.0


def test_recommendation_is_the_cheapest_change_near_the_best():
    # Only scan group 2 reaches the best (500, its prep); a fifth cached would (400 / 0.8), but the least cache that
    # still does with storage 25% slower is 40% (320 / 0.6 = 533); on 2 fixed threads rather than AUTOTUNE.
    change, prediction, best = recommend(_measured(), memory_budget_bytes=1e12)
    assert best == prediction["rate"] == pytest.approx(500)
    assert change == Change(pytest.approx(0.4), scan_group=2, prep_parallelism=2)
    # With both fidelities' prep alike, full fidelity with more cache wins over scan group 2 without: 80%.
    same = _measured(variants=VariantPreps({2: 1.0}, {}))
    change, prediction, best = recommend(same, memory_budget_bytes=1e12)
    assert (change.scan_group, change.cache_fraction, best) == (None, pytest.approx(0.8), pytest.approx(400))
    # With memory for a tenth of the dataset, the scan group is what remains.
    change, prediction, _ = recommend(same, memory_budget_bytes=100_000)
    assert (change.scan_group, change.cache_fraction, prediction["rate"]) == (2, 0, pytest.approx(400))
    # Where no partial cache reaches the best with slower storage, the best one still is recommended: with memory for
    # half the dataset at full fidelity and nothing else, half of it (storage-bound, 200 items/s).
    change, prediction, best = recommend(_measured(variants=VariantPreps({}, {})), memory_budget_bytes=600_000)
    assert change.cache_fraction == 0.5 and prediction["rate"] == best == pytest.approx(200)


def test_no_change_is_offered_where_none_is_predicted_faster_than_the_job_as_it_is():
    # Storage and the cache far faster than the rest: the job without fetch, 400 items/s, is the best any change
    # reaches. Measured at 600 (a newcomer's run measured the job 8% faster than the best prediction), or at 95 with
    # the job as it is predicted at 400, a change to 2 threads predicted at 400 is no help.
    for measured_rate in (600.0, 95.0):
        jobs, fast = JobRates(measured_rate, {None: 400.0, 1: 200.0, 2: 400.0}), FetchRate(1e12)
        m = _measured(jobs=jobs, fetch=fast, cache=CacheRate(1e9, 1.0), variants=VariantPreps({}, {}))
        change, prediction, best = recommend(m, memory_budget_bytes=1e12)
        assert (change, prediction, best) == (None, None, pytest.approx(400)), measured_rate
        report = Report(m, change, prediction, best, 1e12, 64, 1.0)
        assert "recommendation: no change predicted to help: the best any change reaches is predicted 400" in str(
            report
        )
        assert report.code() == "" and report.predicted_speedup is None
        as_json = json.loads(report.to_json())["recommendation"]
        assert as_json["description"] == "no change predicted to help" and as_json["speedup"] is None


def test_the_stall_line_agrees_with_its_numbers():
    fast = dict(fetch=FetchRate(1e12), cache=CacheRate(1e9, 1.0), variants=VariantPreps({}, {}))
    # On the CPU, prep alone (2,050 items/s) and the model alone (2,000) share the cores: the job without fetch runs
    # at about 1 / (1 / 2,000 + 1 / 2,050), and prep's part of its time, 49%, is no wait for data: the model's is
    # the larger.
    jobs = JobRates(1012.0, {None: 1012.0, 1: 800.0, 2: 1012.0})
    cpu = _measured(ingestion=IngestionRate(2000.0), prep=PrepRate(2050.0), jobs=jobs, model_on_cpu=True, **fast)
    report = Report(cpu, *recommend(cpu, 1e12), 1e12, 64, 1.0)
    lines = str(report).splitlines()
    assert report.stalls == (0, pytest.approx(0.494)) and report.bottleneck == "ingestion", lines
    assert lines[6] == "  stalls: fetch 0%, prep 49% of epoch time; bottleneck: ingestion (the model)"
    assert lines[7] == (
        "    on the CPU prep and the train steps share the cores: prep's 49% is the time its work takes from the "
        "steps (theirs alone: 51%)"
    )
    # On an accelerator the stalls are waits: fetch alone (900 items/s) is the slowest stage, but read ahead it
    # stalled the job by 1%: the model limits.
    jobs = JobRates(990.0, {None: 1000.0, 1: 600.0, 2: 1000.0})
    overlapped = _measured(ingestion=IngestionRate(1000.0), prep=PrepRate(2000.0), jobs=jobs, **fast)
    overlapped = dataclasses.replace(overlapped, fetch=FetchRate(900_000.0))
    report = Report(overlapped, *recommend(overlapped, 1e12), 1e12, 64, 1.0)
    assert report.bottleneck == "ingestion" and "bottleneck: ingestion (the model)" in str(report)
    assert "on the CPU" not in str(report)
    # Noise put the job from storage ahead of the job without fetch (1,488 against 922 items/s, as a newcomer's run
    # measured on a shared machine): no fetch stall, and the model's own share still its time alone, 1,488 / 3,396.
    jobs = JobRates(1488.0, {None: 922.0, 1: 817.0, 2: 741.0})
    noisy = _measured(ingestion=IngestionRate(3396.0), jobs=jobs, model_on_cpu=True, **fast)
    assert noisy.stall_fractions() == (0, pytest.approx(1 - 1488 / 3396))
    # and stalls that matter name their stage: 76% of the epoch waiting for storage
    assert Report(_measured(), *recommend(_measured(), 1e12), 1e12, 64, 1.0).bottleneck == "fetch"


def test_runs_in_turns_reverse_their_order_every_other_round():
    started = []
    results = phases.in_turns({key: lambda key=key: started.append(key) or key for key in "abc"}, rounds=3)
    assert started == ["a", "b", "c", "c", "b", "a", "a", "b", "c"] and results["b"] == ["b"] * 3


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


def test_epoch_clock_and_training_rate():
    model, data = _small_model(), tf.data.Dataset.from_tensors((tf.zeros([BATCH, 32, 32, 3]), tf.zeros([BATCH])))
    clock = phases.EpochClock(lambda seconds: len(seconds) == 3)
    model.fit(data.repeat(), steps_per_epoch=2, epochs=100, verbose=0, callbacks=[clock])
    assert len(clock.seconds) == 3 and all(s > 0 for s in clock.seconds)  # stopped once enough held
    assert phases.training_rate(model, data, 2, BATCH, min_seconds=0.1) > 0


def test_op_table_names_the_op_made_slow_on_purpose():
    def heavy(x):
        m = tf.fill([100, 100], tf.cast(x, tf.float32) / 1e3)
        for _ in range(8):
            m = tf.matmul(m, m) / 100.0
        return tf.reduce_sum(m)

    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False  # keep the sequential map what it is,
    options.experimental_optimization.map_and_batch_fusion = False  # and apart from the batch
    dataset = tf.data.Dataset.range(240).map(lambda x: x + 1, num_parallel_calls=2).map(heavy).batch(8).prefetch(2)
    rows = OpTable.of(dataset.with_options(options), 20).rows  # of 30 batches
    assert max(rows, key=lambda row: row.cpu_share).name.strip() == "Map", rows
    assert [row.name.strip() for row in rows][:3] == ["Prefetch", "BatchV2", "Map"], rows
    assert any(row.name.strip() == "ParallelMapV2" and row.parallelism is not None for row in rows), rows


@pytest.fixture(scope="module")
def png_files(tmp_path_factory) -> tuple[list[str], list[int]]:
    """48 PNG crops (64x64) of the shipped photos, in 3 classes, a folder each."""
    root, paths, labels = tmp_path_factory.mktemp("png"), [], []
    rng = np.random.default_rng(0)
    for label, (package, name) in enumerate(sample_photos.PHOTOS[:3]):
        photo = np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB"))
        (root / str(label)).mkdir()
        for i in range(16):
            y, x = rng.integers(0, photo.shape[0] - 64), rng.integers(0, photo.shape[1] - 64)
            Image.fromarray(photo[y : y + 64, x : x + 64]).save(root / str(label) / f"{i}.png")
            paths.append(str(root / str(label) / f"{i}.png"))
            labels.append(label)
    return paths, labels


@pytest.fixture(scope="module")
def pcr_path(jpeg_files, tmp_path_factory):
    """32 of the conftest's JPEG crops of the shipped photos, in 2 classes, as a PCR dataset of 4 records, in memory
    (/dev/shm) where the machine has it: storage that no other job's disk traffic slows."""
    folder = tmp_path_factory.mktemp("photos")
    for i, path in enumerate(jpeg_files[:32]):
        (folder / str(i % 2)).mkdir(exist_ok=True)
        os.symlink(path, folder / str(i % 2) / os.path.basename(path))
    root = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else str(folder))
    tfliquid.pcr.convert(str(folder), os.path.join(root, "pcr"), images_per_record=8, progress=False)
    yield os.path.join(root, "pcr")
    shutil.rmtree(root)


def _light(element):
    return tf.image.resize(element["image"], [32, 32]) / 255.0, element["label"]


def _heavy(element):
    image = tf.cast(element["image"], tf.float32)
    for _ in range(12):  # a costly augmentation, on purpose
        image = tf.image.resize(tf.image.resize(image, [192, 192]), [96, 96])
    return tf.image.resize(image, [32, 32]) / 255.0, element["label"]


def _run_code(report: Report, pipeline) -> tuple[dict, tuple]:
    """The recommendation's code run where `pipeline` names the pipeline analyzed; its namespace and first batch."""
    namespace = {"pipeline": pipeline}
    exec(report.code(), namespace)
    return namespace, next(iter(namespace["dataset"]))


def test_the_recommended_code_runs_on_the_pipeline_analyzed(pcr_path):
    pipeline = tfliquid.analysis.pcr_pipeline(pcr_path, _light, BATCH, seed=0)
    m = _measured(pipeline=pipeline, variants=VariantPreps({1: 2.0}, {}))
    for change in (Change(0.5, scan_group=1, prep_parallelism=1), Change(prep_parallelism=2), Change(scan_group=1)):
        report = Report(m, change, predict(m, change), 0.0, 1e12, 64, 1.0)
        namespace, (images, labels) = _run_code(report, pipeline)
        assert images.shape == (BATCH, 32, 32, 3) and labels.dtype == tf.int64, report.code()
        changed = namespace["pipeline"]
        assert (changed.scan_group, changed.prep_parallelism) == (change.scan_group, change.prep_parallelism)
        assert ("cache" in namespace) == (change.cache_fraction > 0), report.code()
    # the cache sized for half the records' bytes, and the dataset read through it
    namespace, _ = _run_code(Report(m, Change(0.5), predict(m, Change(0.5)), 0.0, 1e12, 64, 1.0), pipeline)
    for _ in namespace["dataset"]:
        pass
    assert namespace["cache"].stats().items > 0 and namespace["cache"].capacity_bytes == m.cache_capacity(Change(0.5))


@pytest.mark.slow
def test_the_recommended_conversions_run_on_the_png_files_analyzed(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _light, BATCH, seed=0)
    m = _measured(pipeline=pipeline, variants=VariantPreps({"l3": 2.0, "raw": 10.0}, {"l3": 1.2, "raw": 3.0}))
    for change in (Change(l3=True, prep_parallelism=2), Change(0.5, liquid_ratio=6)):
        report = Report(m, change, predict(m, change), 0.0, 1e12, 64, 1.0)
        _, (images, batch_labels) = _run_code(report, pipeline)
        assert images.shape == (BATCH, 32, 32, 3) and set(batch_labels.numpy()) <= {0, 1, 2}, report.code()


def test_analyze_and_plan_threads_refuse_bad_arguments_before_any_work(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _light, BATCH)
    model = _small_model()
    for bad in ({"steps": 0}, {"steps": -1}, {"steps": 1.5}, {"subset_items": -5}, {"subset_items": 4}):
        with pytest.raises(tfliquid.ArgumentError, match="steps|subset|batch"):
            tfliquid.analysis.analyze(model, pipeline, progress=False, **bad)
    for budget in (-1, math.nan, math.inf, "1e9"):
        with pytest.raises(tfliquid.ArgumentError, match="memory_budget_bytes"):
            tfliquid.analysis.analyze(model, pipeline, memory_budget_bytes=budget, progress=False)
    with pytest.raises(tfliquid.ArgumentError, match="InputPipeline .*got _PrefetchDataset"):
        tfliquid.analysis.analyze(model, pipeline.dataset(), progress=False)
    with pytest.raises(tfliquid.ArgumentError, match="compiled Keras model"):
        tfliquid.analysis.analyze(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), pipeline)
    for cores in (0, -1, 1.5, True):
        with pytest.raises(tfliquid.ArgumentError, match="cores must be an int >= 1"):
            tfliquid.analysis.plan_threads(pipeline, cores=cores)
    with pytest.raises(tfliquid.ArgumentError, match="subset_items must be an int >= 1"):
        tfliquid.analysis.plan_threads(pipeline, subset_items=-5)


@pytest.mark.slow
def test_fetch_bound_png_files(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _light, BATCH, seed=0)
    model = _small_model()
    before = [w.copy() for w in model.get_weights()]
    tfliquid.io.set_read_bandwidth(0.5e6)
    try:
        report = tfliquid.analysis.analyze(model, pipeline, subset_items=32, steps=5, quick=True, progress=False)
    finally:
        tfliquid.io.set_read_bandwidth(None)
    m = report.measured
    assert report.bottleneck == "fetch" and report.stalls[0] > 0.5, str(report)
    assert m.fetch.bytes_per_second < 0.67e6 and m.jobs.training * pipeline.bytes_per_item < 0.67e6
    assert report.change.cache_fraction > 0 and report.prediction["rate"] > 2 * m.jobs.training
    # PNG files: L3 and Liquid's raw pixels weighed on the subset; the job without fetch at every parallelism.
    assert 1.0 < m.variants.stored_ratios["l3"] < 2.5 and m.variants.stored_ratios["raw"] > 1.5
    assert set(m.variants.ratios) == {"l3", "raw"} and set(m.jobs.served) == {None, 1, 2}
    assert sum(name.startswith("Liquid png:raw") and "," not in name for name, _ in report.whatif_rows()) == 1
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)  # the analysis trained the model, then restored its weights
    # A cache sized as the recommendation sizes it holds every file: the headers and keys it counts are measured.
    with tfliquid.MinIOCache(m.cache_capacity(Change(cache_fraction=1.0))) as cache:
        for _ in range(2):
            assert sum(1 for _ in pipeline.reads(cache=cache)) == len(paths)
        assert cache.stats().items == len(paths) and cache.stats().epochs[1].misses == 0
    lines = str(report).splitlines()
    header = next(i for i, line in enumerate(lines) if "what if (items/s)" in line)
    table = lines[header : lines.index("", header)]
    assert len(table) == len(report.whatif_rows()) + 1 and {len(line) for line in table} == {len(lines[header])}
    ops_header = next(i for i, line in enumerate(lines) if "tf.data ops (output first)" in line)
    op_rows = lines[ops_header + 1 : lines.index("", ops_header)]
    assert len(op_rows) == len(m.ops.rows) and len({row.index("%") for row in op_rows}) == 1
    as_json = json.loads(report.to_json())
    assert as_json["stalls"]["bottleneck"] == "fetch" and as_json["recommendation"]["code"] == report.code()
    assert (as_json["subset_items"], as_json["quick"], as_json["measured"]["jobs"]["training"]) == (
        32,
        True,
        m.jobs.training,
    )
    assert "(quick: " in lines[0]


@pytest.mark.slow
def test_prep_bound_pcr_dataset_and_its_recommended_code(pcr_path):
    pipeline = tfliquid.analysis.pcr_pipeline(pcr_path, _heavy, BATCH, seed=0)
    report = tfliquid.analysis.analyze(_small_model(), pipeline, steps=5, quick=True, progress=False)
    m = report.measured
    assert report.bottleneck == "prep" and report.stalls[0] < report.stalls[1], str(report)
    assert report.change is None or report.change.cache_fraction == 0  # nothing to gain from a cache when prep limits
    # every scan group weighed, each group's prep at least as fast as any higher group's
    groups = sorted(g for g in m.variants.ratios if g is not None)
    assert groups == list(range(1, pipeline.scan_groups)) and pipeline.scan_groups > 1
    assert all(m.variants.ratios[a] >= m.variants.ratios[b] >= 1 for a, b in zip(groups, groups[1:]))
    if report.change is not None:
        images, labels = _run_code(report, pipeline)[1]
        assert images.shape == (BATCH, 32, 32, 3) and labels.dtype == tf.int64


@pytest.mark.slow
def test_the_job_without_fetch_reads_the_cache_and_a_cache_holds_whole_records(pcr_path):
    pipeline = tfliquid.analysis.pcr_pipeline(pcr_path, _light, BATCH, seed=0)
    job = phases.Job(_small_model(), pipeline, 16, 5, 2, rounds=1, prep_turns=1, seconds=0.2)
    with job.caches:
        cache = CacheRate.measure(job)
        jobs = JobRates.measure(job)
        epochs = job.served[1].stats().epochs
    # Every record read from storage once, then hits: the subset's records in the first pass (a later pass's reader
    # may open one more ahead of what its take uses, which then misses once, and is held from then on).
    misses = sum(e.misses for e in epochs)
    assert epochs[0].misses > 0 and sum(e.hits for e in epochs[1:]) > 0
    assert misses == sum(e.admitted_items for e in epochs) <= pipeline.records, epochs
    assert set(jobs.served) == {None, 1, 2} and all(rate > 0 for rate in [jobs.training, *jobs.served.values()])
    # A cache sized as the what-if sizes it holds the whole records the what-if counts on (sizes vary: one more or
    # less), its headers and keys measured on the subset.
    m = _measured(pipeline=pipeline, cache=cache)
    for fraction in (0.5, 1.0):
        with tfliquid.MinIOCache(m.cache_capacity(Change(fraction))) as whole_records:
            for _ in pipeline.reads(cache=whole_records):
                pass
            held = whole_records.stats().items
        assert abs(held - m.cache_share(Change(fraction)) * pipeline.records) <= (fraction < 1), (fraction, held)


def _resident_bytes(path: str) -> int:
    """Bytes of the file in the page cache: mincore(2) over a read-only mapping of it (mapping reads nothing)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size, page = os.path.getsize(path), os.sysconf("SC_PAGE_SIZE")
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        pages = (ctypes.c_ubyte * ((size + page - 1) // page))()
        try:
            assert libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), pages) == 0, ctypes.get_errno()
        finally:
            libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))
    finally:
        os.close(fd)
    return min(size, page * sum(p & 1 for p in pages))


def _storage_bytes_read() -> int:
    """Bytes this process had the block device read (/proc/self/io read_bytes): page cache hits count nothing."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))


def test_pcr_pipeline_files_are_the_records_and_the_fetch_phase_reads_them_from_storage(jpeg_files, tmp_path):
    # On a disk (tmp_path), not /dev/shm: tmpfs pages are the storage itself, and no drop can evict them.
    folder = tmp_path / "photos"
    for i, path in enumerate(jpeg_files[:64]):
        (folder / str(i % 2)).mkdir(parents=True, exist_ok=True)
        os.symlink(path, folder / str(i % 2) / os.path.basename(path))
    tfliquid.pcr.convert(str(folder), str(tmp_path / "pcr"), images_per_record=16, progress=False)
    pipeline = tfliquid.analysis.pcr_pipeline(str(tmp_path / "pcr"), _light, BATCH, seed=0)
    index = read_index(str(tmp_path / "pcr"))
    assert len(index.records) == 4 and pipeline.files == tuple(
        os.path.join(str(tmp_path / "pcr"), record.path) for record in index.records
    )
    assert sorted(pipeline.files) == sorted(str(p) for p in (tmp_path / "pcr").rglob("*.pcr"))

    def read_all():
        for path in pipeline.files:
            Path(path).read_bytes()
        assert all(_resident_bytes(path) == os.path.getsize(path) for path in pipeline.files)

    read_all()
    drop_page_cache(pipeline.files)
    assert [_resident_bytes(path) for path in pipeline.files] == [0] * 4
    # The fetch phase drops them first: its reads reach the device, though every record was in the page cache.
    read_all()
    before = _storage_bytes_read()
    job = phases.Job(None, pipeline, 2 * BATCH, 0, 2, rounds=1, prep_turns=1, seconds=0.2)
    FetchRate.measure(job)
    assert _storage_bytes_read() - before >= min(os.path.getsize(path) for path in pipeline.files)


@pytest.mark.slow
def test_cli_on_the_example_script(tmp_path, monkeypatch, capsys):
    from tfliquid import cli

    monkeypatch.setenv("TFLIQUID_ANALYZE_WORKDIR", str(tmp_path))
    monkeypatch.setenv("READ_BANDWIDTH", "2e6")
    monkeypatch.setenv("IMAGES_PER_CLASS", "7")
    report_path, plot_path = tmp_path / "report.json", tmp_path / "plot.png"
    options = ["--subset", "64", "--steps", "5", "--json", str(report_path), "--plot", str(plot_path), "--quiet"]
    try:
        assert cli.main(["analyze", str(ROOT / "examples" / "analyze_pcr.py"), "--quick", *options]) == 0
    finally:
        tfliquid.io.set_read_bandwidth(None)  # the example's, in this process
    printed = capsys.readouterr().out
    assert "recommendation:" in printed and "bottleneck: fetch" in printed, printed
    report = json.loads(report_path.read_text())
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and report["quick"]
    assert report["whatif"][0]["change"] == "as it is" and report["recommendation"]["speedup"] > 1.5
    assert any(row["change"].startswith("scan group") for row in report["whatif"])  # a PCR dataset: groups weighed
    # the code, run on the pipeline the script's dataset() returns
    pipeline = runpy.run_path(str(ROOT / "examples" / "analyze_pcr.py"))["dataset"]()
    tfliquid.io.set_read_bandwidth(None)
    namespace = {"pipeline": pipeline}
    exec(report["recommendation"]["code"], namespace)
    images, _ = next(iter(namespace["dataset"]))
    assert images.shape[0] == 32 and images.dtype == tf.float32


def test_cli_refuses_bad_arguments_before_running_the_script(tmp_path, capsys):
    from tfliquid import cli

    ran = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(
        f"import pathlib, tensorflow as tf\npathlib.Path({str(ran)!r}).touch()\n"
        "def model():\n    return None\n"
        "def dataset():\n    return tf.data.Dataset.range(4).prefetch(1)\n"
    )
    for option, value in (("--steps", "0"), ("--steps", "-1"), ("--subset", "1.5"), ("--memory-budget", "-1")):
        with pytest.raises(SystemExit) as exited:
            cli.main(["analyze", str(script), option, value])
        assert exited.value.code == 2 and f"argument {option}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(script), "--memory-budget", "nan"])
    for option, value in (
        ("--plot", str(tmp_path)),
        ("--plot", str(tmp_path / "no" / "p.png")),
        ("--json", str(tmp_path)),
    ):
        assert cli.main(["analyze", str(script), option, value]) == 2
        assert f"{option}" in capsys.readouterr().err
    assert not ran.exists()  # refused before the script ran
    assert cli.main(["analyze", str(script), "--quiet"]) == 2
    assert "dataset() must return a tfliquid.analysis.InputPipeline" in capsys.readouterr().err and ran.exists()
    script.write_text("def dataset():\n    return None\n")
    assert cli.main(["analyze", str(script), "--quiet"]) == 2
    assert "must define model(): model() returns a compiled Keras model" in capsys.readouterr().err


def test_cli_loads_the_script_so_that_autograph_converts_its_lambdas(pcr_path, tmp_path, capfd, caplog):
    from tfliquid import cli

    script = tmp_path / "lambda_in_map.py"
    script.write_text(
        "import tensorflow as tf\nimport tfliquid\n"
        "def model():\n    return None\n"
        f"def dataset():\n    return tfliquid.PCRDataset({pcr_path!r}).map(lambda x: (x['image'], x['label']))\n"
    )
    assert cli.main(["analyze", str(script), "--quiet"]) == 2  # its dataset() is a tf.data.Dataset: refused
    printed = capfd.readouterr()
    assert "dataset() must return a tfliquid.analysis.InputPipeline" in printed.err
    # TensorFlow's logger writes to stderr, or, where the root logger has a handler (pytest's), to that one
    assert "AutoGraph could not transform" not in printed.err + caplog.text, caplog.text


def test_plot_draws_each_rate_in_its_own_colour_and_names_an_ingestion_above_it(tmp_path, monkeypatch):
    from tfliquid.analysis import report as report_module

    figures = []
    monkeypatch.setattr(report_module, "save_png", lambda figure, path: figures.append(figure))
    for ingestion in (300.0, 1e6):  # within the plotted rates, then far above them
        m = _measured(ingestion=IngestionRate(ingestion))
        Report(m, Change(), predict(m, Change()), 400, 0, 64, 1.0).plot(str(tmp_path / "p.png"))
    for figure, ingestion in zip(figures, (300.0, 1e6)):
        axes = figure.axes[0]
        labels = [text.get_text() for text in axes.get_legend().get_texts()]
        colours = [line.get_color() for line in axes.get_lines() if not line.get_label().startswith("ingestion")]
        assert len(set(colours)) == len(colours) == 3  # fetch, the predicted rate, P
        # the predicted rate never above the line labelled fetch: that line is the bound the prediction takes
        lines = {line.get_label(): line.get_ydata() for line in axes.get_lines()}
        fetch, rate = lines["fetch: storage's reads and the cache's hits"], lines["predicted training rate"]
        assert all(r <= f * (1 + 1e-12) for r, f in zip(rate, fetch)) and min(fetch) < 1e4
        top = axes.get_ylim()[1]
        if ingestion < top:
            assert "ingestion G (300)" in labels
        else:
            assert "ingestion G (1000000), above the plot" in labels and top < 1e6


@pytest.mark.slow
def test_thread_plan(png_files):
    paths, labels = png_files
    pipeline = tfliquid.analysis.file_pipeline(paths, labels, _heavy, BATCH, seed=0)
    plan = tfliquid.analysis.plan_threads(pipeline, subset_items=16, cores=2)
    assert set(plan.prep_by_threads) == {1, 2, 3} and 1 <= plan.prep_parallelism <= 2
    assert plan.read_parallelism == max(1, 2 - plan.prep_parallelism) and "thread plan on 2 cores" in str(plan)
    planned = plan.apply(pipeline)
    assert planned.prep_parallelism == plan.prep_parallelism
    batches = planned.dataset().with_options(plan.options()).take(2)
    assert [b[0].shape[0] for b in batches] == [BATCH, BATCH]


def _dense_model(steps_per_execution: int = 1):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(2)])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss, steps_per_execution=steps_per_execution)
    return model


@pytest.fixture(scope="module")
def input_bound(tmp_path_factory):
    """4 batches of 128 rows that each read 64 KB through a 0.8 MB/s throttle first (80 ms, waiting, not computing),
    and 64 batches of 32 rows from memory; the throttle set while the module's monitor tests run."""
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 256), np.float32), rng.integers(0, 2, 512)
    blob = tmp_path_factory.mktemp("blob") / "blob"
    blob.write_bytes(rng.integers(0, 256, 64 << 10, dtype=np.uint8).tobytes())

    def slow(a, b):
        # An offset taken from the batch: with constant arguments TensorFlow would read the file once, up front.
        data = tfliquid.io.read_file(str(blob), offset=tf.cast(b[0], tf.int64), length=(64 << 10) - 1)
        return a + 0 * tf.cast(tf.strings.length(data), tf.float32), b

    rows = tf.data.Dataset.from_tensor_slices((x, y))
    tfliquid.io.set_read_bandwidth(0.8e6)
    yield rows.batch(128).map(slow), rows.batch(32).cache().repeat(4)
    tfliquid.io.set_read_bandwidth(None)


def _fit(data, monitor, epochs=3, steps_per_execution=1, **fit):
    history = _dense_model(steps_per_execution).fit(
        monitor.instrument(data), epochs=epochs, shuffle=False, verbose=0, callbacks=[monitor], **fit
    )
    return history.history


def test_stall_monitor_tells_an_input_bound_job_from_a_model_bound_one(input_bound):
    slow, fast = input_bound
    waiting = _fit(slow, tfliquid.keras.StallMonitor(), validation_data=slow)
    stalled = waiting["data_stall_fraction"]
    # Epochs after the first (which also traces the step: not waiting for input) wait most of their time, the
    # validation (not instrumented here: not measured) left out.
    assert min(stalled[1:]) > 0.6 and stalled[0] < min(stalled[1:]), stalled
    assert "val_data_stall_fraction" not in waiting
    # Model-bound: a step computes for milliseconds where a batch from memory takes microseconds. One iterator for
    # all epochs (steps_per_epoch on a repeated dataset): otherwise Keras deletes each epoch's iterator at the next
    # epoch's first step, which counts as waiting and took seconds on a loaded machine (docs/analysis.md).
    computing = _fit(fast.repeat(), tfliquid.keras.StallMonitor(), steps_per_epoch=64)
    fractions = computing["data_stall_fraction"]
    assert np.median(fractions) < 0.2, computing  # the median epoch: a pause in one epoch does not decide
    assert all(rate > 0 for rate in computing["input_rate"])


def test_stall_monitor_measures_several_steps_per_execution_and_leaves_validation_out(input_bound):
    slow, _ = input_bound
    monitor = tfliquid.keras.StallMonitor()
    history = _fit(slow, monitor, steps_per_execution=4, validation_data=monitor.instrument(slow))
    assert min(history["data_stall_fraction"][1:]) > 0.6, history
    # validation, instrumented by the same monitor, is measured apart and not counted in training's time
    assert min(history["val_data_stall_fraction"][1:]) > 0.6, history


def test_stall_monitor_refuses_data_it_did_not_instrument(input_bound):
    _, fast = input_bound
    monitor = tfliquid.keras.StallMonitor()
    with pytest.raises(tfliquid.ArgumentError, match="not instrumented by this monitor"):
        _dense_model().fit(fast, epochs=1, verbose=0, callbacks=[monitor])
    instrumented, beside = tfliquid.keras.StallMonitor(), tfliquid.keras.StallMonitor()
    with pytest.raises(tfliquid.ArgumentError, match="not instrumented by this monitor"):
        _dense_model().fit(instrumented.instrument(fast), epochs=1, verbose=0, callbacks=[instrumented, beside])
    with pytest.raises(tfliquid.ArgumentError, match="takes a tf.data.Dataset"):
        monitor.instrument([1, 2, 3])


def test_stall_counters_count_every_batch_and_item_and_leave_elements_unchanged():
    monitor = tfliquid.keras.StallMonitor()
    stamped = monitor.instrument(tf.data.Dataset.range(10).batch(4))  # batches of 4, 4 and 2
    assert [b.tolist() for b in stamped.as_numpy_iterator()] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    waited, batches, items = monitor.counters()
    assert (batches, items) == (3, 10) and waited >= 0


def test_stall_stamped_iterator_checkpoints_through_the_stamp(tmp_path):
    monitor = tfliquid.keras.StallMonitor()
    iterator = iter(monitor.instrument(tf.data.Dataset.range(12).batch(2)))
    assert next(iterator).numpy().tolist() == [0, 1]
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    assert next(iterator).numpy().tolist() == [2, 3]
    checkpoint.restore(saved)
    assert next(iterator).numpy().tolist() == [2, 3]
    assert monitor.counters()[1:] == (3, 6)  # every batch taken, the one read again included
