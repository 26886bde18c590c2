"""The shared-directory store: processes sharing one budget, damaged and half-written files never served, the
reference codec (tfliquid/cache/item_format.py) and the C++ store reading each other's files."""

import fcntl
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.cache import item_format as cache_item


def _cache_key(path: str) -> bytes:
    """The key under which the minio_cache transform stores the item of a string key (its dtype, ":", itself)."""
    return b"string:" + path.encode()


def _dataset(paths, cache, **kwargs):
    return tf.data.Dataset.from_tensor_slices(paths).apply(
        tfliquid.minio_cache(lambda p: (p, tfliquid.io.read_file(p)), cache=cache, **kwargs)
    )


def _served(ds):
    return {p.decode(): data for p, data in ds.as_numpy_iterator()}


def _files(directory):
    """Every file under the cache directory, by relative path."""
    found = []
    for root, _, names in os.walk(directory):
        found += [os.path.relpath(os.path.join(root, n), directory) for n in names]
    return sorted(found)


def _items(directory):
    return [f for f in _files(directory) if f.startswith("items")]


def _ledger(directory):
    with open(os.path.join(directory, "LEDGER"), "rb") as f:
        return cache_item.decode_ledger(f.read())


_FILL_SCRIPT = textwrap.dedent("""
    import pathlib, sys, tensorflow as tf, tfliquid
    directory, capacity, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    cache = tfliquid.MinIOCache(capacity, directory=directory)
    ds = tf.data.Dataset.from_tensor_slices(paths).shuffle(len(paths)).apply(
        tfliquid.minio_cache(lambda p: (p, tfliquid.io.read_file(p)), cache=cache, num_parallel_calls=4))
    for epoch in range(2):
        for p, data in ds.as_numpy_iterator():
            assert data == pathlib.Path(p.decode()).read_bytes()
    print(cache.stats().epochs[1].hits)
""")


