"""decode_l3_batch's CPU kernel (the GPU kernel's host side and kernels: test_l3_gpu.py) and the DecodeL3 Keras
layer: bit-exact against the reference decoder on the photos, grey, RGBA and mixed profiles; errors that name the
image and the byte offset; and the layer inside model.fit."""

import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.keras.layers import DecodeL3
from tfliquid.l3 import codec as l3
from tfliquid.samples import photos as sample_photos


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    """Six of the shipped photos at 320x240 (one shape: a batch needs one)."""
    return [
        np.asarray(Image.open(sample_photos.photo_path(package, name)).convert("RGB").resize((320, 240)))
        for package, name in sample_photos.PHOTOS[:6]
    ]


def _decode_batch(encoded: list[bytes]) -> np.ndarray:
    return tfliquid.l3.decode_l3_batch(tf.constant(encoded)).numpy()


def test_photos_with_mixed_profiles_decode_bit_exact(photos):
    encoded = [l3.encode(photo, l3.PROFILES[i % 2]) for i, photo in enumerate(photos)]
    decoded = _decode_batch(encoded)
    assert decoded.shape == (6, 240, 320, 3)
    for i, photo in enumerate(photos):
        np.testing.assert_array_equal(decoded[i], l3.decode(encoded[i]), err_msg=f"image {i}")
        np.testing.assert_array_equal(decoded[i], photo, err_msg=f"image {i}")


@pytest.mark.parametrize("profile", l3.PROFILES)
def test_grey_and_rgba_photos(photos, profile):
    grey = [photo.mean(axis=2).astype(np.uint8)[..., None] for photo in photos[:3]]
    rgba = [np.dstack([photo, photo[..., 1] ^ 0x5A]) for photo in photos[:3]]
    for images in (grey, rgba):
        decoded = _decode_batch([l3.encode(image, profile) for image in images])
        np.testing.assert_array_equal(decoded, np.stack(images))


