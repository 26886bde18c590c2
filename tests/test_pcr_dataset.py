"""PCRDataset and its C++ op on a real converted dataset: every scan group, corrupt inputs, tf.Variable scan
groups, checkpoints, tf.data service and the read throttle."""

import os
import pathlib
import shutil
import time

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid._lib import crc32c_fast
from tfliquid.cache import item_format as cache_item
from tfliquid.jpeg import scans as jpeg_scans
from tfliquid.pcr import format as pcr_format
from tfliquid.records import format as records_format


@pytest.fixture(scope="module")
def dataset(photo_folder, tmp_path_factory):
    dst = tmp_path_factory.mktemp("pcr") / "photos"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=6, seed=1, progress=False)
    return dst


@pytest.fixture
def dataset_copy(dataset, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    return copy


def _keyed(ds):
    return {bytes(x["key"]): x for x in ds.as_numpy_iterator()}


def test_every_scan_group_matches_the_reference_decoder(dataset):
    index = pcr_format.read_index(str(dataset))
    assert index.num_scan_groups == 10
    records = {r.path: (dataset / r.path).read_bytes() for r in index.records}
    for g in range(1, 11):
        expected = {}
        for data in records.values():
            for image in pcr_format.decode_record(data, g):
                expected[image.key] = (image.data, image.label)
        got = _keyed(tfliquid.PCRDataset(str(dataset), scan_group=g, decode=False, with_keys=True))
        assert {k: (v["image"], v["label"]) for k, v in got.items()} == expected


def test_full_fidelity_is_pixel_identical_to_the_source(dataset, photo_folder):
    got = _keyed(tfliquid.PCRDataset(str(dataset), with_keys=True))
    assert len(got) == 16
    jpegs = [k for k in got if k.endswith(b".jpg")]
    assert len(jpegs) == 14
    for key in jpegs:
        source = tf.io.decode_jpeg((photo_folder / key.decode()).read_bytes(), channels=3).numpy()
        np.testing.assert_array_equal(got[key]["image"], source, err_msg=key.decode())
    labels = {k.split(b"/")[0]: int(v["label"]) for k, v in got.items()}
    assert labels == {b"animals": 0, b"grey": 1, b"things": 2}


def test_low_scan_groups_are_smaller_and_still_decode(dataset):
    sizes = []
    for g in (1, 2, 5, None):
        ds = tfliquid.PCRDataset(str(dataset), scan_group=g, decode=False, with_keys=True)
        images = _keyed(ds)
        sizes.append(sum(len(x["image"]) for x in images.values()))
        assert ds.bytes_per_epoch() == sum(
            r.prefix_ends[min(g or 10, len(r.prefix_ends)) - 1] for r in pcr_format.read_index(str(dataset)).records
        )
        for x in images.values():
            assert tf.io.decode_jpeg(x["image"], channels=3).shape[-1] == 3
    assert sizes == sorted(sizes) and sizes[0] < 0.25 * sizes[-1]


def test_grey_images_are_full_fidelity_from_their_last_scan(dataset):
    at6 = _keyed(tfliquid.PCRDataset(str(dataset), scan_group=6, decode=False, with_keys=True))
    full = _keyed(tfliquid.PCRDataset(str(dataset), decode=False, with_keys=True))
    assert at6[b"grey/grey.jpg"]["image"] == full[b"grey/grey.jpg"]["image"]  # 6 scans: empty partials 7-10
    assert at6[b"animals/china.jpg"]["image"] != full[b"animals/china.jpg"]["image"]


def test_shuffle_is_seeded_and_changes_every_epoch(dataset):
    ds = tfliquid.PCRDataset(str(dataset), decode=False, seed=5, with_keys=True, num_parallel_reads=2)
    epoch1 = [bytes(x["key"]) for x in ds.as_numpy_iterator()]
    epoch2 = [bytes(x["key"]) for x in ds.as_numpy_iterator()]
    again = tfliquid.PCRDataset(str(dataset), decode=False, seed=5, with_keys=True, num_parallel_reads=2)
    assert sorted(epoch1) == sorted(epoch2) and epoch1 != epoch2
    assert [bytes(x["key"]) for x in again.as_numpy_iterator()] == epoch1
    ordered = [
        bytes(x["key"])
        for x in tfliquid.PCRDataset(str(dataset), decode=False, shuffle=False, with_keys=True).as_numpy_iterator()
    ]
    assert ordered == [
        bytes(x["key"])
        for x in tfliquid.PCRDataset(str(dataset), decode=False, shuffle=False, with_keys=True).as_numpy_iterator()
    ]


def test_scan_group_variable_applies_without_rebuilding(dataset):
    group = tf.Variable(1, dtype=tf.int64)
    ds = tfliquid.PCRDataset(str(dataset), scan_group=group, decode=False, with_keys=True)
    low = _keyed(ds)
    group.assign(10)
    full = _keyed(ds)
    assert low.keys() == full.keys()
    assert sum(len(x["image"]) for x in low.values()) < 0.25 * sum(len(x["image"]) for x in full.values())
    for out_of_range in (0, 11):  # an int is refused when the dataset is built, a variable when a record opens
        group.assign(out_of_range)
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=f"the scan group variable holds {out_of_range}; this dataset has scan groups 1..10",
        ):
            _keyed(ds)


