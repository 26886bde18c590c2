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
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.analysis import Change, Measurements, fit_scaling, phases, predict
from tfliquid.analysis.phases import CacheRate, FetchRate, IngestionRate, JobRates, OpTable, PrepRate, VariantPreps
from tfliquid.analysis.whatif import NEAR_BEST, candidate_changes, recommend
from tfliquid.io.storage import drop_page_cache
from tfliquid.pcr.format import read_index
from tfliquid.samples import photos as sample_photos

ROOT = Path(__file__).resolve().parent.parent
BATCH = 8


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
    with pytest.raises(tfliquid.ArgumentError, match="two or more thread counts"):
        fit_scaling([2, 2], [1, 1])


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
    # half the dataset cached: storage's reads spread over the epoch allow 100 / 0.5; the paper's F'(f) beside it
    assert predict(m, Change(cache_fraction=0.5)) == pytest.approx(
        dict(ingestion=1000, prep=400, fetch=1 / (0.5 / 10_000 + 0.5 / 100), rate=200)
    )
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
    """48 PNG crops (64x64) of the shipped photos, in 3 classes."""
    root, paths, labels = tmp_path_factory.mktemp("png"), [], []
    rng = np.random.default_rng(0)
    for label, (package, name) in enumerate(sample_photos.PHOTOS[:3]):
        photo = np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB"))
        for i in range(16):
            y, x = rng.integers(0, photo.shape[0] - 64), rng.integers(0, photo.shape[1] - 64)
            Image.fromarray(photo[y : y + 64, x : x + 64]).save(root / f"{label}-{i}.png")
            paths.append(str(root / f"{label}-{i}.png"))
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
    assert report.change.cache_fraction == 0  # nothing to gain from a cache when prep limits
    # every scan group weighed, each group's prep at least as fast as any higher group's
    groups = sorted(g for g in m.variants.ratios if g is not None)
    assert groups == list(range(1, pipeline.scan_groups)) and pipeline.scan_groups > 1
    assert all(m.variants.ratios[a] >= m.variants.ratios[b] >= 1 for a, b in zip(groups, groups[1:]))
    namespace = {
        "tfliquid": tfliquid,
        "tf": tf,
        "prep": lambda e: _light({**e, "image": tf.io.decode_jpeg(e["image"])}),
    }
    exec(report.code(), namespace)
    images, labels = next(iter(namespace["dataset"]))
    assert images.shape == (BATCH, 32, 32, 3) and labels.dtype == tf.int64


@pytest.mark.slow
def test_the_job_without_fetch_reads_the_cache_and_a_cache_holds_whole_records(pcr_path):
    pipeline = tfliquid.analysis.pcr_pipeline(pcr_path, _light, BATCH, seed=0)
    job = phases.Job(_small_model(), pipeline, 16, 5, 2, rounds=1, prep_turns=1, seconds=0.2)
    with job.caches:
        cache = CacheRate.measure(job)
        jobs = JobRates.measure(job)
        epochs = job.served[1].stats().epochs
    # the subset's records read once from storage, then every read of the served job a hit
    assert epochs[0].misses > 0 and sum(e.hits for e in epochs[1:]) > 0 and sum(e.misses for e in epochs[1:]) == 0
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
    namespace = {"tfliquid": tfliquid, "tf": tf, "prep": lambda e: (tf.io.decode_jpeg(e["image"]), e["label"])}
    exec(report["recommendation"]["code"], namespace)
    images, _ = next(iter(namespace["dataset"]))
    assert images.shape[0] == 32 and images.dtype == tf.uint8


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
        report_module.Report(m, Change(), predict(m, Change()), 400, 0, 64, 1.0).plot(str(tmp_path / "p.png"))
    for figure, ingestion in zip(figures, (300.0, 1e6)):
        axes = figure.axes[0]
        labels = [text.get_text() for text in axes.get_legend().get_texts()]
        colours = [line.get_color() for line in axes.get_lines() if not line.get_label().startswith("ingestion")]
        assert len(set(colours)) == len(colours) == 3  # fetch, the predicted rate, P
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
    waited, batches, items = monitor._read()
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
    assert monitor._read()[1:] == (3, 6)  # every batch taken, the one read again included
