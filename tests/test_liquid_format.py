"""Liquid's reference implementation (docs/formats/liquid.md): exact counts, the seeded assignment, the batch
composition, raw items and the manifest."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfliquid._common.errors import ArgumentError, PathError
from tfliquid._proto import liquid_pb2
from tfliquid.liquid import format as liquid_format
from tfliquid.liquid.format import LiquidFormatError


def _with_a_positive(low: int, high: int, max_size: int):
    """Lists of integers in low..high, at least one of them positive, in any order: drawn directly, not filtered
    (a filter can fail Hypothesis' filter_too_much check)."""
    lists = st.tuples(st.integers(max(low, 1), high), st.lists(st.integers(low, high), max_size=max_size - 1))
    return lists.flatmap(lambda t: st.permutations([t[0], *t[1]]))


@given(st.integers(0, 5000), _with_a_positive(0, 20, 4))
def test_counts_are_exact_and_within_one_of_the_share(num_images, weights):
    counts = liquid_format.counts(num_images, weights)
    assert sum(counts) == num_images
    for count, weight in zip(counts, weights):
        assert abs(count - num_images * weight / sum(weights)) < 1


def test_counts_of_the_issue_example_are_exact():
    assert liquid_format.counts(1000, [3, 7]) == [300, 700]
    assert liquid_format.counts(10, [1, 1, 1]) == [4, 3, 3]  # the remainder goes to the lower format on ties


def test_assignment_is_a_partition_fixed_by_the_seed():
    parts = liquid_format.assignment(1001, [3, 7], seed=5)
    assert [len(p) for p in parts] == [300, 701]
    assert sorted(np.concatenate(parts).tolist()) == list(range(1001))
    again = liquid_format.assignment(1001, [3, 7], seed=5)
    assert all((a == b).all() for a, b in zip(parts, again))
    other = liquid_format.assignment(1001, [3, 7], seed=6)
    assert not (parts[0] == other[0]).all()


@given(
    _with_a_positive(0, 80, 8),
    st.integers(1, 100),
)
def test_batch_counts_take_each_share_in_every_batch_and_every_element_once(sizes, batch_size):
    rows = liquid_format.batch_counts(sizes, batch_size)
    total = sum(sizes)
    assert rows.sum(axis=0).tolist() == sizes  # every element of every stream, once
    assert rows.sum(axis=1).tolist() == [batch_size] * (total // batch_size) + (
        [total % batch_size] if total % batch_size else []
    )
    emitted, taken = 0, np.zeros(len(sizes))
    for row in rows:
        n = row.sum()
        share = n * np.asarray(sizes) // total
        assert ((row == share) | (row == share + 1)).all()  # largest-remainder counts for this batch
        emitted, taken = emitted + n, taken + row
        assert (np.abs(taken - emitted * np.asarray(sizes) / total) < 2).all()  # about one off its share, never two


def test_raw_items_round_trip_and_refuse_bad_headers():
    pixels = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    item = liquid_format.encode_raw(pixels)
    assert item[:4] == b"\x89RAW" and len(item) == 16 + pixels.size
    np.testing.assert_array_equal(liquid_format.decode_raw(item), pixels)
    assert liquid_format.item_format(item) == "raw"
    with pytest.raises(LiquidFormatError, match="offset 16: 104 pixel bytes"):
        liquid_format.decode_raw(item[:-1])
    with pytest.raises(LiquidFormatError, match="offset 0: bad magic"):
        liquid_format.decode_raw(b"\x89RAX" + item[4:])
    with pytest.raises(LiquidFormatError, match="uint8"):
        liquid_format.encode_raw(pixels.astype(np.int16))


def test_ratio_parsing_refuses_what_is_not_a_ratio():
    assert liquid_format.parse_ratio("3:7", 2) == [3, 7]
    for bad, count in [("3:x", 2), ("3:7", 3), ("0:0", 2), ("-1:3", 2), ([True, 1], 2)]:
        with pytest.raises(ArgumentError):
            liquid_format.parse_ratio(bad, count)


def _manifest() -> liquid_pb2.LiquidManifest:
    manifest = liquid_pb2.LiquidManifest(format_version=1, num_images=5, channels=3, num_classes=2)
    fmt = manifest.formats.add(name="png", ratio_weight=1, num_images=5, num_bytes=100)
    fmt.records.add(path="records/png-00000.lqr", num_images=5, num_bytes=100)
    return manifest


def test_manifest_round_trips_and_every_bit_flip_is_an_error(tmp_path):
    liquid_format.write_manifest(str(tmp_path), _manifest())
    assert liquid_format.read_manifest(str(tmp_path)) == _manifest()
    path = tmp_path / liquid_format.MANIFEST_FILENAME
    data = path.read_bytes()
    for bit in range(0, len(data) * 8, 3):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(flipped))
        with pytest.raises(LiquidFormatError, match=r"manifest.liquid: offset \d+"):
            liquid_format.read_manifest(str(tmp_path))


def test_manifest_invariants_are_checked(tmp_path):
    manifest = _manifest()
    manifest.formats[0].records[0].path = "../elsewhere.lqr"
    liquid_format.write_manifest(str(tmp_path), manifest)
    with pytest.raises(LiquidFormatError, match="bad record entry"):
        liquid_format.read_manifest(str(tmp_path))
    manifest = _manifest()
    manifest.num_images = 6
    liquid_format.write_manifest(str(tmp_path), manifest)
    with pytest.raises(LiquidFormatError, match="do not add up"):
        liquid_format.read_manifest(str(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LiquidFormatError, match="not a Liquid dataset"):
        liquid_format.read_manifest(str(tmp_path / "empty"))
    with pytest.raises(PathError, match="no such file or folder"):
        liquid_format.read_manifest(str(tmp_path / "missing"))


@given(
    st.lists(st.integers(1, 80), min_size=1, max_size=4),
    st.floats(0, 1),
    st.integers(1, 64),
)
def test_split_batch_counts_keep_the_format_shares_and_a_constant_number_of_storage_reads(sizes, share, batch_size):
    cached = [int(share * size) for size in sizes]  # the same fraction of every format, as LiquidDataset chooses
    uncached = [size - c for size, c in zip(sizes, cached)]
    rows = liquid_format.split_batch_counts(cached, uncached, batch_size)
    assert rows[:, :, 0].sum(axis=0).tolist() == cached and rows[:, :, 1].sum(axis=0).tolist() == uncached
    np.testing.assert_array_equal(rows.sum(axis=2), liquid_format.batch_counts(sizes, batch_size))
    from_storage = rows[:, :, 1].sum(axis=1)
    target = [n * sum(uncached) / sum(sizes) for n in rows.sum(axis=(1, 2))]
    assert all(abs(s - t) < 1 + len(sizes) / 2 for s, t in zip(from_storage, target))


def test_split_batch_counts_hold_storage_reads_to_one_apart_in_the_dataset_tests_layout():
    rows = liquid_format.split_batch_counts([30, 18, 9], [30, 18, 15], 12)  # png, raw, l3 half cached by bytes
    from_storage = rows[:, :, 1].sum(axis=1)
    assert from_storage.max() - from_storage.min() <= 1
