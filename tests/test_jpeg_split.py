"""Tests of the scan-splitting reference (tfliquid/jpeg/scans.py) against real JPEGs (tests/jpeg_samples.py)."""

import io
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tfliquid.jpeg.ops import check_jpeg, jpeg_to_progressive
from tfliquid.jpeg.scans import (
    EOI,
    MAX_SCANS,
    JpegError,
    frame_info,
    is_jpeg,
    is_progressive,
    join_partials,
    scan_ends,
    split_partials,
)

SOS, DHT, DRI, COM = 0xDA, 0xC4, 0xDD, 0xFE


ZOO = [
    "baseline_420",
    "baseline_444",
    "grey",
    "restart_rows",
    "restart_blocks",
    "odd_size",
    "metadata",
    "china",
    "flower",
    "progressive",
    "progressive_grey",
    "progressive_odd_size",
    "progressive_restart",
    "progressive_six_scans",
    "progressive_metadata",
    "progressive_pillow",
]


def test_zoo_has_every_fixture(zoo):
    assert sorted(zoo) == sorted(ZOO)


@pytest.fixture(params=ZOO)
def sample(request, zoo):
    return request.param, zoo[request.param]


def pillow_pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        return np.asarray(img)


def tf_pixels(data: bytes) -> np.ndarray:
    return tf.io.decode_jpeg(data).numpy()


def segment_markers(data: bytes, pos: int = 0) -> list[int]:
    """Marker codes of the segments from pos up to and including the next SOS (an independent, tiny walk)."""
    codes = []
    while True:
        assert data[pos] == 0xFF, f"no marker at {pos}"
        code = data[pos + 1]
        codes.append(code)
        if code == SOS:
            return codes
        pos += 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")


def minimal_scan(entropy: bytes) -> bytes:
    """An SOS segment (one component) followed by entropy-coded data: enough for the marker walk."""
    return b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00" + entropy


def test_every_prefix_decodes(sample):
    name, data = sample
    partials = split_partials(data)
    height, width, components, progressive = frame_info(data)
    assert progressive == name.startswith("progressive")
    for g in range(1, len(partials) + 1):
        prefix = join_partials(partials, g)
        for pixels in (pillow_pixels(prefix), tf_pixels(prefix)):
            assert pixels.reshape(height, width, -1).shape[2] == components, f"{name} g={g}"


def test_full_prefix_decodes_to_original_pixels(sample):
    name, data = sample
    partials = split_partials(data)
    full = join_partials(partials, len(partials))
    assert np.array_equal(pillow_pixels(full), pillow_pixels(data)), name
    assert np.array_equal(tf_pixels(full), tf_pixels(data)), name
    assert join_partials(partials, len(partials) + 5) == full  # g beyond the last scan: full fidelity


def test_partials_tile_the_data_up_to_the_last_scan(sample):
    name, data = sample
    ends = scan_ends(data)
    partials = split_partials(data)
    assert [len(p) for p in partials] == [b - a for a, b in zip([0] + ends[:-1], ends)]
    assert b"".join(partials) == data[: ends[-1]]
    assert data[ends[-1] :] == EOI, f"{name}: all these encoders end with EOI right after the last scan"
    assert all(data[end] == 0xFF for end in ends), "every scan ends at a marker"


