"""Every public function given wrong types, empty, huge and negative values: a clear Python exception naming the
argument or the file, never a crash, a hang or a traceback from deep inside (the ops: test_op_input_checks.py)."""

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.cache import CacheDirectoryError
from tfliquid.cache.item_format import decode_item, encode_item
from tfliquid.jpeg import scans as jpeg
from tfliquid.l3 import codec
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid import profiling
from tfliquid.pcr import format as pcr_format


@pytest.fixture(scope="module")
def pcr_dataset(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("bad_inputs") / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=8, progress=False)
    return str(dst)


def _cases(pcr_dataset, tmp_path):
    missing = str(tmp_path / "missing")
    return [
        # (call, exception, message pattern)
        (lambda: tfliquid.PCRDataset(pcr_dataset, scan_group=0), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, scan_group=-1), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, scan_group=2**70), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, scan_group="2"), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, scan_group=True), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, num_parallel_reads=0), tfliquid.ArgumentError, "num_parallel"),
        (lambda: tfliquid.PCRDataset(pcr_dataset, cache=8), TypeError, "MinIOCache"),
        (lambda: tfliquid.PCRDataset(missing), tfliquid.PathError, "missing: no such file or folder"),
        (lambda: tfliquid.PCRDataset(str(tmp_path)), tfliquid.PathError, "is not a PCR dataset"),
        (lambda: tfliquid.PCRDataset(pcr_dataset).bytes_per_epoch(0), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset).bytes_per_epoch(-5), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.pcr.inspect(missing), tfliquid.PathError, "missing: no such file or folder"),
        (lambda: tfliquid.inspect(missing), tfliquid.PathError, "missing: no such file or folder"),
        (lambda: tfliquid.liquid.inspect(pcr_dataset), tfliquid.FormatError, "it is a PCR dataset"),
        (lambda: tfliquid.pcr.convert(missing, str(tmp_path / "out")), tfliquid.PathError, "missing: no such file"),
        (
            lambda: tfliquid.pcr.convert(pcr_dataset, str(tmp_path / "o"), images_per_record=2**40),
            tfliquid.ArgumentError,
            "images_per_record",
        ),
        (lambda: tfliquid.l3.convert(missing, str(tmp_path / "out")), tfliquid.PathError, "missing"),
        (lambda: tfliquid.l3.convert(pcr_dataset, str(tmp_path / "o"), workers=0), tfliquid.ArgumentError, "workers"),
        (
            lambda: tfliquid.l3.convert(pcr_dataset, str(tmp_path / "o"), profile="fast"),
            tfliquid.ArgumentError,
            "profile",
        ),
        (lambda: tfliquid.l3.encode_l3(np.zeros((0, 4, 3), np.uint8)), tf.errors.InvalidArgumentError, "size"),
        (lambda: tfliquid.l3.encode_l3(np.zeros((4, 4, 2), np.uint8)), tf.errors.InvalidArgumentError, "channel"),
        (
            lambda: tfliquid.l3.encode_l3(np.zeros((4, 4, 3), np.uint8), profile="x"),
            tf.errors.InvalidArgumentError,
            "profile",
        ),
        (lambda: tfliquid.l3.decode_l3(b""), tf.errors.InvalidArgumentError, "L3: offset 0"),
        (lambda: tfliquid.l3.decode_l3_batch([b"", b""]), tf.errors.InvalidArgumentError, "L3 image 0: offset 0"),
        (lambda: tfliquid.l3.decode_l3_batch(tf.zeros([0], tf.string)), tf.errors.InvalidArgumentError, "empty"),
        (lambda: codec.decode(b"\x89L3I"), codec.L3Error, "offset 4"),
        (lambda: codec.encode(np.zeros((2, 2, 3), np.float32)), ValueError, "uint8"),
        (lambda: pcr_format.decode_record(b""), pcr_format.PCRFormatError, "offset 0"),
        (lambda: jpeg.scan_ends(b""), jpeg.JpegError, "offset 0"),
        (lambda: decode_item(b"short"), tfliquid.FormatError, "offset 0"),
        (lambda: encode_item(b"", [np.zeros(1)]), ValueError, "key"),
        (lambda: tfliquid.MinIOCache(-1), tfliquid.ArgumentError, "capacity_bytes"),
        (lambda: tfliquid.MinIOCache(2**63), tfliquid.ArgumentError, "capacity_bytes"),
        (lambda: tfliquid.MinIOCache(10, name=""), tfliquid.ArgumentError, "name"),
        (lambda: tfliquid.MinIOCache(10, policy="fifo"), tfliquid.ArgumentError, "policy"),
        (lambda: tfliquid.MinIOCache(10, policy=None), tfliquid.ArgumentError, "policy"),
        (lambda: tfliquid.minio_cache("read"), TypeError, "callable"),
        (lambda: tfliquid.cache.simulate("lru", 10, 5, 0), tfliquid.ArgumentError, "epochs"),
        (lambda: tfliquid.cache.simulate("lru", 10**12 + 0.5, 5, 1), tfliquid.ArgumentError, "num_items"),
        (lambda: tfliquid.io.read_file(missing), tf.errors.NotFoundError, "missing"),
        (
            lambda: tfliquid.io.read_file(pcr_dataset + "/index.pcrindex", -1, 1),
            tf.errors.InvalidArgumentError,
            "negative offset",
        ),
        (lambda: tfliquid.io.draw_read_bandwidth(-1, tf.constant(0)), tf.errors.InvalidArgumentError, ">= 0"),
        (lambda: tfliquid.io.set_read_bandwidth(-1.0), tfliquid.ArgumentError, "bytes_per_second"),
        (lambda: tfliquid.LiquidDataset(missing, batch_size=8), tfliquid.PathError, "missing: no such file"),
        (lambda: tfliquid.LiquidDataset(str(tmp_path), batch_size=8), tfliquid.FormatError, "not a Liquid dataset"),
        (lambda: tfliquid.LiquidDataset(pcr_dataset, batch_size=8), tfliquid.FormatError, "it is a PCR dataset"),
        (lambda: tfliquid.liquid.convert(missing, str(tmp_path / "l"), formats="png"), tfliquid.PathError, "missing"),
        (
            lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats="png,raw", ratio="1:-1"),
            tfliquid.ArgumentError,
            ">= 0",
        ),
        (
            lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats=["png"], images_per_record=0),
            tfliquid.ArgumentError,
            "images_per_record",
        ),
        (
            lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats="png", png_compression=10),
            tfliquid.ArgumentError,
            "png_compression",
        ),
        (lambda: liquid_format.decode_raw(b"\x89RAW"), tfliquid.FormatError, "offset 4"),
        (lambda: liquid_format.batch_counts([3, 4], 0), tfliquid.FormatError, "batch size"),
        (lambda: profiling.profile(missing, "png,raw"), tfliquid.PathError, "missing"),
        (lambda: profiling.profile(pcr_dataset, "png"), tfliquid.ArgumentError, "two distinct formats"),
        (lambda: profiling.profile(pcr_dataset, "png,raw", sample=1), tfliquid.ArgumentError, "sample"),
    ]