def test_parameters_are_validated(dataset, tmp_path):
    with pytest.raises(ValueError, match=r"scan_group must be an int in 1..10"):
        tfliquid.PCRDataset(str(dataset), scan_group=11)
    with pytest.raises(TypeError, match="scan_group"):
        tfliquid.PCRDataset(str(dataset), scan_group=2.5)
    for variable in (tf.Variable(1.0), tf.Variable(1, dtype=tf.uint8), tf.Variable([1, 2], dtype=tf.int64)):
        with pytest.raises(TypeError, match="an int32 or int64 scalar"):
            tfliquid.PCRDataset(str(dataset), scan_group=variable)
    with pytest.raises(FileNotFoundError, match="not a PCR dataset"):
        tfliquid.PCRDataset(str(tmp_path))


def _first_record(path):
    index = pcr_format.read_index(str(path))
    return path / index.records[0].path, index.records[0]


def _read_all(path):
    return list(tfliquid.PCRDataset(str(path), decode=False, shuffle=False).as_numpy_iterator())


def test_flipped_payload_byte_is_a_crc_error_naming_file_and_offset(dataset_copy):
    record, entry = _first_record(dataset_copy)
    data = bytearray(record.read_bytes())
    data[entry.prefix_ends[2] + 10] ^= 0x01  # inside scan group 4
    record.write_bytes(bytes(data))
    assert len(list(tfliquid.PCRDataset(str(dataset_copy), scan_group=3, decode=False))) == 16  # not read
    with pytest.raises(
        tf.errors.DataLossError, match=rf"pcr-00000.pcr: offset {entry.prefix_ends[2]}: group 4 CRC32C mismatch"
    ):
        _read_all(dataset_copy)


def test_truncated_record(dataset_copy):
    record, entry = _first_record(dataset_copy)
    record.write_bytes(record.read_bytes()[: entry.prefix_ends[1] + 3])
    with pytest.raises(tf.errors.DataLossError, match=r"pcr-00000.pcr: offset \d+: file is \d+ bytes but the index"):
        _read_all(dataset_copy)


def test_bad_magic(dataset_copy):
    record, _ = _first_record(dataset_copy)
    record.write_bytes(b"GIF89a\x00\x00" + record.read_bytes()[8:])
    with pytest.raises(tf.errors.DataLossError, match="pcr-00000.pcr: offset 0: bad magic"):
        _read_all(dataset_copy)


def test_header_length_past_end_of_file(dataset_copy):
    record, _ = _first_record(dataset_copy)
    data = bytearray(record.read_bytes())
    data[12:16] = (200 << 20).to_bytes(4, "little")
    record.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=r"pcr-00000.pcr: offset 12: header length 209715200 runs past"):
        _read_all(dataset_copy)


def test_corrupt_index(dataset_copy):
    (dataset_copy / "index.pcrindex").write_bytes(b"not an index")
    with pytest.raises(pcr_format.PCRFormatError, match="index.pcrindex: offset 0: bad magic"):
        tfliquid.PCRDataset(str(dataset_copy))