@pytest.mark.parametrize("name", ["progressive", "progressive_grey", "progressive_six_scans", "progressive_pillow"])
def test_more_scans_give_more_fidelity(zoo, name):
    partials = split_partials(zoo[name])
    full = pillow_pixels(zoo[name]).astype(np.int16)
    errors = [np.abs(pillow_pixels(join_partials(partials, g)) - full).mean() for g in range(1, len(partials) + 1)]
    assert errors[0] > 1.0 and errors[-1] == 0.0, errors
    assert min(errors[: len(errors) // 2]) > 0.0, errors


@pytest.mark.parametrize(
    "name, scans",
    [
        ("progressive", 10),
        ("progressive_grey", 6),
        ("progressive_odd_size", 10),
        ("progressive_restart", 10),
        ("progressive_six_scans", 6),
        ("progressive_metadata", 10),
    ],
)
def test_jpegtran_scan_counts(zoo, name, scans):
    assert len(scan_ends(zoo[name])) == scans
    assert is_progressive(zoo[name])


@pytest.mark.parametrize("name", ["baseline_420", "grey", "restart_rows", "metadata", "china", "flower"])
def test_baseline_has_one_scan(zoo, name):
    assert len(scan_ends(zoo[name])) == 1
    assert not is_progressive(zoo[name])
    assert is_jpeg(zoo[name])


def test_tables_between_scans_start_the_next_partial(zoo):
    partials = split_partials(zoo["progressive"])
    starts = []
    for k, partial in enumerate(partials[1:], start=2):
        codes = segment_markers(partial)
        assert codes[-1] == SOS and set(codes[:-1]) <= {DHT}, f"partial {k}: {codes}"
        starts.append(codes[0])
    # jpegtran -optimize writes a DHT before every scan that codes Huffman symbols; DC refinement scans
    # (raw bits) need none.
    assert starts.count(DHT) >= 5 and starts.count(SOS) >= 1


def test_restart_interval_between_scans_goes_with_the_next_partial(zoo):
    data = zoo["progressive_restart"]
    partials = split_partials(data)
    # With -restart 1 (one MCU row), libjpeg writes a DRI before each scan whose interval in MCUs differs from
    # the previous scan's (interleaved and single-component scans have different MCUs).
    assert sum(DRI in segment_markers(p) for p in partials[1:]) >= 3
    assert DRI in segment_markers(partials[0], 2)


def test_metadata_stays_in_partial_one(zoo):
    data = zoo["progressive_metadata"]
    first = split_partials(data)[0]
    codes = segment_markers(first, 2)
    assert {0xE1, 0xE2, COM} <= set(codes), codes  # EXIF APP1, ICC APP2, COM
    assert b"Exif\x00\x00" in first and b"ICC_PROFILE\x00" in first
    with Image.open(io.BytesIO(join_partials([first], 1))) as img:
        assert img.info["icc_profile"] and img.getexif()[0x010F] == "tfliquid"


@pytest.mark.parametrize("name", ["restart_rows", "restart_blocks", "progressive_restart"])
def test_restart_markers_and_stuffing_do_not_end_a_scan(zoo, name):
    data = zoo[name]
    ends = scan_ends(data)
    start = data.index(b"\xff\xda")  # the first scan
    entropy = data[start : ends[0]]
    assert any(bytes([0xFF, rst]) in entropy for rst in range(0xD0, 0xD8))
    assert b"\xff\x00" in entropy


def test_synthetic_scan_with_stuffing_restart_and_fill():
    head = b"\xff\xd8\xff\xfe\x00\x04hi"
    scan = minimal_scan(b"\x12\xff\x00\x34\xff\xd0\x56\xff\xd7\x78")
    assert scan_ends(head + scan + EOI) == [len(head + scan)]
    # Fill bytes before a marker: the marker starts at the last FF, the fill stays with the scan.
    assert scan_ends(head + scan + b"\xff\xff" + EOI) == [len(head + scan) + 2]
    # Fill bytes before a restart marker or a stuffed byte do not end the scan (libjpeg reads through them).
    filled = minimal_scan(b"\x12\xff\xff\xd0\x34\xff\xff\x00")
    assert scan_ends(head + filled + EOI) == [len(head + filled)]
    # Fill bytes between segments are skipped.
    assert scan_ends(b"\xff\xd8\xff\xff\xff\xfe\x00\x02" + scan + EOI) == [8 + len(scan)]


def test_missing_eoi_after_a_scan_is_tolerated(zoo):
    data = zoo["progressive"]
    ends = scan_ends(data)
    assert scan_ends(data[: ends[-1]]) == ends
    assert scan_ends(data[: ends[3]]) == ends[:4]
    cut = ends[3] - 100  # inside the entropy-coded data of scan 4
    assert scan_ends(data[:cut]) == ends[:3] + [cut]


def test_at_most_64_scans():
    head = b"\xff\xd8"
    scan = minimal_scan(b"\x00")
    assert len(scan_ends(head + scan * MAX_SCANS + EOI)) == MAX_SCANS
    with pytest.raises(JpegError, match=rf"^offset {len(head) + MAX_SCANS * len(scan)}: more than 64 scans"):
        scan_ends(head + scan * (MAX_SCANS + 1) + EOI)


def _segment(code: int, fields: bytes) -> bytes:
    return bytes([0xFF, code]) + (len(fields) + 2).to_bytes(2, "big") + fields


# A 256x256 grey progressive JPEG: its DC scan, then its AC scan (an end-of-band run over every block, in 3 bytes:
# each such scan is a pass over the image for 11 bytes; libjpeg takes a first scan sent again), and a scan naming a
# Huffman table never defined, which decoding stops at.
_BOMB_HEAD = (
    b"\xff\xd8"
    + _segment(0xDB, b"\x00" + b"\x01" * 64)
    + _segment(0xC2, b"\x08\x01\x00\x01\x00\x01\x01\x11\x00")
    + _segment(0xC4, b"\x00\x01" + b"\x00" * 15 + b"\x00")  # DC: one code, "0", for a difference of 0
    + _segment(0xC4, b"\x10\x01" + b"\x00" * 15 + b"\xe0")  # AC: one code, "0", for an end-of-band run
    + _segment(0xDA, b"\x01\x01\x00\x00\x00\x00")
    + b"\x00" * 128  # each block's DC: "0"
)
_END_OF_BAND_RUN = _segment(0xDA, b"\x01\x01\x00\x01\x3f\x00") + b"\x7f\xff\x00"  # "0" then 32767 blocks
_UNDEFINED_TABLE = _segment(0xDA, b"\x01\x01\x01\x01\x3f\x00") + b"\x7f\xff\x00"


def test_a_progressive_jpeg_of_too_many_scans_is_refused_before_its_scans_are_decoded():
    """The AC scan sent 80 times, then the undefined table: the conversion refuses it from its markers, at the SOS
    of scan 65, before decoding: the undefined table is never reached."""
    head, end_of_band_run, undefined_table = _BOMB_HEAD, _END_OF_BAND_RUN, _UNDEFINED_TABLE
    with pytest.raises(tf.errors.InvalidArgumentError, match="Huffman table 0x[0-9a-f]+ was not defined"):
        jpeg_to_progressive(head + end_of_band_run * 60 + undefined_table + EOI, "bomb.jpg")
    jpeg = head + end_of_band_run * 80 + undefined_table + EOI
    assert len(jpeg) < 2000
    with pytest.raises(tf.errors.InvalidArgumentError) as refusal:
        jpeg_to_progressive(jpeg, "bomb.jpg")
    scan_65 = len(head) + 63 * len(end_of_band_run)
    assert f"bomb.jpg: offset {scan_65}: more than 64 scans" in refusal.value.message


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", r"^offset 0: no SOI"),
        (b"\x89PNG\r\n\x1a\n", r"^offset 0: no SOI"),
        (b"\xff\xd8", r"^offset 2: data ends before EOI"),
        (b"\xff\xd8\xff", r"^offset 2: marker runs past end"),
        (b"\xff\xd8\xff\xff\xff", r"^offset 4: marker runs past end"),
        (b"\xff\xd8\xff\xe0\x00", r"^offset 4: segment length runs past end"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", r"^offset 4: segment of length 16 runs past end"),
        (b"\xff\xd8\xff\xe0\x00\x01", r"^offset 4: segment length 1 is less than 2"),
        (b"\xff\xd8GARBAGE", r"^offset 2: expected a marker, found byte 0x47"),
        (b"\xff\xd8\xff\xfe\x00\x02junk\xff\xd9", r"^offset 6: expected a marker, found byte 0x6a"),
        (b"\xff\xd8\xff\xd0\x00\x02", r"^offset 2: 0xffd0 is not a segment marker"),
        (b"\xff\xd8\xff\xd8", r"^offset 2: 0xffd8 is not a segment marker"),
        (b"\xff\xd8\xff\x00", r"^offset 2: 0xff00 is not a segment marker"),
        (b"\xff\xd8\xff\xd9", r"^offset 2: no scan before EOI"),
        (b"\xff\xd8\xff\xfe\x00\x02\xff\xd9", r"^offset 6: no scan before EOI"),
        (b"\xff\xd8" + minimal_scan(b"\x12\xff"), r"^offset 13: marker runs past end"),
        (b"\xff\xd8" + minimal_scan(b"\x12") + b"\xff\xc4\x00\x02", r"^offset 17: data ends before EOI"),
    ],
)
def test_errors(data, message):
    with pytest.raises(JpegError, match=message):
        scan_ends(data)


def test_truncated_real_jpeg(zoo):
    data = zoo["progressive"]
    ends = scan_ends(data)
    with pytest.raises(JpegError, match=r"runs past end of data"):
        scan_ends(data[:100])  # inside the quantisation tables
    with pytest.raises(JpegError, match=rf"^offset {ends[0] + 2}: segment of length \d+ runs past end"):
        scan_ends(data[: ends[0] + 6])  # inside the DHT after scan 1
    with pytest.raises(JpegError, match=r"^offset 0: no SOI"):
        scan_ends(data[1:])


def test_garbage_after_a_scan(zoo):
    data = zoo["baseline_420"]
    end = scan_ends(data)[0]
    assert scan_ends(data + b"trailing garbage after EOI") == [end]
    # TEM (FF 01) ends the entropy-coded data like any marker, but it has no length: the walk rejects it.
    with pytest.raises(JpegError, match=rf"^offset {end}: 0xff01 is not a segment marker"):
        scan_ends(data[:end] + b"\xff\x01" + data[end:])


def test_is_jpeg_is_progressive_frame_info(zoo):
    assert not is_jpeg(b"\xff\xd8") and not is_jpeg(b"\x89PNG\r\n\x1a\n") and is_jpeg(b"\xff\xd8\xff")
    assert not is_progressive(b"garbage") and not is_progressive(b"\xff\xd8\xff\xd9")
    for name, data in zoo.items():
        with Image.open(io.BytesIO(data)) as img:
            assert frame_info(data) == (
                img.height,
                img.width,
                len(img.getbands()),
                bool(img.info.get("progressive")),
            ), name
    with pytest.raises(JpegError, match=r"^offset 2: no frame header"):
        frame_info(b"\xff\xd8" + minimal_scan(b"") + EOI)
    with pytest.raises(JpegError, match=r"^offset 2: frame header of 2 bytes is too short"):
        frame_info(b"\xff\xd8\xff\xc2\x00\x04\x08\x00" + minimal_scan(b"") + EOI)


@pytest.mark.parametrize("read", ["check_jpeg", "rescript"])
def test_every_strict_read_refuses_more_than_500_scans_before_decoding_them(read):
    """Reads that take any number of scans (a JPEG checked before TensorFlow decodes it, a progressive JPEG given
    another script) count them from the markers too, against a limit no encoder comes near."""
    jpeg = _BOMB_HEAD + _END_OF_BAND_RUN * 520 + _UNDEFINED_TABLE + EOI
    with pytest.raises(tf.errors.InvalidArgumentError) as refusal:
        if read == "check_jpeg":
            check_jpeg(jpeg, "bomb.jpg")
        else:
            jpeg_to_progressive(jpeg, "bomb.jpg", rescript_progressive=True)
    scan_501 = len(_BOMB_HEAD) + 499 * len(_END_OF_BAND_RUN)
    assert f"more than 500 scans (at byte {scan_501})" in refusal.value.message
    check_jpeg(_BOMB_HEAD + _END_OF_BAND_RUN * 20 + EOI)  # a scan sent again is no error: only the count is


def test_what_a_strict_read_sees_of_a_cut_arithmetic_coded_scan(zoo, tmp_path):
    """The documented bound of strict reading (docs/reliability.md): an arithmetic-coded scan cut short is refused
    when nothing follows the cut, and read with zeros in place of the missing bytes when a marker does (T.81 lets
    an encoder drop a scan's trailing zero bytes, so the decoder must read them as zeros: no count tells the cut).
    Huffman-coded scans cut before a marker are refused."""
    source = tmp_path / "baseline.jpg"
    source.write_bytes(zoo["baseline_420"])
    arithmetic = subprocess.run(["jpegtran", "-arithmetic", str(source)], check=True, capture_output=True).stdout
    check_jpeg(arithmetic)
    scan = arithmetic.index(b"\xff\xda")
    cut = scan + (len(arithmetic) - scan) // 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="corrupt JPEG"):
        check_jpeg(arithmetic[:cut])
    check_jpeg(arithmetic[:cut] + EOI)  # the bound: read as the whole file's prefix followed by zeros
    huffman = zoo["baseline_420"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="corrupt JPEG"):
        check_jpeg(huffman[: huffman.index(b"\xff\xda") + (len(huffman) - huffman.index(b"\xff\xda")) // 2] + EOI)
