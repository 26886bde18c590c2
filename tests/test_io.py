"""tfliquid.io: throttled whole-file and ranged reads, and readers outside tfliquid drawing from the budget."""

import time

import pytest
import tensorflow as tf

import tfliquid


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    return path


def test_read_file_whole_and_ranges(data_file):
    data = data_file.read_bytes()
    assert tfliquid.io.read_file(str(data_file)).numpy() == data
    assert tfliquid.io.read_file(str(data_file), 1000, 300).numpy() == data[1000:1300]
    assert tfliquid.io.read_file(str(data_file), offset=len(data) - 5).numpy() == data[-5:]
    assert tfliquid.io.read_file(str(data_file), 7, 0).numpy() == b""
    with pytest.raises(tf.errors.OutOfRangeError, match=r"data.bin: offset 1048570: range of 10 bytes runs past"):
        tfliquid.io.read_file(str(data_file), len(data) - 6, 10)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative offset"):
        tfliquid.io.read_file(str(data_file), -1, 10)


def test_reads_and_draws_share_one_budget(data_file):
    size = data_file.stat().st_size
    tfliquid.io.set_read_bandwidth(size / 0.3)  # one file read takes 0.3 s
    try:
        before = tfliquid.io.read_stats()["bytes_read"]
        start = time.perf_counter()
        tfliquid.io.read_file(str(data_file))
        payload = tfliquid.io.draw_read_bandwidth(size, tf.constant(b"passed through"))
        elapsed = time.perf_counter() - start
        granted = tfliquid.io.read_stats()["bytes_read"] - before
    finally:
        tfliquid.io.set_read_bandwidth(None)
    assert payload.numpy() == b"passed through"
    assert granted == 2 * size
    assert elapsed >= 0.6 - 0.05  # a lower bound: the budget may not be exceeded (50 ms burst allowance)
    assert tfliquid.io.read_stats()["bytes_per_second"] == 0
    with pytest.raises(ValueError, match="at least 1"):
        tfliquid.io.set_read_bandwidth(-1)


@pytest.mark.parametrize("rate", [True, float("nan"), float("inf"), 1e-300, 0.5, -1, "1e6"])
def test_read_bandwidth_is_a_finite_rate_of_at_least_one_byte_per_second(rate):
    with pytest.raises(tfliquid.ArgumentError, match="bytes_per_second"):
        tfliquid.io.set_read_bandwidth(rate)
    assert tfliquid.io.read_stats()["bytes_per_second"] == 0