def test_an_image_that_fails_to_decode_is_named_by_record_key_and_byte_offset(dataset_copy):
    # A record whose CRCs are right but whose first image's last scan was cut short when it was written.
    index = pcr_format.read_index(str(dataset_copy))
    entry = index.records[0]
    record = dataset_copy / entry.path
    items = pcr_format.decode_record(record.read_bytes())
    parts = [jpeg_scans.split_partials(item.data) for item in items]
    parts[0][-1] = parts[0][-1][: len(parts[0][-1]) // 2]
    written = records_format.encode_record(
        parts, [item.label for item in items], [item.key for item in items], crc=crc32c_fast
    )
    record.write_bytes(written.data)
    entry.prefix_ends[:] = written.group_ends
    entry.header_crc32c = written.header_crc32c
    pcr_format.write_index(str(dataset_copy), index)
    last_group = len(written.group_ends)  # the group read: the record's last
    where = rf"{record}: image {items[0].key.decode()} at scan group {last_group}: corrupt JPEG: .* \(at byte \d+\)"
    for decode_size in (None, (32, 32)):
        with pytest.raises(tf.errors.InvalidArgumentError, match=where):
            list(tfliquid.PCRDataset(str(dataset_copy), shuffle=False, decode_size=decode_size))


def test_records_replaced_by_another_conversion_are_refused_at_every_scan_group(dataset, photo_folder, tmp_path):
    # What a killed reconversion with another seed leaves: the old index beside the new records.
    replaced = tmp_path / "replaced"
    tfliquid.pcr.convert(str(photo_folder), str(replaced), images_per_record=6, seed=2, progress=False)
    shutil.copy(dataset / pcr_format.INDEX_FILENAME, replaced / pcr_format.INDEX_FILENAME)
    index = pcr_format.read_index(str(replaced))
    assert all(r.HasField("header_crc32c") for r in index.records)
    for g in range(1, index.num_scan_groups + 1):
        # (a record file shorter than the index says is refused by its read, before its bytes are looked at)
        refusal = r"pcr-0000\d.pcr: offset \d+: (header CRC32C .* index lists|file is \d+ bytes but the index)"
        with pytest.raises(tf.errors.DataLossError, match=refusal):
            list(tfliquid.PCRDataset(str(replaced), scan_group=g, decode=False, shuffle=False))


def test_a_read_that_does_not_end_where_a_group_ends_is_refused(dataset):
    # An index without identities (written before they were recorded) still cannot cut another record anywhere.
    record, entry = _first_record(dataset)
    ends = list(entry.prefix_ends)
    one_byte_longer = [end + 1 for end in ends[:-1]] + ends[-1:]
    for g in range(1, len(ends)):
        with pytest.raises(
            tf.errors.DataLossError,
            match=rf"pcr-00000.pcr: offset {ends[g - 1]}: the {ends[g - 1] + 1} bytes read are neither this record",
        ):
            list(tfliquid.pcr.PCRRecordDataset(str(record), one_byte_longer, g))


def test_checkpoint_restore_resumes_mid_epoch(dataset, tmp_path):
    def make():
        return tfliquid.PCRDataset(str(dataset), decode=False, seed=11, with_keys=True, num_parallel_reads=2)

    iterator = iter(make())
    head = [next(iterator)["key"].numpy() for _ in range(7)]  # mid-record: records hold 6 images
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    tail = [x["key"].numpy() for x in iterator]
    assert sorted(head + tail) == sorted(_keyed(make()))

    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert [x["key"].numpy() for x in restored] == tail


def test_checkpoint_with_a_scan_group_variable_restores_the_position_and_reads_its_current_value(dataset, tmp_path):
    group = tf.Variable(10, dtype=tf.int64)

    def make():  # one record at a time and no read-ahead, so that which records the save finds open is fixed
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        return tfliquid.PCRDataset(
            str(dataset), scan_group=group, decode=False, seed=11, with_keys=True, num_parallel_reads=1
        ).with_options(options)

    iterator = iter(make())
    head = [next(iterator)["key"].numpy() for _ in range(7)]
    saved = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))  # the variable is not saved
    tail = [x["key"].numpy() for x in iterator]
    group.assign(1)
    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).restore(saved)
    rest = [{name: value.numpy() for name, value in x.items()} for x in restored]
    assert [x["key"] for x in rest] == tail and sorted(head + tail) == sorted(_keyed(make()))
    # The record being read at the save is finished at the fidelity it was opened with, 10; the records opened
    # after the restore read the variable's value then, 1.
    full = _keyed(tfliquid.PCRDataset(str(dataset), decode=False, with_keys=True))
    at_group_1 = [len(x["image"]) < len(full[x["key"]]["image"]) for x in rest]
    opened_after = at_group_1.index(True)
    assert opened_after > 0 and all(at_group_1[opened_after:])


