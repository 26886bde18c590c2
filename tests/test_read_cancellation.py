"""Throttled reads end with their pipeline: dropping an iterator, or interrupting the program, does not wait out
the reads in flight, and the bytes they did not read are not counted (tfliquid.io.read_file and PCRDataset under
tfliquid.io.set_read_bandwidth)."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import tensorflow as tf

import tfliquid
from tfliquid.pcr import format as pcr_format

SOURCES = ["read_file", "pcr"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """16 files of 2,000 bytes."""
    root = tmp_path_factory.mktemp("files")
    paths = [root / f"{i:02d}.bin" for i in range(16)]
    for path in paths:
        path.write_bytes(os.urandom(2000))
    return [str(p) for p in paths]


@pytest.fixture(scope="module")
def pcr_dataset(photo_folder, tmp_path_factory):
    """The 16 photos, one per record."""
    dst = tmp_path_factory.mktemp("pcr") / "photos"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=1, seed=1, progress=False)
    return str(dst)


def throttled_reads(source: str, location) -> tf.data.Dataset:
    """Every read of `source` ("read_file": `location` is a list of files; "pcr": a PCR dataset, its records) in
    flight as soon as an iterator is made, yielding in whichever order they finish."""
    if source == "read_file":
        ds = tf.data.Dataset.from_tensor_slices(location).map(tfliquid.io.read_file, num_parallel_calls=len(location))
    else:
        num_records = len(pcr_format.read_index(location).records)
        ds = tfliquid.PCRDataset(location, decode=False, num_parallel_reads=num_records)
    options = tf.data.Options()
    options.experimental_warm_start = True  # start reading when the iterator is made, not at its first element
    options.deterministic = False
    return ds.with_options(options)


def read_sizes(source: str, location) -> list[int]:
    """The bytes of each read that throttled_reads(source, location) makes."""
    if source == "read_file":
        return [os.path.getsize(p) for p in location]
    return [r.prefix_ends[-1] for r in pcr_format.read_index(location).records]


@pytest.fixture
def location(source, request):
    return request.getfixturevalue("files" if source == "read_file" else "pcr_dataset")


@pytest.mark.parametrize("source", SOURCES)
def test_dropping_an_iterator_cancels_its_throttled_reads(source, location):
    sizes = read_sizes(source, location)
    rate = min(sizes) / 10  # every read takes at least 10 s
    tfliquid.io.set_read_bandwidth(rate)
    try:
        before = tfliquid.io.read_stats()["bytes_read"]
        iterators = [iter(throttled_reads(source, location))]  # the one reference, which a thread drops
        time.sleep(1)  # every read is waiting for the throttle now

        def drop():
            iterators.clear()
            gc.collect()

        dropper = threading.Thread(target=drop)
        start = time.perf_counter()
        dropper.start()
        dropper.join(timeout=sum(sizes) / rate + 30)  # the time the reads would have taken, and more
        drop_seconds = time.perf_counter() - start
        assert not dropper.is_alive()
        assert drop_seconds < 3, f"dropping the iterator took {drop_seconds:.1f} s: it waited for its reads"
        assert tfliquid.io.read_stats()["bytes_read"] == before  # the cancelled reads count as nothing read
        # ... and they leave no reservation behind: a read of 0.1 s at the same rate does not wait for them.
        start = time.perf_counter()
        tfliquid.io.draw_read_bandwidth(int(rate / 10), tf.constant(0))
        assert time.perf_counter() - start < 3
    finally:
        tfliquid.io.set_read_bandwidth(None)


_INTERRUPTED_WHILE_READING = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import tfliquid
    from test_read_cancellation import throttled_reads
    rate, pcr_dataset, files = float(sys.argv[2]), sys.argv[3], sys.argv[4:]
    tfliquid.io.set_read_bandwidth(rate)
    iterators = [iter(throttled_reads("read_file", files)), iter(throttled_reads("pcr", pcr_dataset))]
    print("reading", flush=True)
    time.sleep(600)  # interrupted here, with every read of both in flight
""")


def _interruptible():
    """In the child: SIGINT back to its default. A shell runs a background job with SIGINT ignored, and Python then
    installs no KeyboardInterrupt handler: CI started that way would not be interrupted at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_an_interrupted_program_exits_without_waiting_for_its_throttled_reads(files, pcr_dataset):
    """One program with both kinds of throttled reads in flight, tfliquid.io.read_file's and PCRDataset's: either
    kind waited out would keep it running far past the deadline."""
    rate = 1000  # 1 KB/s: 32 s for the files, minutes for the records
    in_flight_seconds = {
        source: sum(read_sizes(source, location)) / rate
        for source, location in (("read_file", files), ("pcr", pcr_dataset))
    }
    assert min(in_flight_seconds.values()) > 30
    process = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_WHILE_READING, os.path.dirname(__file__), str(rate), pcr_dataset, *files],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    try:
        assert process.stdout.readline() == "reading\n", process.communicate()[1][-3000:]
        time.sleep(0.5)  # every read is waiting for the throttle now
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"still running 15 s after SIGINT: waiting out its reads takes {sum(in_flight_seconds.values()):.0f} s"
            )
    finally:
        process.kill()
    assert process.returncode != 0 and "KeyboardInterrupt" in err, err[-3000:]
