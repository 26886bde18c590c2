"""Decoding a crop (tfliquid.jpeg.crop, the op Liquid>DecodeJpegCrop; docs/formats/pcr.md, "Decoding a crop"): the
window's pixels are the whole decode's at its scale (tf.io.decode_jpeg's at 8/8, bit for bit, on JPEGs of every
kind), the scale is chosen from the window, and the flip, the normalisation and the layout are the plain ones;
torchvision's random resized crop windows stay inside the image and replay by seed."""

import re

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid.jpeg import crop_reference
from tfliquid.jpeg.crop import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    center_crop_window,
    crop_pixels,
    decode_batch,
    decode_center_crop,
    decode_crop,
    decode_random_resized_crop,
    random_resized_crop_window,
)
from tfliquid.jpeg.ops import jpeg_to_progressive
from tfliquid.jpeg.sized import decode_jpeg_at_size, decode_jpeg_scaled

import jpeg_samples


@pytest.fixture(scope="module")
def photo_jpeg() -> bytes:
    return jpeg_samples.photo_500x375_jpeg()


def _windows(height: int, width: int, rng) -> list[tuple[int, int, int, int]]:
    """The whole image, one-pixel windows at two corners, the last column, windows ending a row before, at and
    after an MCU row's end (a crop's decode reads the scans down to the MCU row below it), and random windows."""
    windows = [(0, 0, height, width), (0, 0, 1, 1), (height - 1, width - 1, 1, 1), (0, width - 1, height, 1)]
    windows += [(y, 0, bottom - y, width) for bottom in (15, 16, 17, 32) if bottom <= height for y in (0, bottom - 1)]
    for _ in range(6):
        h, w = int(rng.integers(1, height + 1)), int(rng.integers(1, width + 1))
        windows.append((int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w))
    return windows


def test_a_window_at_full_scale_is_tf_decode_jpeg_cropped_bit_for_bit(photo_jpeg, zoo):
    """Baseline 4:2:0 and 4:4:4, grey, restart intervals, odd sizes, EXIF/ICC, CMYK, progressive by jpegtran,
    Pillow and PCR's fast script (read by tfliquid's spectral decoder), and every scan group's prefix."""
    kinds = {**jpeg_samples.jpegs_of_every_kind(photo_jpeg), **zoo}
    rng = np.random.default_rng(54)
    for kind, jpeg in kinds.items():
        whole = tf.io.decode_jpeg(jpeg, channels=3).numpy()
        for y, x, h, w in _windows(*whole.shape[:2], rng):
            window = decode_crop(jpeg, [y, x, h, w], None).numpy()
            assert np.array_equal(window, whole[y : y + h, x : x + w]), (kind, (y, x, h, w))


