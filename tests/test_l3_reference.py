"""The L3 reference codec (tfliquid/l3/codec.py): lossless on every shape, channel count, profile and bit
width, and strict on corrupt input."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos

from strategies import l3_images


def _images():
    rng = np.random.default_rng(0)
    gradient = np.add.outer(np.arange(70), np.arange(90)).astype(np.uint8)
    checker = ((np.indices((65, 67)).sum(axis=0) % 2) * 255).astype(np.uint8)
    return {
        "noise": rng.integers(0, 256, (130, 129, 3), dtype=np.uint8),
        "constant": np.full((33, 65, 3), 77, np.uint8),
        "black": np.zeros((64, 64, 4), np.uint8),
        "gradient": np.stack([gradient, gradient[::-1], gradient[:, ::-1]], -1),
        "checker": checker,
        "1x1": np.array([[[1, 2, 3]]], np.uint8),
        "1xN": rng.integers(0, 256, (1, 200, 3), dtype=np.uint8),
        "Nx1": rng.integers(0, 256, (200, 1, 1), dtype=np.uint8),
        "N+1": rng.integers(0, 256, (65, 65, 4), dtype=np.uint8),
        "default N+1": rng.integers(0, 256, (129, 130, 3), dtype=np.uint8),
    }


@pytest.mark.parametrize("profile", l3.PROFILES)
@pytest.mark.parametrize("name", list(_images()))
def test_round_trip(name, profile):
    image = _images()[name]
    decoded = l3.decode(l3.encode(image, profile))
    expected = image if image.ndim == 3 else image[..., None]
    np.testing.assert_array_equal(decoded, expected)


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_every_bit_width_round_trips(profile):
    """Rows whose residuals need 0, 1, ..., 8 bits (the prototype fails 0, 6 and 8)."""
    rows = [np.zeros(64, np.uint8)]
    for width in range(9):
        span = (1 << width) - 1
        rows.append((rows[-1].astype(int) + np.resize([0, span], 64)) % 256)
    image = np.array(rows, np.uint8)
    np.testing.assert_array_equal(l3.decode(l3.encode(image, profile))[..., 0], image)


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_real_photos_round_trip(profile):
    for class_name, photo in sample_photos.load_photos()[:3]:
        photo.thumbnail((200, 200))
        image = np.asarray(photo)
        np.testing.assert_array_equal(l3.decode(l3.encode(image, profile)), image, err_msg=class_name)


@settings(max_examples=40, deadline=None)
@given(l3_images(), st.sampled_from(l3.PROFILES))
def test_property_round_trip(image, profile):
    np.testing.assert_array_equal(l3.decode(l3.encode(image, profile)), image)


def test_prediction_follows_the_spec():
    previous = np.array([10, 50, 20, 200], np.uint8)
    # x=0: a=b=10, c=50, p=50 -> c; x=1: a=10 b=50 c=20 p=-20 -> a; x=2: a=50 b=20 c=200 p=230 -> c;
    # x=3: a=20 b=200 c=200 p=20 -> a
    np.testing.assert_array_equal(l3.predict(previous), [50, 10, 200, 20])


def test_default_profile_is_smaller_than_paper_profile_on_photos():
    photo = np.asarray(sample_photos.load_photos()[1][1])
    assert len(l3.encode(photo, "default")) < len(l3.encode(photo, "paper"))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: b"GIF89a\x00\x00" + d[8:], "offset 0: bad magic"),
        (lambda d: d[:9] + b"\x02" + d[10:], "offset 9: 2 channels"),
        (lambda d: d[:20], "offset 20: data ends inside the 24-byte header"),
        (lambda d: d[:-1], "patch offsets are not increasing"),
        (lambda d: d[:24] + b"\xff\xff\xff\xff" + d[28:], "patch offsets"),
    ],
)
def test_corrupt_inputs_are_errors(mutate, message):
    data = l3.encode(_images()["noise"], "default")
    with pytest.raises(l3.L3Error, match=message):
        l3.decode(mutate(data))


def test_a_short_header_claiming_millions_of_patches_is_rejected_before_they_are_listed():
    # Found by the atheris fuzzer: a 1-pixel patch size on a 4863x4557 image claims 22 million patch offsets in
    # 84 bytes; listing the patch grid before checking the data's length took 4.5 GB.
    header = l3.HEADER.pack(l3.MAGIC, l3.VERSION, 1, 0, 8, 4863, 4557, 1, 0)
    tracemalloc.start()
    try:
        with pytest.raises(l3.L3Error, match="offset 84: data ends inside the 22160692 patch offsets"):
            l3.parse_header(header + bytes(60))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_version_2_checksum_refuses_flipped_bits_and_version_1_still_reads():
    image = _images()["noise"][:20, :24]
    rng = np.random.default_rng(5)
    data = l3.encode(image, "paper")
    assert data[8] == l3.VERSION == 2 and len(data) == len(l3.encode(image, "paper", version=1)) + 4
    np.testing.assert_array_equal(l3.decode(l3.encode(image, "paper", version=1)), image)
    for _ in range(40):
        mutated = bytearray(data)
        mutated[rng.integers(0, len(data))] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(l3.L3Error, match=r"^offset \d+: "):
            l3.decode(bytes(mutated))
    last = bytearray(data)
    last[-5] ^= 1  # the payload's last byte: a value or padding bit, which only the checksum sees
    with pytest.raises(l3.L3Error, match=rf"offset {len(data) - 4}: checksum mismatch: the file says"):
        l3.decode(bytes(last))


def test_bad_segment_width_is_an_error():
    data = bytearray(l3.encode(np.zeros((4, 4), np.uint8), "default"))
    header_end = l3.HEADER.size + 4 * 2
    data[header_end + 4] = 0xF0  # row 1's only segment header: width 15
    with pytest.raises(l3.L3Error, match="segment width 15 > 8"):
        l3.decode(bytes(data))


def test_encode_rejects_bad_images():
    with pytest.raises(ValueError, match="uint8"):
        l3.encode(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(ValueError, match="profile"):
        l3.encode(np.zeros((4, 4), np.uint8), "fast")