def test_a_batch_larger_than_the_thread_pool_and_odd_sizes():
    """Sixty-four images over the op's thread pool (sharded), each at its own slice of the output."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (64, 33, 65, 3), dtype=np.uint8)
    images[::3] //= 16  # some smooth, some noisy: shards of unequal cost
    decoded = _decode_batch([l3.encode(image, l3.PROFILES[i % 2]) for i, image in enumerate(images)])
    np.testing.assert_array_equal(decoded, images)


def test_in_a_dataset_after_batch(photos):
    encoded = [l3.encode(photo) for photo in photos]
    dataset = tf.data.Dataset.from_tensor_slices(encoded).batch(4).map(tfliquid.l3.decode_l3_batch)
    assert dataset.element_spec.shape.as_list() == [None, None, None, None]
    np.testing.assert_array_equal(np.concatenate(list(dataset.as_numpy_iterator())), np.stack(photos))


def _reference_offset(corrupt: bytes) -> int:
    with pytest.raises(l3.L3Error) as reference:
        l3.decode(corrupt)
    return int(re.match(r"offset (\d+):", str(reference.value)).group(1))


def _corrupt_patch_data() -> dict[str, bytes]:
    rng = np.random.default_rng(3)
    noise = l3.encode(rng.integers(0, 256, (40, 40), dtype=np.uint8), "default")
    payload = 24 + 4 * 2
    return {
        "segment width 15": noise[: payload + 40] + bytes([0xF0 | noise[payload + 40] & 0x0F]) + noise[payload + 41 :],
        "cut short": noise[:-5],
        "bad magic": b"GIF89a\x00\x00" + noise[8:],
    }


@pytest.mark.parametrize("name", list(_corrupt_patch_data()))
def test_corrupt_image_is_named_with_its_byte_offset(name):
    corrupt = _corrupt_patch_data()[name]
    good = l3.encode(np.full((40, 40, 1), 7, np.uint8))
    offset = _reference_offset(corrupt)
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"L3 image 2: offset {offset}: "):
        _decode_batch([good, good, corrupt, good])


def test_mismatched_shapes_name_the_first_image_that_differs():
    small = l3.encode(np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"L3 image 2 is 10x11x3 \(HxWxC\), image 0 is 10x10x3"):
        _decode_batch([small, small, l3.encode(np.zeros((10, 11, 3), np.uint8)), small])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"L3 image 1 is 10x10x1 \(HxWxC\)"):
        _decode_batch([small, l3.encode(np.zeros((10, 10, 1), np.uint8))])


def test_shape_function_checks_the_rank():
    with pytest.raises(ValueError, match="rank 1"):
        tf.function(tfliquid.l3.decode_l3_batch).get_concrete_function(tf.TensorSpec([2, 2], tf.string))
    spec = tf.function(tfliquid.l3.decode_l3_batch).get_concrete_function(tf.TensorSpec([5], tf.string))
    assert spec.structured_outputs.shape.as_list() == [5, None, None, None]


def _pixel_model(image_shape):
    """DecodeL3, then an identity 1x1 convolution (trainable, exact on integers): its MSE against per-image
    decode_l3 pixels is exactly 0 only if the layer decoded every pixel right."""
    encoded = keras.Input(shape=(), dtype="string")
    pixels = keras.ops.cast(DecodeL3(image_shape=image_shape)(encoded), "float32")
    channels = image_shape[-1]
    identity = keras.initializers.Constant(np.eye(channels).reshape(1, 1, channels, channels))
    outputs = keras.layers.Conv2D(channels, 1, use_bias=False, kernel_initializer=identity)(pixels)
    model = keras.Model(encoded, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def test_decode_layer_inside_model_fit_gives_decode_l3_pixels(photos):
    images = [photo[::4, ::4] for photo in photos]  # 60x80
    encoded = [l3.encode(image, l3.PROFILES[i % 2]) for i, image in enumerate(images)]
    targets = np.stack([tfliquid.l3.decode_l3(data).numpy() for data in encoded]).astype(np.float32)
    keras.utils.set_random_seed(0)
    model = _pixel_model(images[0].shape)
    history = model.fit(
        tf.data.Dataset.from_tensor_slices((encoded, targets)).batch(4), epochs=2, shuffle=False, verbose=0
    )
    assert history.history["loss"] == [0.0, 0.0]
    np.testing.assert_array_equal(model.predict(tf.constant(encoded), batch_size=3, verbose=0), targets)
    # The check can fail: one pixel off in the targets gives a positive loss.
    targets[5, 10, 10, 1] += 1
    history = model.fit(
        tf.data.Dataset.from_tensor_slices((encoded, targets)).batch(6), epochs=1, shuffle=False, verbose=0
    )
    assert history.history["loss"][0] > 0


def test_decode_layer_saves_and_loads(tmp_path):
    model = _pixel_model((4, 5, 1))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    image = np.arange(20, dtype=np.uint8).reshape(4, 5, 1)
    np.testing.assert_array_equal(loaded.predict(tf.constant([l3.encode(image)]), verbose=0)[0], image)
    with pytest.raises(ValueError, match="image_shape is \\(height, width, channels\\)"):
        DecodeL3(image_shape=(4, 5))


@pytest.mark.slow
@pytest.mark.parametrize("imports", ["import tfliquid, keras", "import keras, tfliquid"])
def test_a_saved_model_loads_after_a_plain_import_tfliquid(tmp_path, imports):
    """In a new process, `import tfliquid` alone (before or after Keras) is enough for Keras to find DecodeL3."""
    _pixel_model((4, 5, 1)).save(tmp_path / "model.keras")
    code = (
        f"{imports}\n"
        f"model = keras.models.load_model({str(tmp_path / 'model.keras')!r})\n"
        "print(*[type(layer).__module__ for layer in model.layers if type(layer).__name__ == 'DecodeL3'])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["tfliquid.keras.layers"]


def test_decode_layer_with_another_shape_is_an_error():
    model = _pixel_model((4, 5, 1))
    with pytest.raises(tf.errors.InvalidArgumentError):
        model.predict(tf.constant([l3.encode(np.zeros((4, 6, 1), np.uint8))]), verbose=0)


@pytest.mark.slow
def test_the_training_example_runs_on_the_cpu_kernel(tmp_path):
    """examples/l3_gpu_training.py, small: both runs train and report, and it says where DecodeL3 ran."""
    example = Path(__file__).resolve().parent.parent / "examples" / "l3_gpu_training.py"
    result = subprocess.run(
        [sys.executable, str(example), "--workdir", str(tmp_path), "--images-per-class", "4", "--epochs", "1"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "DecodeL3 runs on the CPU kernel: " in result.stdout or "DecodeL3 runs on the GPU" in result.stdout
    rates = re.findall(r"decoded in the (model|pipeline).*?(\d+) images/s\s+accuracy (\d\.\d+)", result.stdout)
    assert [where for where, _, _ in rates] == ["model", "pipeline"], result.stdout
    assert all(int(rate) > 0 for _, rate, _ in rates)
    assert len(list((tmp_path / "photos-l3").rglob("*.l3"))) == 40
