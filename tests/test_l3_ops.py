"""The C++ L3 codec ops agree byte for byte with the reference codec and fail cleanly on corrupt input."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import tfliquid
from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos

from strategies import l3_images


def _test_images():
    rng = np.random.default_rng(1)
    images = [
        rng.integers(0, 256, shape, dtype=np.uint8)
        for shape in [(1, 1, 1), (1, 77, 3), (77, 1, 4), (65, 65, 3), (130, 67, 1), (129, 131, 3), (133, 257, 4)]
    ]
    images.append(np.full((40, 33, 3), 200, np.uint8))
    for _, photo in sample_photos.load_photos()[:2]:
        photo.thumbnail((160, 160))
        images.append(np.asarray(photo))
    return images


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_cpp_encoder_is_the_reference_byte_for_byte_and_decodes(profile):
    for image in _test_images():
        encoded = tfliquid.l3.encode_l3(image, profile).numpy()
        assert encoded == l3.encode(image, profile), image.shape
        np.testing.assert_array_equal(tfliquid.l3.decode_l3(encoded).numpy(), image)


@settings(max_examples=30, deadline=None)
@given(l3_images(), st.sampled_from(l3.PROFILES))
def test_property_cpp_decodes_reference(image, profile):
    np.testing.assert_array_equal(tfliquid.l3.decode_l3(l3.encode(image, profile)).numpy(), image)


@pytest.mark.parametrize(
    "profile, height, width, patch",
    [("paper", 720, 1080, 32), ("paper", 1080, 1920, 64), ("paper", 1088, 1920, 128), ("default", 300, 400, 128)],
)
def test_full_patches_of_every_size_round_trip(profile, height, width, patch):
    """Full patches take the decoder's register path (32, 64 or 128 pixels wide): a photo, with a flat block whose
    rows code in 0 bits and a noise block whose rows need 8, round trips at each patch size."""
    image = np.array(sample_photos.load_photos()[0][1].resize((width, height)))
    image[:100, :200] = 77
    image[100:200, 200:400] = np.random.default_rng(0).integers(0, 256, (100, 200, 3), dtype=np.uint8)
    encoded = tfliquid.l3.encode_l3(image, profile).numpy()
    assert l3.parse_header(encoded)[0].patch == patch
    np.testing.assert_array_equal(tfliquid.l3.decode_l3(encoded).numpy(), image)


def test_decode_in_parallel_dataset_map():
    images = _test_images()[-2:]
    encoded = [l3.encode(image) for image in images]
    ds = tf.data.Dataset.from_tensor_slices(encoded).map(tfliquid.l3.decode_l3, num_parallel_calls=2)
    for decoded, image in zip(ds, images):
        np.testing.assert_array_equal(decoded.numpy(), image)


def test_corrupt_inputs_are_errors_never_crashes():
    data = l3.encode(_test_images()[3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset 0: bad magic"):
        tfliquid.l3.decode_l3(b"\x00" * len(data))
    with pytest.raises(tf.errors.InvalidArgumentError, match="patch offsets"):
        tfliquid.l3.decode_l3(data[:-3])
    oversized = bytearray(data)
    oversized[12:16] = (1 << 24).to_bytes(4, "little")
    oversized[16:20] = (1 << 24).to_bytes(4, "little")
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset 12: image outside the format's limits"):
        tfliquid.l3.decode_l3(bytes(oversized))
    rng = np.random.default_rng(0)
    errors = 0
    for trial in range(300):
        mutated = bytearray(data)
        if trial % 2:
            mutated = mutated[: rng.integers(0, len(mutated))]
        for _ in range(rng.integers(1, 4)):
            if mutated:
                mutated[rng.integers(0, len(mutated))] ^= 1 << int(rng.integers(0, 8))
        try:
            tfliquid.l3.decode_l3(bytes(mutated))
        except tf.errors.InvalidArgumentError as e:
            assert "L3: offset" in e.message
            errors += 1
    assert errors > 150  # truncations always fail; flips in the payload may decode to other pixels


def _flipped(data: bytes, rng) -> bytes:
    mutated = bytearray(data)
    mutated[rng.integers(0, len(mutated))] ^= 1 << int(rng.integers(0, 8))
    return bytes(mutated)


def _decoded_or_none(data: bytes):
    try:
        return tfliquid.l3.decode_l3(data).numpy()
    except tf.errors.InvalidArgumentError as e:
        assert "L3: offset" in e.message
        return None


def test_every_flipped_bit_of_a_version_2_file_is_detected():
    """Format version 2's checksum: each of 300 random one-bit flips of a photo's file is refused, or leaves its
    pixels as they were. The same flips of a version 1 file (no checksum), still read, often decode to other
    pixels without a word."""
    photo = _test_images()[-1]
    rng = np.random.default_rng(7)
    silently_wrong = {1: 0, 2: 0}
    for version in (1, 2):
        data = l3.encode(photo, "default", version=version)
        np.testing.assert_array_equal(tfliquid.l3.decode_l3(data).numpy(), photo)
        for _ in range(300):
            decoded = _decoded_or_none(_flipped(data, rng))
            silently_wrong[version] += decoded is not None and not np.array_equal(decoded, photo)
    assert silently_wrong[2] == 0
    assert silently_wrong[1] > 100


def test_encode_validates():
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels must be 1, 3 or 4"):
        tfliquid.l3.encode_l3(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(tf.errors.InvalidArgumentError, match="profile"):
        tfliquid.l3.encode_l3(np.zeros((4, 4, 3), np.uint8), "fast")


@pytest.mark.parametrize(
    "pixels",
    [
        np.full((4, 4, 3), 300.0),
        np.full((4, 4, 3), -1, np.int32),
        np.zeros((4, 4, 3), np.uint16),
        tf.zeros([4, 4, 3], tf.float32),
    ],
)
def test_encode_refuses_pixels_that_are_not_uint8_instead_of_wrapping_them(pixels):
    with pytest.raises(tfliquid.ArgumentError, match="encode_l3 stores uint8 pixels, got"):
        tfliquid.l3.encode_l3(pixels)