def test_tf_data_service_refuses_a_scan_group_variable_instead_of_freezing_it(dataset):
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(  # noqa: F841 - serves while referenced
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
    )
    group = tf.Variable(2, dtype=tf.int64)
    distributed = tfliquid.PCRDataset(str(dataset), scan_group=group, decode=False).apply(
        tf.data.experimental.service.distribute("parallel_epochs", dispatcher.target)
    )
    with pytest.raises(tf.errors.FailedPreconditionError, match="only the process that built the dataset can read"):
        list(distributed)


def test_its_cardinality_is_its_images_declared(dataset):
    ds = tfliquid.PCRDataset(str(dataset), seed=0)
    assert ds.cardinality() == len(ds) == ds.num_images == len(list(ds)) == 16
    assert ds.batch(5).cardinality() == 4 and ds.repeat(2).cardinality() == 32


def test_runs_under_tf_data_service_with_two_workers(dataset):
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [
        tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(dispatcher_address=address))
        for _ in range(2)
    ]
    local = tfliquid.PCRDataset(str(dataset), scan_group=2, decode=False, shuffle=False, with_keys=True)
    distributed = local.apply(
        tf.data.experimental.service.distribute(
            processing_mode=tf.data.experimental.service.ShardingPolicy.DYNAMIC, service=dispatcher.target
        )
    )
    got = [(bytes(x["key"]), bytes(x["image"])) for x in distributed.as_numpy_iterator()]
    # each image once: each worker's copy declares all the images and yields its splits' (no assert_cardinality)
    assert sorted(got) == sorted((k, v["image"]) for k, v in _keyed(local).items())
    assert dispatcher._num_workers() == len(workers) == 2  # both registered and shared the splits


def test_the_read_throttle_applies_to_every_reader(dataset):
    size = sum(r.prefix_ends[-1] for r in pcr_format.read_index(str(dataset)).records)
    before = tfliquid.io.read_stats()["bytes_read"]
    rate = size / 0.5  # the whole dataset in 0.5 s
    tfliquid.io.set_read_bandwidth(rate)
    start = time.perf_counter()
    try:
        _ = list(tfliquid.PCRDataset(str(dataset), decode=False).as_numpy_iterator())
        elapsed = time.perf_counter() - start
        assert tfliquid.io.read_stats()["bytes_per_second"] == pytest.approx(rate)
        record = str(dataset / pcr_format.read_index(str(dataset)).records[0].path)
        start_file = time.perf_counter()
        contents = tfliquid.io.read_file(record)
        file_elapsed = time.perf_counter() - start_file
    finally:
        tfliquid.io.set_read_bandwidth(None)
    assert tfliquid.io.read_stats()["bytes_read"] - before == size + len(contents.numpy())
    # Lower bounds only: a throttle may not deliver faster than its rate (minus its 50 ms burst allowance).
    assert elapsed >= 0.5 - 0.05
    assert file_elapsed >= len(contents.numpy()) / rate - 0.05
    assert contents.numpy() == pathlib.Path(record).read_bytes()
    with pytest.raises(tf.errors.NotFoundError, match="missing.pcr"):
        tfliquid.io.read_file(str(dataset / "missing.pcr"))


