"""What the PCR conversion's transcode must keep or refuse so that full fidelity is the source's pixels: the colour
signalling of the source, progressive sources whose scans leave coefficients out, and the memory cap."""

import io
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.jpeg.ops import jpeg_to_progressive
from tfliquid.samples.photos import photo_path

ADOBE = b"\xff\xee\x00\x0eAdobe"  # the Adobe APP14 segment libjpeg writes


def _segments_without(jpeg: bytes, marker: int) -> bytes:
    """The JPEG without its header segments of `marker` (walked segment by segment up to the first scan)."""
    out, at = bytearray(jpeg[:2]), 2
    while jpeg[at + 1] != 0xDA:
        end = at + 2 + int.from_bytes(jpeg[at + 2 : at + 4], "big")
        if jpeg[at + 1] != marker:
            out += jpeg[at:end]
        at = end
    return bytes(out + jpeg[at:])


def _photo(mode: str, side: int = 96) -> Image.Image:
    image = Image.open(photo_path("skimage", "coffee.png")).convert(mode)
    image.thumbnail((side, side))
    return image


def _pillow_jpeg(image: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90, **options)
    return out.getvalue()


def _convert_and_read_one(tmp_path, name: str, jpeg: bytes, **options):
    """(conversion report, the image's full-fidelity pixels or None) of a dataset of this one JPEG."""
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / name).write_bytes(jpeg)
    dst = tmp_path / "pcr"
    try:
        report = tfliquid.pcr.convert(str(tmp_path / "src"), str(dst), progress=False, **options)
    except tfliquid.ConversionError as e:
        return str(e), None
    return report, next(iter(tfliquid.PCRDataset(str(dst), shuffle=False)))["image"].numpy()


@pytest.mark.parametrize("adobe", [False, True])
def test_a_cmyk_jpeg_reads_back_as_its_source_with_or_without_an_adobe_marker(tmp_path, adobe):
    jpeg = _pillow_jpeg(_photo("CMYK"))  # Pillow writes an Adobe marker (inverted inks, as Photoshop does)
    if not adobe:  # a plain CMYK JPEG: decoders read its inks as they are
        jpeg = _segments_without(jpeg, 0xEE)
    assert (ADOBE in jpeg) == adobe
    progressive = jpeg_to_progressive(jpeg, scan_script="fast")[0].numpy()
    assert (ADOBE in progressive) == adobe
    _, image = _convert_and_read_one(tmp_path, "cmyk.jpg", jpeg, verify=True)
    np.testing.assert_array_equal(image, tf.io.decode_jpeg(jpeg, channels=3))


def _incomplete_progressive(tmp_path) -> bytes:
    """A legal progressive JPEG whose script sends every DC but only luma coefficients 1-5: its decoders smooth the
    blocks over the coefficients never sent."""
    baseline = tmp_path / "baseline.jpg"
    baseline.write_bytes(_pillow_jpeg(_photo("RGB", 61)))
    script = tmp_path / "incomplete.scans"
    script.write_text("0 1 2: 0 0 0 0;\n0: 1 5 0 0;\n")
    return subprocess.run(["jpegtran", "-scans", str(script), str(baseline)], check=True, capture_output=True).stdout


def test_rescripting_refuses_a_progressive_source_that_leaves_coefficients_out(tmp_path):
    jpeg = _incomplete_progressive(tmp_path)
    expected = tf.io.decode_jpeg(jpeg, channels=3).numpy()
    with pytest.raises(tf.errors.InvalidArgumentError, match="its scans leave coefficients out"):
        jpeg_to_progressive(jpeg, "incomplete.jpg", scan_script="fast", rescript_progressive=True)
    message, _ = _convert_and_read_one(tmp_path / "rescripted", "incomplete.jpg", jpeg, rescript_progressive=True)
    assert "incomplete.jpg: " in message and "keep its own scans" in message
    report, image = _convert_and_read_one(tmp_path / "kept", "incomplete.jpg", jpeg)
    assert not report.failures
    np.testing.assert_array_equal(image, expected)


def _arithmetic_jpeg_claiming(height: int, width: int) -> bytes:
    """A tiny arithmetic-coded 4:2:0 JPEG whose frame header (SOF9) claims height x width pixels."""
    baseline = _pillow_jpeg(Image.new("RGB", (16, 16), (90, 120, 150)))
    jpeg = subprocess.run(["jpegtran", "-arithmetic"], input=baseline, check=True, capture_output=True).stdout
    at = jpeg.index(b"\xff\xc9")
    return jpeg[: at + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + jpeg[at + 9 :]


def test_a_transcode_whose_coefficients_would_pass_the_memory_cap_is_refused_before_reading_them():
    # 16000 x 16000 at 4:2:0: 6 million blocks, 768 MB of coefficients (under libjpeg's 1 GiB cap alone), which
    # the transcode would hold twice.
    jpeg = _arithmetic_jpeg_claiming(16000, 16000)
    assert len(jpeg) < 1000
    with pytest.raises(tf.errors.InvalidArgumentError, match="Insufficient memory: .* 16000x16000 pixels"):
        jpeg_to_progressive(jpeg, "huge.jpg")