def _fill_in_processes(directory, capacity, paths, processes):
    """Runs `processes` Python processes at once, each iterating two epochs through the directory cache."""
    running = [
        subprocess.Popen(
            [sys.executable, "-c", _FILL_SCRIPT, str(directory), str(capacity), *paths],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    outputs = [p.communicate(timeout=300) for p in running]
    for process, (_, err) in zip(running, outputs):
        assert process.returncode == 0, err[-3000:]
    return [int(out.split()[-1]) for out, _ in outputs]


def test_two_processes_share_one_budget(jpeg_files, tmp_path):
    paths = jpeg_files[:120]
    directory = tmp_path / "cache"
    capacity = sum(os.path.getsize(p) for p in paths) // 2
    second_epoch_hits = _fill_in_processes(directory, capacity, paths, processes=2)
    ledger = _ledger(directory)
    item_files = _items(directory)
    sizes = [os.path.getsize(directory / f) for f in item_files]
    # One budget for both, never exceeded; the ledger is exact once nobody is writing.
    assert ledger.capacity_bytes == capacity
    assert ledger.bytes == sum(sizes) <= capacity and ledger.items == len(item_files)
    assert capacity - ledger.bytes < max(sizes)  # and it was filled
    # Both processes hit everything that was cached, whichever of them cached it.
    assert second_epoch_hits == [len(item_files)] * 2
    # Nothing but the ledger, the empty USERS and WRITERS files the processes' locks were on, and the items: no
    # temporary files.
    assert set(_files(directory)) == {"LEDGER", "USERS", "WRITERS", *item_files}
    assert os.path.getsize(directory / "USERS") == os.path.getsize(directory / "WRITERS") == 0
    # This process sees the other processes' items.
    cache = tfliquid.MinIOCache(capacity, directory=directory)
    before = tfliquid.io.read_stats()["bytes_read"]
    assert _served(_dataset(paths, cache)) == {p: pathlib.Path(p).read_bytes() for p in paths}
    assert cache.stats().epochs[0].hits == len(item_files)
    assert tfliquid.io.read_stats()["bytes_read"] - before == sum(os.path.getsize(p) for p in paths) - sum(
        len(cache_item.decode_item((directory / f).read_bytes())[1][1].item()) for f in item_files
    )
    cache.release()


def test_damaged_and_half_written_files_are_never_served(jpeg_files, tmp_path):
    paths = jpeg_files[:12]
    contents = {p: pathlib.Path(p).read_bytes() for p in paths}
    directory = tmp_path / "cache"
    with tfliquid.MinIOCache(1 << 20, directory=directory) as cache:
        _served(_dataset(paths, cache))
    items = [directory / f for f in _items(directory)]
    assert len(items) == 12
    # A flipped payload byte, a truncated file, garbage, an empty file, another key's item under this name.
    flipped = bytearray(items[0].read_bytes())
    flipped[len(flipped) // 2] ^= 0x40
    items[0].write_bytes(bytes(flipped))
    items[1].write_bytes(items[1].read_bytes()[:-100])
    items[2].write_bytes(os.urandom(3000))
    items[3].write_bytes(b"")
    items[4].write_bytes(items[5].read_bytes())
    # A writer that died mid-item: nobody holds its writer slot, its reservation is still in the ledger.
    ledger = _ledger(directory)
    (directory / "tmp" / f"{'ab' * 16}.7.0.5000.tmp").write_bytes(b"half an item")
    with open(directory / "LEDGER", "r+b") as f:
        f.write(
            cache_item.encode_ledger(cache_item.Ledger(ledger.capacity_bytes, ledger.bytes + 5000, ledger.items + 1))
        )

    with tfliquid.MinIOCache(1 << 20, directory=directory) as cache:
        assert _files(directory / "tmp") == []  # the dead writer's file is removed on open ...
        # ... and the ledger recounted from what the directory holds (the damaged files at their sizes)
        assert _ledger(directory).bytes == sum(os.path.getsize(directory / f) for f in _items(directory))
        assert _served(_dataset(paths, cache)) == contents  # every damaged item was a miss, fetched afresh
        assert cache.stats().epochs[0].hits == 7
        # The damaged files were replaced by good ones, so the next pass hits them. The intact item of another
        # key stays where it is (as with a true hash collision) and keeps its key out of the cache.
        assert _served(_dataset(paths, cache)) == contents
        assert cache.stats().epochs[1].hits == 11
    assert _ledger(directory).bytes == sum(os.path.getsize(directory / f) for f in _items(directory))


def test_reference_codec_and_the_store_read_each_other(jpeg_files, tmp_path):
    paths = jpeg_files[:5]
    directory = tmp_path / "cache"
    cache = tfliquid.MinIOCache(1 << 20, directory=directory)

    def fetch(p):
        data = tfliquid.io.read_file(p)
        return {
            "data": data,
            "pixels": tf.io.decode_jpeg(data)[:4, :5],
            "size": tf.strings.length(data),
            "scale": tf.constant([0.5, 2.0], tf.float64),
            "ok": tf.constant(True),
        }

    list(tf.data.Dataset.from_tensor_slices(paths).apply(tfliquid.minio_cache(fetch, cache=cache)))
    for p in paths:  # C++ -> reference
        data = pathlib.Path(cache_item.item_path(str(directory), _cache_key(p))).read_bytes()
        key, arrays = cache_item.decode_item(data)
        # tf.nest flattens a dict by sorted key: data, ok, pixels, scale, size
        image = tf.io.decode_jpeg(pathlib.Path(p).read_bytes()).numpy()[:4, :5]
        assert key == _cache_key(p)
        assert arrays[0].item() == pathlib.Path(p).read_bytes() and arrays[1].item() is True
        np.testing.assert_array_equal(arrays[2], image)
        assert arrays[2].dtype == np.uint8 and arrays[3].tolist() == [0.5, 2.0]
        assert arrays[4].item() == len(arrays[0].item()) and arrays[4].dtype == np.int32
        assert cache_item.encode_item(key, arrays) == data  # and back, byte for byte
    # Reference -> C++: an item written by the reference for a new key is served as a hit.
    new_key = jpeg_files[5]
    arrays = [
        np.array(b"not the file", dtype=object),
        np.array(False),
        np.zeros((4, 5, 3), np.uint8),
        np.array([1.0, 1.0]),
        np.array(12, np.int32),
    ]
    path = cache_item.item_path(str(directory), _cache_key(new_key))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(cache_item.encode_item(_cache_key(new_key), arrays))
    served = list(tf.data.Dataset.from_tensors(new_key).apply(tfliquid.minio_cache(fetch, cache=cache)))[0]
    assert served["data"].numpy() == b"not the file" and int(served["size"]) == 12
    cache.release()


def test_reference_codec_rejects_every_damage(jpeg_files):
    good = cache_item.encode_item(b"key", [np.arange(6, dtype=np.int16).reshape(2, 3), np.array([b"a", b"bc"])])
    key, arrays = cache_item.decode_item(good)
    assert key == b"key" and arrays[0].tolist() == [[0, 1, 2], [3, 4, 5]] and arrays[1].tolist() == [b"a", b"bc"]
    for cut in (0, 10, len(good) - 1):
        with pytest.raises(cache_item.CacheFormatError):
            cache_item.decode_item(good[:cut])
    for position in range(len(good)):
        damaged = bytearray(good)
        damaged[position] ^= 1
        with pytest.raises(cache_item.CacheFormatError):
            cache_item.decode_item(bytes(damaged))


def test_capacity_is_fixed_by_the_directory(tmp_path):
    directory = tmp_path / "cache"
    tfliquid.MinIOCache(1000, directory=directory).release()
    with pytest.raises(tfliquid.ArgumentError, match="was created with capacity_bytes=1000"):
        tfliquid.MinIOCache(2000, directory=directory)
    (directory / "LEDGER").write_bytes(b"garbage")  # a damaged ledger is rebuilt from the items
    cache = tfliquid.MinIOCache(1000, directory=directory)
    assert cache.stats().bytes == 0 and _ledger(directory).capacity_bytes == 1000
    cache.release()


def test_mutated_items_with_valid_checksums_never_crash_the_store(tmp_path):
    """Structure-aware fuzzing of the C++ item decoder: random bytes changed, then the CRC fixed, so the length,
    count, rank and dims checks are what stands between a damaged item and the allocator."""
    from tfliquid._common.crc32c import crc32c
    from tfliquid.cache import cached

    directory = tmp_path / "cache"
    cache = tfliquid.MinIOCache(1 << 20, directory=directory)
    key = b"fuzzed"
    good = cache_item.encode_item(
        key, [np.array([b"ab", b"", b"cde"], dtype=object), np.arange(12, dtype=np.int32).reshape(3, 4)]
    )
    path = cache_item.item_path(str(directory), key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rng = np.random.default_rng(0)
    outcomes = {"hit": 0, "miss": 0, "dtype error": 0}
    # What a miss yields: tensors of the item's dtypes and any shape, so that a hit of any shape is served.
    fallback = tf.data.Dataset.from_tensors((tf.constant([b""]), tf.zeros([1], tf.int32))).map(
        lambda strings, ints: tuple(tf.compat.v1.placeholder_with_default(t, shape=None) for t in (strings, ints))
    )
    for _ in range(1500):
        body = bytearray(good[:-4])
        for _ in range(int(rng.integers(1, 4))):
            position = int(rng.integers(8, len(body)))  # past the magic
            body[position] = int(rng.integers(0, 256)) if rng.random() < 0.7 else 0xFF
        if rng.random() < 0.2:
            body = body[: int(rng.integers(16, len(body)))]
        with open(path, "wb") as f:
            f.write(bytes(body) + int.to_bytes(crc32c(bytes(body)), 4, "little"))
        try:
            hit, values = cached(fallback, key.decode(), -1, cache, 0, with_hit=True).get_single_element()
        except tf.errors.InvalidArgumentError:
            outcomes["dtype error"] += 1
            continue
        if bool(hit):
            outcomes["hit"] += 1
            try:  # a hit must be exactly what the reference decodes
                _, arrays = cache_item.decode_item(bytes(body) + int.to_bytes(crc32c(bytes(body)), 4, "little"))
            except cache_item.CacheFormatError as e:
                raise AssertionError(f"the store served an item the reference rejects: {e}") from None
            assert values[0].numpy().tolist() == arrays[0].tolist()
            np.testing.assert_array_equal(values[1].numpy(), arrays[1])
        else:
            outcomes["miss"] += 1
    assert outcomes["miss"] > 500 and outcomes["hit"] > 0  # both paths exercised
    cache.release()


@pytest.mark.parametrize("policy", ["minio", "lru"])
def test_a_directory_deleted_while_in_use_is_recreated_and_filled_again(jpeg_files, tmp_path, policy):
    """A tmp cleaner or an operator emptying /dev/shm: the cache recreates the directory empty, counts nothing of
    what was lost, and admits and hits again; a new MinIOCache on the path recreates it at once."""
    directory, paths = tmp_path / "cache", jpeg_files[:6]
    cache = tfliquid.MinIOCache(1 << 30, directory=str(directory), name=f"deleted-{policy}", policy=policy)
    ds = _dataset(paths, cache)
    expected = {p: pathlib.Path(p).read_bytes() for p in paths}
    assert _served(ds) == expected and cache.stats().items == 6
    shutil.rmtree(directory)
    assert cache.stats().items == 0 and directory.is_dir()  # what was cached is gone, and the cache says so
    assert _served(ds) == expected and len(_items(directory)) == 6  # admitted again
    assert _served(ds) == expected and [e.hits for e in cache.stats().epochs] == [0, 0, 6]
    shutil.rmtree(directory)
    tfliquid.MinIOCache(1 << 30, directory=str(directory), name=f"deleted-{policy}", policy=policy)
    assert directory.is_dir() and _ledger(directory).items == 0


def test_a_deleted_directory_is_logged_as_it_is_recreated(tmp_path):
    script = (
        "import shutil, sys, tfliquid\n"
        "cache = tfliquid.MinIOCache(1 << 20, directory=sys.argv[1])\n"
        "shutil.rmtree(sys.argv[1])\n"
        "print(cache.stats().items)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},  # the tests hide TensorFlow's warnings; users see them
    )
    assert result.returncode == 0 and result.stdout == "0\n", result.stderr[-2000:]
    assert f"the directory {tmp_path / 'cache'} was deleted while in use; recreating it" in result.stderr


@pytest.mark.slow
def test_a_directory_that_cannot_be_used_is_a_one_line_tfliquid_error(tmp_path):
    """A directory another process uses under settings that exclude this one, and one that cannot be created: a
    CacheDirectoryError (a TfliquidError) of one line naming the directory and why, not TensorFlow's op error."""
    directory = tmp_path / "cache"
    holder = tfliquid.MinIOCache(1 << 20, directory=directory)  # this process uses it under minio
    code = f"import tfliquid\ntfliquid.MinIOCache({1 << 20}, directory={str(directory)!r}, policy='lru')\n"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    last = other.stderr.strip().splitlines()[-1]
    assert last.startswith("tfliquid._common.errors.CacheDirectoryError: MinIO cache directory "), last
    assert f"{directory} is in use by another process" in last and "{{function_node" not in last
    holder.release()
    (tmp_path / "a-file").write_bytes(b"")
    under_a_file = tmp_path / "a-file" / "cache"
    with pytest.raises(tfliquid.TfliquidError) as raised:
        tfliquid.MinIOCache(1 << 20, directory=under_a_file)
    assert isinstance(raised.value, tfliquid.cache.CacheDirectoryError)
    assert str(raised.value) == f"MinIO cache: cannot create {under_a_file}: Not a directory"


_WRITER_SCRIPT = textwrap.dedent("""
    import sys, tensorflow as tf, tfliquid
    cache = tfliquid.MinIOCache(int(sys.argv[2]), directory=sys.argv[1])
    items = tf.data.Dataset.range(1000).apply(
        tfliquid.minio_cache(lambda k: tf.fill([8 << 20], tf.cast(k % 251, tf.uint8)), cache=cache,
                             num_parallel_calls=1))
    for _ in items:
        pass
""")


def _writer_stopped_mid_item(directory, capacity, prefix=()):
    """A process admitting 8 MB items into the directory, stopped (SIGSTOP to its process group) while it writes
    one: it holds a reservation whose tmp file is in tmp/. Returns the process and that file."""
    writer = subprocess.Popen(
        [*prefix, sys.executable, "-c", _WRITER_SCRIPT, str(directory), str(capacity)], start_new_session=True
    )
    while True:
        pending = list((directory / "tmp").glob("*.tmp")) if (directory / "tmp").is_dir() else []
        if pending:
            os.killpg(writer.pid, signal.SIGSTOP)
            pending = list((directory / "tmp").glob("*.tmp"))
            if pending:
                return writer, pending[0]
            os.killpg(writer.pid, signal.SIGCONT)
        assert writer.poll() is None, "the writer ended before it was stopped"


def _kill(writer, directory, pending):
    """SIGKILLs the writer's process group and waits until the kernel has dropped the lock on its writer slot (the
    slot names its tmp file): a process's files close only after the last of its threads exits."""
    os.killpg(writer.pid, signal.SIGKILL)
    writer.wait()
    slot = int(pending.name.split(".")[1])
    with open(directory / "WRITERS", "r+b") as writers:
        while True:
            try:
                fcntl.lockf(writers, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
                return
            except OSError:
                time.sleep(0.01)


def _disk_totals(directory):
    """(bytes, items) the directory holds: its items, and the reservations its tmp files name."""
    sizes = [os.path.getsize(directory / f) for f in _items(directory)]
    reserved = [int(p.name.split(".")[3]) for p in (directory / "tmp").glob("*.tmp")]
    return sum(sizes) + sum(reserved), len(sizes) + len(reserved)


@pytest.mark.slow
def test_a_writer_killed_after_its_reservation_gives_it_back_at_the_next_open(tmp_path):
    """A writer killed after it reserved an item's bytes and before its tmp file holds it (here: its tmp file
    removed, as by a tmp cleaner, and the writer killed): the next open recounts, and the ledger is the disk."""
    directory, capacity = tmp_path / "cache", 1 << 30
    writer, pending = _writer_stopped_mid_item(directory, capacity)
    pending.unlink()
    _kill(writer, directory, pending)
    assert _ledger(directory).bytes > _disk_totals(directory)[0]  # the reservation outlived its writer
    tfliquid.MinIOCache(capacity, directory=directory).release()
    ledger = _ledger(directory)
    assert (ledger.bytes, ledger.items) == _disk_totals(directory) and _files(directory / "tmp") == []


@pytest.mark.slow
def test_a_live_writer_in_another_pid_namespace_keeps_its_reservation(tmp_path):
    """A writer in another PID namespace (a container): its pid means nothing here. An open from here must judge
    it alive (it holds its writer slot's lock) and keep its tmp file and its reservation in the ledger."""
    if subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare --pid --fork is not available (it needs root)")
    directory, capacity = tmp_path / "cache", 1 << 30
    # Its pid there, past 300, is one no process here need have.
    burn_pids = ["unshare", "--pid", "--fork", "bash", "-c", 'for i in $(seq 300); do /bin/true; done; "$@"', "-"]
    writer, pending = _writer_stopped_mid_item(directory, capacity, prefix=burn_pids)
    try:
        tfliquid.MinIOCache(capacity, directory=directory, name="another-process").release()
        assert pending.exists()
        ledger = _ledger(directory)
        assert (ledger.bytes, ledger.items) == _disk_totals(directory)
    finally:
        _kill(writer, directory, pending)
    tfliquid.MinIOCache(capacity, directory=directory, name="after-the-writer").release()
    ledger = _ledger(directory)
    assert (ledger.bytes, ledger.items) == _disk_totals(directory) and _files(directory / "tmp") == []