def test_minio_cache_of_record_prefixes(dataset):
    index = pcr_format.read_index(str(dataset))
    group2_bytes = sum(r.prefix_ends[1] for r in index.records)
    # Room for about half of the records' scan-group-2 prefixes.
    cache = tfliquid.MinIOCache(group2_bytes // 2 + 200 * len(index.records) // 2)
    scan_group = tf.Variable(2, dtype=tf.int64)
    cached = tfliquid.PCRDataset(str(dataset), scan_group=scan_group, decode=False, with_keys=True, cache=cache)
    uncached = _keyed(tfliquid.PCRDataset(str(dataset), scan_group=2, decode=False, with_keys=True))
    read_per_epoch = []
    for _ in range(3):
        before = tfliquid.io.read_stats()["bytes_read"]
        got = _keyed(cached)
        read_per_epoch.append(tfliquid.io.read_stats()["bytes_read"] - before)
        assert {k: bytes(v["image"]) for k, v in got.items()} == {k: bytes(v["image"]) for k, v in uncached.items()}
    stats = cache.stats()
    assert read_per_epoch[0] == group2_bytes and 0 < stats.items < len(index.records)
    assert [e.hits for e in stats.epochs] == [0, stats.items, stats.items]
    assert read_per_epoch[1] == read_per_epoch[2] < group2_bytes  # only the uncached records are read
    assert stats.bytes <= cache.capacity_bytes
    assert cached.minio_cache is cache and _keyed(cached.cache()).keys() == uncached.keys()  # .cache(): tf.data's
    scan_group.assign(3)  # another fidelity is another prefix: misses, read from storage
    _keyed(cached)
    assert stats.epochs[-1].hits == stats.items and cache.stats().epochs[-1].hits == 0
    cache.release()
    with pytest.raises(TypeError, match="MinIOCache"):
        tfliquid.PCRDataset(str(dataset), cache=1 << 20)


def test_record_prefixes_are_cached_under_keys_no_minio_cache_key_can_be(dataset, tmp_path):
    directory = tmp_path / "cache"
    with tfliquid.MinIOCache(1 << 30, directory=directory) as cache:
        list(tfliquid.PCRDataset(str(dataset), scan_group=2, decode=False, cache=cache))
    stored = {cache_item.decode_item(item.read_bytes())[0].decode() for item in (directory / "items").rglob("*.item")}
    records = pcr_format.read_index(str(dataset)).records
    assert stored == {
        f"record:{os.path.join(str(dataset), r.path)}#bytes={pcr_format.prefix_end(r.prefix_ends, 2)}"
        f"#header={r.header_crc32c:010d}"
        for r in records
    }


def test_every_bit_flip_of_the_index_is_an_error_naming_it(dataset_copy):
    path = dataset_copy / pcr_format.INDEX_FILENAME
    data = path.read_bytes()
    silent = []
    for bit in range(8 * len(data)):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(flipped))
        try:
            pcr_format.read_index(str(dataset_copy))
            silent.append(bit)
        except tfliquid.FormatError as e:
            assert str(e).startswith(str(path)), e
    assert silent == []


def test_a_version_1_index_still_reads(dataset, dataset_copy):
    index = pcr_format.read_index(str(dataset))
    (dataset_copy / pcr_format.INDEX_FILENAME).write_bytes(pcr_format.INDEX_MAGIC + index.SerializeToString())
    assert pcr_format.read_index(str(dataset_copy)) == index
    assert (
        _keyed(tfliquid.PCRDataset(str(dataset_copy), decode=False, with_keys=True)).keys()
        == _keyed(tfliquid.PCRDataset(str(dataset), decode=False, with_keys=True)).keys()
    )


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.pcr", "records/../../outside.pcr", ""])
def test_an_index_may_not_point_outside_its_dataset(dataset, dataset_copy, path):
    index = pcr_format.read_index(str(dataset))
    index.records[0].path = path
    pcr_format.write_index(str(dataset_copy), index)
    with pytest.raises(tfliquid.FormatError, match="its path leaves the dataset directory"):
        tfliquid.PCRDataset(str(dataset_copy))


def test_inspect_of_a_record_file_says_what_to_inspect(dataset):
    record = next((dataset / "records").glob("*.pcr"))
    with pytest.raises(tfliquid.FormatError, match="is a file; a PCR dataset is the directory"):
        tfliquid.pcr.inspect(str(record))
