"""Every public function given wrong types, empty, huge and negative values: a clear Python exception naming the
argument or the file, never a crash, a hang or a traceback from deep inside (the ops: test_op_input_checks.py)."""

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
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
        (lambda: tfliquid.PCRDataset(missing), FileNotFoundError, "missing is not a PCR dataset"),
        (lambda: tfliquid.PCRDataset(pcr_dataset).bytes_per_epoch(0), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.PCRDataset(pcr_dataset).bytes_per_epoch(-5), tfliquid.ArgumentError, "scan_group"),
        (lambda: tfliquid.pcr.inspect(missing), FileNotFoundError, "missing"),
        (lambda: tfliquid.pcr.convert(missing, str(tmp_path / "out")), FileNotFoundError, "missing: no such file"),
        (
            lambda: tfliquid.pcr.convert(pcr_dataset, str(tmp_path / "o"), images_per_record=2**40),
            tfliquid.ArgumentError,
            "images_per_record",
        ),
        (lambda: tfliquid.l3.convert(missing, str(tmp_path / "out")), FileNotFoundError, "missing"),
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
        (lambda: tfliquid.LiquidDataset(missing, batch_size=8), tfliquid.FormatError, "not a Liquid dataset"),
        (lambda: tfliquid.LiquidDataset(pcr_dataset, batch_size=8), tfliquid.FormatError, "it is a PCR dataset"),
        (lambda: tfliquid.liquid.convert(missing, str(tmp_path / "l"), formats="png"), FileNotFoundError, "missing"),
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
        (lambda: profiling.profile(missing, "png,raw"), FileNotFoundError, "missing"),
        (lambda: profiling.profile(pcr_dataset, "png"), tfliquid.ArgumentError, "two distinct formats"),
        (lambda: profiling.profile(pcr_dataset, "png,raw", sample=1), tfliquid.ArgumentError, "sample"),
    ]


def test_every_bad_input_is_a_clear_exception(pcr_dataset, tmp_path):
    unclear = []
    for i, (call, expected, pattern) in enumerate(_cases(pcr_dataset, tmp_path)):
        try:
            call()
            unclear.append((i, "no exception"))
        except expected as e:
            message = e.message if isinstance(e, tf.errors.OpError) else str(e)
            if pattern not in message:
                unclear.append((i, f"{type(e).__name__}: {message!r} lacks {pattern!r}"))
        except Exception as e:  # noqa: BLE001 - the point: any other exception is a finding
            unclear.append((i, f"{type(e).__name__}: {e}"))
    assert unclear == []