def _newer_cases(pcr_dataset, liquid_photos, tmp_path):
    """The parts added since the first round: Liquid, L3's batch op and layer, the analyzer and StallMonitor,
    tf.data service, the seeded order, the clairvoyant policy and the shared cache directory."""
    from tfliquid import analysis, service
    from tfliquid.keras import StallMonitor
    from tfliquid.keras.layers import DecodeL3
    from tfliquid.order import SeededOrder

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    order = SeededOrder(10, 0)
    pipeline = analysis.pcr_pipeline(pcr_dataset, lambda e: (e["image"], e["label"]), 4)
    model = tf.keras.Sequential([tf.keras.Input([1]), tf.keras.layers.Dense(1)])
    model.compile(loss="mse")
    liquid, refused, op_refused = tfliquid.LiquidDataset, tfliquid.ArgumentError, tf.errors.InvalidArgumentError
    return [
        (lambda: liquid(liquid_photos, batch_size=0), refused, "batch_size"),
        (lambda: liquid(liquid_photos, batch_size="8"), refused, "batch_size"),
        (lambda: liquid(liquid_photos, batch_size=2**70), refused, "batch_size"),
        (lambda: liquid(liquid_photos, batch_size=4, num_parallel_reads=0), refused, "num_parallel_reads"),
        (lambda: liquid(liquid_photos, batch_size=4, cache="big"), refused, "cache"),
        (lambda: liquid(liquid_photos, batch_size=4, cache=-1), refused, "cache"),
        (lambda: liquid(liquid_photos, batch_size=4, order="shuffled"), refused, "order"),
        (lambda: liquid(liquid_photos, batch_size=4, epochs=0), refused, "epochs"),
        (lambda: liquid(liquid_photos, batch_size=4, first_epoch=-1), refused, "first_epoch"),
        (lambda: liquid(liquid_photos, batch_size=4, seed=-1), refused, "seed"),
        (lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats=""), refused, "formats"),
        (lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats="gif"), refused, "formats"),
        (
            lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), formats="png", channels=2),
            refused,
            "channels",
        ),
        (lambda: tfliquid.liquid.convert(pcr_dataset, str(tmp_path / "l"), ratio="x"), refused, "ratio"),
        (
            lambda: tfliquid.liquid.convert(pcr_dataset, str(a_file), formats="png"),
            tfliquid.ConversionError,
            "a_file is a file",
        ),
        (lambda: profiling.profile(pcr_dataset, "png,raw", read_bandwidth=float("nan")), refused, "read_bandwidth"),
        (lambda: profiling.profile(pcr_dataset, "png,raw", read_bandwidth=-1), refused, "read_bandwidth"),
        (lambda: tfliquid.l3.decode_l3_batch(tf.zeros([2, 2], tf.string)), op_refused, "must be a vector"),
        (lambda: tfliquid.l3.decode_l3_batch(tf.zeros([2], tf.int32)), (op_refused, TypeError, ValueError), "string"),
        (lambda: tfliquid.l3.decode_l3_batch([b"\x89L3I" + b"\xff" * 60]), op_refused, "L3 image 0"),
        (lambda: DecodeL3(image_shape=(0, 4, 3)), refused, "image_shape"),
        (lambda: DecodeL3(image_shape=(4, 4, 2)), refused, "image_shape"),
        (lambda: DecodeL3(image_shape="4x4"), refused, "image_shape"),
        (lambda: DecodeL3()(tf.zeros([2, 2], tf.string)), op_refused, "must be a vector"),
        (lambda: StallMonitor().instrument([1, 2, 3]), refused, "tf.data.Dataset"),
        (lambda: analysis.analyze(model, pipeline, steps=0), refused, "steps"),
        (lambda: analysis.analyze(model, pipeline, steps=-1), refused, "steps"),
        (lambda: analysis.analyze(model, tf.data.Dataset.range(3)), refused, "pipeline"),
        (lambda: analysis.analyze(model, pipeline, memory_budget_bytes=float("nan")), refused, "memory_budget_bytes"),
        (lambda: analysis.analyze(model, pipeline, subset_items=0), refused, "subset_items"),
        (lambda: analysis.analyze("model", pipeline), refused, "model"),
        (lambda: analysis.plan_threads(pipeline, cores=0), refused, "cores"),
        (lambda: analysis.plan_threads(pipeline, cores=1.5), refused, "cores"),
        (lambda: analysis.plan_threads(pipeline, subset_items=-5), refused, "subset_items"),
        (lambda: analysis.pcr_pipeline(pcr_dataset, "prep", 4), refused, "preprocess"),
        (lambda: analysis.pcr_pipeline(pcr_dataset, lambda e: e, 0), refused, "batch_size"),
        (lambda: analysis.file_pipeline([], [], lambda e: e, 4), refused, "paths"),
        (lambda: service.serve_dispatcher(70000, tmp_path), refused, "port"),
        (lambda: service.serve_dispatcher("5050", tmp_path), refused, "port"),
        (lambda: service.serve_dispatcher(5050, ""), refused, "work_dir"),
        (lambda: service.serve_dispatcher(5050, a_file), refused, "work_dir"),
        (lambda: service.serve_worker("", 5051), refused, "dispatcher"),
        (lambda: service.serve_worker("localhost:0", 5051), refused, "dispatcher"),
        (lambda: service.serve_worker("localhost:5050", -1), refused, "port"),
        (lambda: SeededOrder(0, 0), refused, "num_items"),
        (lambda: SeededOrder(2**70, 0), refused, "num_items"),
        (lambda: SeededOrder(10, -1), refused, "seed"),
        (lambda: SeededOrder(10, 0, num_workers=0), refused, "num_workers"),
        (lambda: SeededOrder(10, 0, num_workers=11), refused, "num_workers"),
        (lambda: SeededOrder(10, 0, num_workers=2, worker_index=2), refused, "worker_index"),
        (lambda: SeededOrder(10, "0"), refused, "seed"),
        (lambda: order.positions(10, 0), refused, "item"),
        (lambda: order.positions(-1, 0), refused, "item"),
        (lambda: order.items_at(10, 0), refused, "positions"),
        (lambda: order.next_use(10, 0, 0), refused, "item"),
        (lambda: order.keys(-1), refused, "epoch"),
        (lambda: order.dataset(epochs=-1), refused, "epochs"),
        (lambda: tfliquid.MinIOCache(10, policy="clairvoyant"), refused, "order"),
        (lambda: tfliquid.MinIOCache(10, policy="clairvoyant", order="seeded"), refused, "order"),
        (lambda: tfliquid.MinIOCache(10, directory=""), refused, "directory"),
        (lambda: tfliquid.MinIOCache(10, directory=a_file), CacheDirectoryError, "a_file/items: Not a directory"),
        (lambda: tfliquid.MinIOCache(10, directory=str(a_file / "sub")), CacheDirectoryError, "sub: Not a directory"),
        (lambda: tfliquid.MinIOCache(10, directory=5), refused, "directory"),
    ]


@pytest.mark.parametrize("newer", [False, True], ids=["first-round", "newer-parts"])
def test_every_bad_input_is_a_clear_exception(pcr_dataset, liquid_photos, tmp_path, newer):
    unclear = []
    cases = _newer_cases(pcr_dataset, liquid_photos, tmp_path) if newer else _cases(pcr_dataset, tmp_path)
    for i, (call, expected, pattern) in enumerate(cases):
        try:
            call()
            unclear.append((i, "no exception"))
        except expected as e:
            message = e.message if isinstance(e, tf.errors.OpError) else str(e)
            one_line = not newer or isinstance(e, tf.errors.OpError) or "\n" not in message.strip()
            if pattern not in message or not one_line:
                unclear.append((i, f"{type(e).__name__}: {message!r} lacks {pattern!r} or is not one line"))
            elif not isinstance(e, (tfliquid.TfliquidError, tf.errors.OpError)):  # raised on purpose, so tfliquid's
                unclear.append((i, f"{type(e).__name__} is not a tfliquid.TfliquidError: {message}"))
        except Exception as e:  # noqa: BLE001 - the point: any other exception is a finding
            unclear.append((i, f"{type(e).__name__}: {e}"))
    assert unclear == [], "\n".join(map(str, unclear))
