"""Liquid conversion of sources that cannot be stored exactly: 16-bit PNGs are refused unless reduced to their high
byte (then counted lossy), --verify checks what a declared loss keeps, and the size prediction leaves out the
images whose headers the conversion rejects."""

import io
import pathlib

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid.liquid import format as liquid_format
from tfliquid.samples import photos as sample_photos


@pytest.fixture(scope="module")
def photo(tmp_path_factory) -> np.ndarray:
    """A 96x128 RGB crop of a shipped photograph."""
    _, image = sample_photos.load_photos()[0]
    return np.asarray(image.convert("RGB"))[:96, :128]


def _sixteen_bit(photo: np.ndarray) -> np.ndarray:
    """The photo as 16-bit samples whose low byte varies, so that keeping 8 bits loses something."""
    rng = np.random.default_rng(5)
    return photo.astype(np.uint16) * 256 + rng.integers(0, 256, photo.shape, dtype=np.uint16)


def _folder(root: pathlib.Path, images: dict[str, bytes]) -> pathlib.Path:
    (root / "a").mkdir(parents=True)
    for name, data in images.items():
        (root / "a" / name).write_bytes(data)
    return root


def _stored_pixels(dst: pathlib.Path) -> dict[str, np.ndarray]:
    """Each item's pixels, read by the reference reader and decoded by its format's reference decoder."""
    pixels = {}
    for item in liquid_format.read_records(str(dst)):
        if item.format == "raw":
            pixels[item.key.decode()] = liquid_format.decode_raw(item.data)
        elif item.format == "png":
            pixels[item.key.decode()] = tf.io.decode_png(item.data).numpy()
        else:
            pixels[item.key.decode()] = tfliquid.l3.decode_l3(item.data).numpy()
    return pixels


@pytest.fixture(scope="module")
def mixed_depths(tmp_path_factory, photo) -> pathlib.Path:
    """An 8-bit PNG and a 16-bit RGB PNG of the same photo, and a 16-bit grey one."""
    wide = _sixteen_bit(photo)
    return _folder(
        tmp_path_factory.mktemp("depths"),
        {
            "eight.png": tf.io.encode_png(photo).numpy(),
            "sixteen.png": tf.io.encode_png(wide).numpy(),
            "sixteen_grey.png": tf.io.encode_png(wide[..., :1]).numpy(),
        },
    )


@pytest.mark.parametrize("formats", ["raw", "png", "l3"])
def test_a_16_bit_png_is_refused_with_its_reason_and_left_out_of_the_prediction(mixed_depths, tmp_path, formats):
    report = tfliquid.liquid.convert(str(mixed_depths), str(tmp_path / "out"), formats=formats, progress=False)
    assert report.converted == 1 and report.lossy_images == 0
    refused = {pathlib.Path(origin).name: reason for origin, reason in report.failures}
    assert set(refused) == {"sixteen.png", "sixteen_grey.png"}
    assert all("16-bit samples" in reason and "reduce_16bit" in reason for reason in refused.values())
    assert sorted(pathlib.Path(o).name for o in report.prediction.left_out) == ["sixteen.png", "sixteen_grey.png"]
    assert abs(report.dataset_bytes / report.prediction.total - 1) < 0.2


@pytest.mark.parametrize("formats", ["raw", "png", "l3"])
def test_reduce_16bit_keeps_the_high_byte_counts_the_loss_and_verifies(mixed_depths, photo, tmp_path, formats):
    dst = tmp_path / "out"
    report = tfliquid.liquid.convert(
        str(mixed_depths), str(dst), formats=formats, reduce_16bit=True, verify=True, progress=False
    )
    assert report.converted == 3 and not report.failures
    assert report.lossy_images == 2 and report.verified_images == 3
    assert "2 of them to what the loss below keeps" in str(report)
    stored = _stored_pixels(dst)
    np.testing.assert_array_equal(stored["a/eight.png"], photo)
    np.testing.assert_array_equal(stored["a/sixteen.png"], photo)  # the high byte of each sample
    np.testing.assert_array_equal(stored["a/sixteen_grey.png"], np.repeat(photo[..., :1], 3, axis=2))


def test_the_command_line_takes_reduce_16bit(mixed_depths, tmp_path, capsys):
    def convert(dst, *options):
        return cli.main(["convert", "liquid", str(mixed_depths), str(dst), "--formats", "raw", "--quiet", *options])

    assert convert(tmp_path / "refused") == 1
    assert "16-bit samples" in capsys.readouterr().out
    assert convert(tmp_path / "reduced", "--reduce-16bit", "--verify") == 0
    assert "2 stored with a loss" in capsys.readouterr().out