@pytest.mark.parametrize("eighths", [1, 2, 4])
def test_a_window_at_a_smaller_scale_is_the_whole_decode_at_that_scale_cropped(photo_jpeg, eighths):
    """A window 8/M times the output's size, at a multiple of 8/M: decoded at M/8, its region is exactly the output
    size (not resized), and it is the whole image decoded at M/8 (djpeg's pixels: test_jpeg_sized.py) cropped."""
    factor = 8 // eighths
    fast = jpeg_to_progressive(photo_jpeg, scan_script="fast")[0].numpy()
    whole_size = (-(-375 * eighths // 8), -(-500 * eighths // 8))
    for jpeg in (photo_jpeg, fast):
        whole = decode_jpeg_scaled(jpeg, whole_size).numpy()
        for y, x, h, w in [(0, 0, 40, 48), (2, 4, 24, 40), (16, 24, 30, 20)]:  # in the output's pixels
            window = [y * factor, x * factor, h * factor, w * factor]
            image = decode_crop(jpeg, window, (h, w)).numpy()
            assert np.array_equal(image, whole[y : y + h, x : x + w]), (eighths, window)


def test_the_scale_is_the_smallest_whose_window_covers_the_output(photo_jpeg):
    """Told by the pixels: a window whose half covers the output is the whole decode at 4/8 cropped (its region
    is the output's size: not resized); one whose half does not is the full decode's window."""
    half = decode_jpeg_scaled(photo_jpeg, (188, 250)).numpy()  # the whole image at 4/8
    for side in (360, 359):  # ceil(side x 4 / 8) = 180
        assert np.array_equal(decode_crop(photo_jpeg, [0, 0, side, side], (180, 180)).numpy(), half[:180, :180])
    full = tf.io.decode_jpeg(photo_jpeg).numpy()
    assert np.array_equal(decode_crop(photo_jpeg, [10, 20, 300, 300], (300, 300)).numpy(), full[10:310, 20:320])


def test_the_resize_is_tf_image_resize_of_the_window_within_rounding(photo_jpeg):
    full = tf.io.decode_jpeg(photo_jpeg).numpy()
    image = decode_crop(photo_jpeg, [30, 50, 300, 260], (224, 224)).numpy().astype(int)  # at 8/8, downscaled
    reference = np.round(tf.image.resize(full[30:330, 50:310], (224, 224)).numpy()).astype(int)
    assert np.abs(image - reference).max() <= 1


def test_flip_normalisation_and_layout(photo_jpeg):
    window, size = [20, 40, 200, 300], (100, 150)
    plain = decode_crop(photo_jpeg, window, size).numpy()
    flipped = decode_crop(photo_jpeg, window, size, flip=True).numpy()
    assert np.array_equal(flipped, plain[:, ::-1])
    normalised = decode_crop(
        photo_jpeg, window, size, flip=tf.constant(True), dtype=tf.float32, mean=IMAGENET_MEAN, std=IMAGENET_STD
    ).numpy()
    expected = (plain[:, ::-1].astype(np.float32) - np.float32(IMAGENET_MEAN)) / np.float32(IMAGENET_STD)
    np.testing.assert_allclose(normalised, expected, rtol=1e-6, atol=1e-6)
    first = decode_crop(photo_jpeg, window, size, dtype=tf.float32, channels_first=True).numpy()
    assert first.shape == (3, *size) and np.array_equal(first, np.transpose(plain, (2, 0, 1)).astype(np.float32))
    half = decode_crop(photo_jpeg, window, size, dtype=tf.bfloat16, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert half.dtype == tf.bfloat16
    as_float = decode_crop(photo_jpeg, window, size, dtype=tf.float32, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert np.array_equal(half.numpy(), tf.cast(as_float, tf.bfloat16).numpy())


def test_in_a_graph_the_output_shape_is_known():
    @tf.function(input_signature=[tf.TensorSpec([], tf.string), tf.TensorSpec([4], tf.int64)])
    def decode(contents, window):
        return decode_crop(contents, window, (224, 200), dtype=tf.float32, channels_first=True)

    assert decode.get_concrete_function().output_shapes.as_list() == [3, 224, 200]


@pytest.mark.parametrize("shape", [(375, 500), (500, 375), (64, 64), (10, 1000), (1000, 10), (1, 1), (3, 7)])
def test_random_resized_crop_windows_stay_inside_and_follow_torchvision(shape):
    height, width = shape
    windows = np.stack([random_resized_crop_window(shape, [seed, 7]).numpy() for seed in range(60)])
    y, x, h, w = windows.T
    assert (y >= 0).all() and (x >= 0).all() and (h >= 1).all() and (w >= 1).all()
    assert (y + h <= height).all() and (x + w <= width).all()
    if shape == (375, 500):  # windows from a draw: within the scale and the ratio, but for the rounding
        area = h * w / (height * width)
        assert (area >= 0.08 - 0.01).all() and (area <= 1.0).all()
        aspect = w / h
        assert (aspect >= 3 / 4 * 0.95).all() and (aspect <= 4 / 3 * 1.05).all()
        assert len({tuple(window) for window in windows}) > 50  # seeds give different windows
    if shape == (10, 1000):  # no draw fits: the widest window within the ratio, centred
        assert {tuple(window) for window in windows} == {(0, 493, 10, 13)}
    again = np.stack([random_resized_crop_window(shape, [seed, 7]).numpy() for seed in range(60)])
    assert np.array_equal(windows, again)
    reference = [crop_reference.random_resized_crop(height, width, (seed, 7))[0] for seed in range(60)]
    assert [tuple(window) for window in windows.tolist()] == reference


def test_windows_and_flips_are_the_references_draw_for_draw(photo_jpeg):
    """The op's SplitMix64 draws and torchvision's algorithm against tfliquid.jpeg.crop_reference, over seeds of
    every sign and other scales and ratios; the one-op decodes use the same windows and flips."""
    rng = np.random.default_rng(54)
    for _ in range(200):
        seed = [int(v) for v in rng.integers(-(2**63), 2**63 - 1, size=2, dtype=np.int64)]
        height, width = (int(v) for v in rng.integers(1, 2000, size=2))
        low = float(rng.uniform(0.01, 1.0))
        scale, ratio = (low, float(rng.uniform(low, 1.0))), (float(rng.uniform(0.2, 1)), float(rng.uniform(1, 5)))
        window = random_resized_crop_window([height, width], seed, scale, ratio).numpy().tolist()
        assert tuple(window) == crop_reference.random_resized_crop(height, width, seed, scale, ratio)[0]
    assert center_crop_window([999, 1001], 0.3).numpy().tolist() == list(crop_reference.center_crop(999, 1001, 0.3))
    full = tf.io.decode_jpeg(photo_jpeg).numpy()
    flips = set()
    for seed in range(12):
        (y, x, h, w), flip = crop_reference.random_resized_crop(375, 500, (seed, 3))
        flips.add(flip)
        image = decode_random_resized_crop(photo_jpeg, None, [seed, 3]).numpy()
        window = full[y : y + h, x : x + w]
        assert np.array_equal(image, window[:, ::-1] if flip else window), seed
        unflipped = decode_random_resized_crop(photo_jpeg, None, [seed, 3], flip=False).numpy()
        assert np.array_equal(unflipped, window), seed
    assert flips == {False, True}
    y, x, h, w = crop_reference.center_crop(375, 500)
    assert np.array_equal(decode_center_crop(photo_jpeg, None).numpy(), full[y : y + h, x : x + w])


def test_center_crop_window():
    assert center_crop_window([375, 500, 3]).numpy().tolist() == [23, 86, 328, 328]
    assert center_crop_window([256, 256], 0.875).numpy().tolist() == [16, 16, 224, 224]
    assert center_crop_window([1, 9], 0.5).numpy().tolist() == [0, 4, 1, 1]


def test_a_random_resized_crop_decode_replays_by_seed(photo_jpeg):
    images = [decode_random_resized_crop(photo_jpeg, (64, 64), [seed, 1]).numpy() for seed in (1, 2, 1)]
    assert np.array_equal(images[0], images[2]) and not np.array_equal(images[0], images[1])
    assert images[0].shape == (64, 64, 3) and images[0].dtype == np.uint8


def test_damaged_data_windows_outside_and_bad_options_are_errors(photo_jpeg):
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"} where: corrupt JPEG: .*\(at byte \d+\)"):
        decode_crop(photo_jpeg[:2000], [0, 0, 300, 300], (64, 64), context=tf.constant("where"))
    for window in ([0, 0, 376, 500], [-1, 0, 10, 10], [0, 0, 0, 10], [370, 490, 10, 11]):
        message = re.escape(f"the crop window (y {window[0]}, x {window[1]}, height {window[2]}, width {window[3]})")
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"} " + message + r" is not inside the 375x500 image"):
            decode_crop(photo_jpeg, window, (64, 64))
    with pytest.raises(tfliquid.ArgumentError, match="mean and std normalise float32 or bfloat16 output"):
        decode_crop(photo_jpeg, [0, 0, 10, 10], (8, 8), mean=IMAGENET_MEAN)
    with pytest.raises(tfliquid.ArgumentError, match="std must be finite and above 0"):
        decode_crop(photo_jpeg, [0, 0, 10, 10], (8, 8), dtype=tf.float32, std=(1, 0, 1))
    with pytest.raises(tfliquid.ArgumentError, match="size's height must be an int in 1..65535"):
        decode_crop(photo_jpeg, [0, 0, 10, 10], (0, 8))
    with pytest.raises(tfliquid.ArgumentError, match=r"scale must be \(low, high\) with 0 < low <= high"):
        random_resized_crop_window([10, 10], [1, 2], scale=(0.5, 0.1))


def test_damaged_fast_script_data_falls_back_to_libjpeg_as_the_whole_decode_does(photo_jpeg):
    """Bytes changed in the entropy-coded data of a fast-script JPEG: the window decodes as tf.io.decode_jpeg's
    window where that decodes, and fails with a byte offset where it does not, unless the damage lies below the
    rows the window reads (each scan is entropy-decoded only down to them): its pixels are then the clean ones."""
    fast = jpeg_to_progressive(photo_jpeg, scan_script="fast")[0].numpy()
    clean = tf.io.decode_jpeg(fast, channels=3).numpy()[100:300, 120:360]
    outcomes = {"failed": 0, "decoded": 0, "damage below": 0}
    for damaged in jpeg_samples.damaged_copies(fast, 54, 60):
        try:
            window = decode_crop(damaged, [100, 120, 200, 240], None).numpy()
        except tf.errors.InvalidArgumentError as error:
            assert re.search(r"corrupt JPEG: .*\(at byte \d+\)", error.message), error.message
            outcomes["failed"] += 1
            continue
        try:
            expected, kind = tf.io.decode_jpeg(damaged, channels=3).numpy()[100:300, 120:360], "decoded"
        except tf.errors.InvalidArgumentError:
            expected, kind = clean, "damage below"
        assert np.array_equal(window, expected), kind
        outcomes[kind] += 1
    assert outcomes["failed"] > 0 and outcomes["decoded"] > 0, outcomes


@pytest.fixture(scope="module")
def photos_pcr(photo_folder, tmp_path_factory) -> str:
    dst = tmp_path_factory.mktemp("crop") / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=4, progress=False)
    return str(dst)


def _images(dataset) -> list[np.ndarray]:
    return [element["image"].numpy() for element in dataset]


def test_pcr_random_crops_replay_by_seed_change_by_epoch_and_resume_from_a_checkpoint(photos_pcr, tmp_path):
    def dataset():
        return tfliquid.PCRDataset(photos_pcr, decode_size=(48, 48), crop="random", seed=5)

    run = _images(dataset().repeat(2))  # two epochs of 16
    assert len(run) == 32 and all(image.shape == (48, 48, 3) for image in run)
    again = _images(dataset().repeat(2))
    assert all(np.array_equal(a, b) for a, b in zip(again, run, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(run[:16], run[16:]))  # another epoch, other crops
    iterator = iter(dataset().repeat(2))
    for _ in range(10):
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.write(str(tmp_path / "ckpt"))
    restored = iter(dataset().repeat(2))
    tf.train.Checkpoint(iterator=restored).read(path).assert_consumed()
    rest = [element["image"].numpy() for element in restored]
    assert len(rest) == 22 and all(np.array_equal(a, b) for a, b in zip(rest, run[10:]))


def test_pcr_center_crops_are_the_full_decodes_window_and_normalise_in_the_op(photos_pcr):
    jpegs = [element["image"].numpy() for element in tfliquid.PCRDataset(photos_pcr, decode=False, shuffle=False)]
    centre = tfliquid.PCRDataset(photos_pcr, crop="center", shuffle=False)
    for jpeg, image in zip(jpegs, _images(centre), strict=True):
        whole = tf.io.decode_jpeg(jpeg, channels=3).numpy()
        y, x, h, w = center_crop_window(whole.shape).numpy()
        assert np.array_equal(image, whole[y : y + h, x : x + w])
    options = dict(decode_size=(32, 40), shuffle=False, dtype=tf.float32, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    normalised = tfliquid.PCRDataset(photos_pcr, channels_first=True, **options)
    plain = _images(tfliquid.PCRDataset(photos_pcr, decode_size=(32, 40), shuffle=False))
    assert normalised.element_spec["image"] == tf.TensorSpec([3, 32, 40], tf.float32)
    for image, expected in zip(_images(normalised), plain, strict=True):
        reference = (np.transpose(expected, (2, 0, 1)) - np.float32(IMAGENET_MEAN)[:, None, None]) / np.float32(
            IMAGENET_STD
        )[:, None, None]
        np.testing.assert_allclose(image, reference, rtol=1e-5, atol=1e-5)


def test_pcr_crop_options_are_checked(photos_pcr):
    with pytest.raises(tfliquid.ArgumentError, match="crop must be 'random', 'center'"):
        tfliquid.PCRDataset(photos_pcr, crop="middle")
    with pytest.raises(tfliquid.ArgumentError, match="say how images are decoded: decode=True"):
        tfliquid.PCRDataset(photos_pcr, decode=False, crop="center")
    with pytest.raises(tfliquid.ArgumentError, match="mean and std normalise float32 or bfloat16 output"):
        tfliquid.PCRDataset(photos_pcr, mean=IMAGENET_MEAN)


def test_crop_pixels_is_the_jpeg_crop_at_full_scale_bit_for_bit(photo_jpeg):
    """Images of other formats are cropped as JPEGs are: the same window, resize, flip and output, at 8/8."""
    whole = tf.io.decode_jpeg(photo_jpeg, channels=3)
    rng = np.random.default_rng(7)
    for y, x, h, w in _windows(375, 500, rng):
        # Above half the window on one side: decoded at 8/8, then resized.
        for size in (None, (h // 2 + 2, max(1, w // 3))):
            for flip, options in (
                (False, {}),
                (True, {"dtype": tf.float32, "mean": IMAGENET_MEAN, "std": IMAGENET_STD}),
            ):
                expected = decode_crop(photo_jpeg, [y, x, h, w], size, flip=flip, **options).numpy()
                cropped = crop_pixels(whole, [y, x, h, w], size, flip=flip, **options).numpy()
                assert np.array_equal(cropped, expected), ((y, x, h, w), size, flip)
    channels_first = crop_pixels(whole, [10, 20, 30, 40], None, channels_first=True).numpy()
    assert np.array_equal(channels_first, np.transpose(whole.numpy()[10:40, 20:60], (2, 0, 1)))


def test_crop_classes_crop_pixels_through_the_window_their_decode_draws(photo_jpeg):
    whole = tf.io.decode_jpeg(photo_jpeg, channels=3)
    crop = tfliquid.jpeg.crop.RandomResizedCrop()
    for seed in range(8):  # without a size: the window at 8/8, unresized, flipped by half the seeds
        drawn = crop.decode(photo_jpeg, None, [seed, 3]).numpy()
        assert np.array_equal(crop.crop(whole, None, [seed, 3]).numpy(), drawn), seed
    centre = tfliquid.jpeg.crop.CenterCrop(0.5)
    assert np.array_equal(centre.crop(whole, (100, 100)).numpy(), centre.decode(photo_jpeg, (100, 100)).numpy())


def test_crop_pixels_refuses_windows_outside_and_images_not_rgb(photo_jpeg):
    whole = tf.io.decode_jpeg(photo_jpeg, channels=3)
    for window in ([0, 0, 376, 10], [0, 491, 10, 10], [-1, 0, 5, 5], [0, 0, 0, 5]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"photo\.png: window .* is not inside the 375x500"):
            crop_pixels(whole, window, None, context=tf.constant("photo.png"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"image must be RGB \[height, width, 3\]"):
        crop_pixels(whole[..., :1], [0, 0, 5, 5], None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="size must be in 1x1"):
        load = tfliquid._lib.load_ops()
        load.liquid_crop_pixels(whole, tf.constant([0, 0, 5, 5], tf.int64), tf.constant([0, 3], tf.int64), False, "")


def test_a_batch_decode_is_each_images_decode_bit_for_bit(photo_jpeg, zoo):
    kinds = list({**jpeg_samples.jpegs_of_every_kind(photo_jpeg), **zoo}.values())
    seeds = tf.constant([[i, 11] for i in range(len(kinds))], tf.int64)
    random = tfliquid.jpeg.crop.RandomResizedCrop()
    normalised = {"dtype": tf.float32, "mean": IMAGENET_MEAN, "std": IMAGENET_STD, "channels_first": True}
    for crop, options in ((random, normalised), (random, {"dtype": tf.bfloat16}), ("center", {})):
        batch = decode_batch(kinds, (40, 56), crop, seeds, **options).numpy()
        single = tfliquid.jpeg.crop.checked_crop(crop)
        for i, jpeg in enumerate(kinds):
            assert np.array_equal(batch[i], single.decode(jpeg, (40, 56), seeds[i], **options).numpy()), (crop, i)
    whole = decode_batch(kinds, (40, 56)).numpy()  # no crop: the whole image at the size, as decode_size decodes it
    assert whole.shape == (len(kinds), 40, 56, 3)
    for i, jpeg in enumerate(kinds):
        assert np.array_equal(whole[i], decode_jpeg_at_size(jpeg, (40, 56)).numpy()), i


def test_a_batch_decode_names_the_damaged_image_and_checks_its_inputs(photo_jpeg):
    damaged = photo_jpeg[:200]
    contexts = tf.constant(["first.jpg", "second.jpg"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="second.jpg: corrupt JPEG"):
        decode_batch([photo_jpeg, damaged], (32, 32), contexts=contexts)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"seeds must be \[2, 2\] and contexts \[2\]"):
        decode_batch([photo_jpeg, photo_jpeg], (32, 32), "random", tf.zeros([3, 2], tf.int64))
    with pytest.raises(tfliquid.ArgumentError, match="size=\\(height, width\\), not None"):
        decode_batch([photo_jpeg], None)
    with pytest.raises(tfliquid.ArgumentError, match="by contexts= \\(string \\[B\\]\\), not context="):
        decode_batch([photo_jpeg], (8, 8), context=tf.constant("first.jpg"))
    assert decode_batch(tf.zeros([0], tf.string), (8, 8)).shape == (0, 8, 8, 3)


def test_pcr_batches_are_the_batched_images_decoded_by_one_op(photos_pcr):
    def dataset(**options):
        return tfliquid.PCRDataset(photos_pcr, decode_size=(32, 32), seed=4, **options)

    for options in ({"crop": "random", "dtype": tf.float32, "mean": IMAGENET_MEAN, "std": IMAGENET_STD}, {}):
        batched = dataset(batch_size=6, **options)
        assert len(batched) == 3  # 16 images
        expected = list(dataset(**options).batch(6).as_numpy_iterator())
        got = list(batched.as_numpy_iterator())
        assert [len(b["label"]) for b in got] == [6, 6, 4]
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a["image"], b["image"]) and np.array_equal(a["label"], b["label"])
    dropped = dataset(batch_size=6, drop_remainder=True, scan_group=1)
    assert len(dropped) == 2 and [b["image"].shape[0] for b in dropped] == [6, 6]
    with pytest.raises(tfliquid.ArgumentError, match="batch_size decodes batches of images of one size"):
        tfliquid.PCRDataset(photos_pcr, batch_size=6)