@pytest.mark.parametrize("formats", ["raw", "png", "l3", "jpeg"])
def test_verify_accepts_what_a_declared_loss_keeps(tmp_path, photo, formats):
    """Dropping alpha, colour (channels=1) or re-encoding as JPEG is a declared loss; --verify checks the rest."""
    alpha = np.full(photo.shape[:2] + (1,), 200, np.uint8)
    src = _folder(
        tmp_path / "src",
        {
            "rgba.png": tf.io.encode_png(np.concatenate([photo, alpha], axis=2)).numpy(),
            "rgb.png": tf.io.encode_png(photo).numpy(),
        },
    )
    for channels in (3, 1):
        dst = tmp_path / f"out{channels}"
        report = tfliquid.liquid.convert(
            str(src), str(dst), formats=formats, channels=channels, verify=True, progress=False
        )
        assert report.converted == 2 and report.verified_images == 2 and not report.failures
        expected_lossy = 2 if channels == 1 or formats == "jpeg" else 1
        assert report.lossy_images == expected_lossy


def _png_with_transparent_colour(pixels: np.ndarray, colour) -> bytes:
    """A grey [H, W] or RGB [H, W, 3] PNG whose tRNS chunk marks `colour` transparent."""
    written = io.BytesIO()
    Image.fromarray(pixels).save(written, format="PNG", transparency=colour)
    return written.getvalue()


def test_a_dropped_transparent_colour_is_a_declared_loss(tmp_path, photo):
    """Liquid holds no alpha: a grey or RGB PNG with a transparent colour (tRNS) keeps its colours, counted lossy
    at either channel count; --verify checks the colours. 7 images in 3 formats: each format holds 2 or 3 of
    them, so at least one with a transparent colour."""
    grey = photo[..., 1]
    images = {"grey.png": tf.io.encode_png(grey[..., None]).numpy()}
    for i in range(3):
        images[f"grey_transparent{i}.png"] = _png_with_transparent_colour(grey, int(grey[i, 0]))
        images[f"rgb_transparent{i}.png"] = _png_with_transparent_colour(photo, tuple(int(v) for v in photo[i, 0]))
    src = _folder(tmp_path / "src", images)
    for channels in (1, 3):
        dst = tmp_path / f"out{channels}"
        report = tfliquid.liquid.convert(
            str(src), str(dst), formats="raw,png,l3", ratio="1:1:1", channels=channels, verify=True, progress=False
        )
        assert report.converted == 7 and report.verified_images == 7 and not report.failures
        assert report.lossy_images == 6 and "6 stored with a loss (alpha or a transparent colour" in str(report)
        stored = _stored_pixels(dst)
        for i in range(3):
            np.testing.assert_array_equal(stored[f"a/grey_transparent{i}.png"], np.dstack([grey] * channels))
    for name in images:  # in the 3-channel dataset: what Pillow's RGBA conversion holds, less the alpha
        with Image.open(src / "a" / name) as image:
            np.testing.assert_array_equal(stored[f"a/{name}"], np.asarray(image.convert("RGBA"))[..., :3])


def test_pcr_verify_checks_the_jpeg_a_png_became(tmp_path, photo):
    src = _folder(tmp_path / "src", {"rgb.png": tf.io.encode_png(photo).numpy()})
    report = tfliquid.pcr.convert(str(src), str(tmp_path / "out"), verify=True, progress=False)
    assert report.converted == 1 and report.verified_images == 1 and report.lossy_images == 1


def test_the_size_prediction_leaves_out_headers_the_conversion_rejects(tmp_path, photo):
    """A PNG header claiming 12000x12000 in a few KB and PNG signatures followed by garbage would predict hundreds
    of MB (or petabytes) if the headers were trusted."""
    rng = np.random.default_rng(9)
    crops = {f"crop{i}.png": tf.io.encode_png(photo[i : i + 64, i : i + 64]).numpy() for i in range(12)}
    good = crops["crop0.png"]
    liar = good[:16] + (12000).to_bytes(4, "big") * 2 + good[24:]
    garbage = {f"garbage{i}.png": b"\x89PNG\r\n\x1a\n" + rng.bytes(40) for i in range(3)}
    src = _folder(tmp_path / "src", {**crops, "liar.png": liar, **garbage})
    dst = tmp_path / "out"
    prediction = tfliquid.liquid.convert(str(src), str(dst), formats="raw", size_only=True, progress=False).prediction
    assert sorted(pathlib.Path(o).name for o in prediction.left_out) == [
        "garbage0.png",
        "garbage1.png",
        "garbage2.png",
        "liar.png",
    ]
    assert prediction.total == pytest.approx(12 * (16 + 64 * 64 * 3), rel=0.05)
    assert "4 images not counted" in str(prediction)
