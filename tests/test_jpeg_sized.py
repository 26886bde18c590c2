"""Decoding at a size with libjpeg's DCT scaling (tfliquid.jpeg.sized, the op Liquid>DecodeJpegScaled): the pixels
of djpeg -scale M/8 -dct fast (libjpeg's own command), the scale chosen from the target and from the scans a
progressive prefix holds, and the resize to exactly the target. At full size (decode_jpeg), the pixels of
tf.io.decode_jpeg, whichever decoder reads the scans (the spectral-selection one for the fast script)."""

import io
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid.jpeg import scans
from tfliquid.jpeg.ops import jpeg_scan_ends, jpeg_to_progressive
from tfliquid.jpeg.sized import decode_jpeg, decode_jpeg_at_size, decode_jpeg_scaled
from tfliquid.samples.photos import photo_path

import jpeg_samples


@pytest.fixture(scope="module")
def photo_jpeg() -> bytes:
    return jpeg_samples.photo_500x375_jpeg()


def _djpeg(jpeg: bytes, eighths: int, tmp_path) -> np.ndarray:
    path = tmp_path / "in.jpg"
    path.write_bytes(jpeg)
    ppm = subprocess.run(
        ["djpeg", "-scale", f"{eighths}/8", "-dct", "fast", "-pnm", str(path)], capture_output=True, check=True
    ).stdout
    return np.asarray(Image.open(io.BytesIO(ppm)).convert("RGB"))


def test_full_size_is_tf_decode_jpeg_bit_for_bit(photo_jpeg):
    progressive = jpeg_to_progressive(photo_jpeg)[0].numpy()
    for jpeg in (photo_jpeg, progressive):
        assert np.array_equal(decode_jpeg_scaled(jpeg, (375, 500)).numpy(), tf.io.decode_jpeg(jpeg).numpy())


def test_decode_jpeg_is_tf_decode_jpeg_bit_for_bit(photo_jpeg):
    for kind, jpeg in jpeg_samples.jpegs_of_every_kind(photo_jpeg).items():
        expected = tf.io.decode_jpeg(jpeg, channels=3).numpy()
        assert np.array_equal(decode_jpeg(jpeg).numpy(), expected), kind
        if "scan group" not in kind:  # whole JPEGs at a size that only the full scale reaches: the same pixels
            assert np.array_equal(decode_jpeg_scaled(jpeg, expected.shape[:2]).numpy(), expected), kind


def test_decode_jpeg_fails_on_damaged_scans_where_libjpeg_does(photo_jpeg):
    """Bytes changed in the entropy-coded data of a fast-script JPEG: the spectral-selection decoder hands what it
    cannot read to libjpeg, which is strict. What decodes is what tf.io.decode_jpeg decodes; the rest fails."""
    fast = jpeg_to_progressive(photo_jpeg, scan_script="fast")[0].numpy()
    failures = decoded = 0
    for damaged in jpeg_samples.damaged_copies(fast, 45, 40):
        try:
            image = decode_jpeg(damaged).numpy()
        except tf.errors.InvalidArgumentError as error:
            assert re.search(r"corrupt JPEG: .*\(at byte \d+\)", error.message), error.message
            failures += 1
            continue
        assert np.array_equal(image, tf.io.decode_jpeg(damaged, channels=3).numpy())
        decoded += 1
    assert failures > 0 and decoded > 0  # both outcomes were met


@pytest.mark.parametrize("eighths", [1, 2, 4, 8])
def test_every_scale_decodes_as_djpeg_does(photo_jpeg, tmp_path, eighths):
    target = (-(-375 * eighths // 8), -(-500 * eighths // 8))  # libjpeg's size at M/8: the smallest that fits
    scaled = decode_jpeg_scaled(photo_jpeg, target).numpy()
    assert scaled.shape == (*target, 3)
    assert np.array_equal(scaled, _djpeg(photo_jpeg, eighths, tmp_path))
    # A target between two scales is decoded at the larger: 3/8 at 4/8, 5/8 to 7/8 at full size.
    between = (target[0] + 1, target[1]) if eighths < 8 else None
    if between:
        assert decode_jpeg_scaled(photo_jpeg, between).shape[0] == -(-375 * 2 * eighths // 8)


def test_a_progressive_prefix_is_decoded_no_finer_than_its_luminance_coefficients(photo_jpeg):
    """The "fast" script: DC; Y 1-2; Y 3-5; Cr; Cb; Y 6-14; Y 15-63. Complete corners of Y's blocks: 1x1 (DC),
    still 1x1 (z 4 missing), 2x2, 2x2, 2x2, 3x3 (decoded at 2/8: the scales are 1, 2, 4 and 8), 8x8."""
    progressive, ends = jpeg_to_progressive(photo_jpeg, scan_script="fast")
    progressive, ends = progressive.numpy(), ends.numpy()
    widths = []
    for end in ends:
        prefix = progressive[:end] + b"\xff\xd9"  # the scans up to `end`, and EOI (PCR's prefix)
        widths.append(decode_jpeg_scaled(prefix, (375, 500)).shape[1])
    assert widths == [-(-500 * m // 8) for m in (1, 1, 2, 2, 2, 2, 8)]


def test_the_resize_is_tf_image_resize_within_rounding(photo_jpeg):
    """At a size that only the full scale reaches (300 > 375 x 4/8), the op's bilinear resize against
    tf.image.resize's of tf.io.decode_jpeg's pixels."""
    image = decode_jpeg_at_size(photo_jpeg, (300, 400)).numpy().astype(int)
    reference = np.round(tf.image.resize(tf.io.decode_jpeg(photo_jpeg), (300, 400)).numpy()).astype(int)
    assert np.abs(image - reference).max() <= 1


@pytest.mark.parametrize("size", [(224, 224), (100, 150), (47, 62), (600, 800)])
def test_at_size_is_the_target_exactly_and_near_decode_then_resize(photo_jpeg, size):
    image = decode_jpeg_at_size(photo_jpeg, size).numpy()
    assert image.shape == (*size, 3) and image.dtype == np.uint8
    reference = tf.image.resize(tf.io.decode_jpeg(photo_jpeg), size, antialias=True).numpy()
    error = np.mean((image.astype(float) - np.round(np.clip(reference, 0, 255))) ** 2)
    assert 10 * np.log10(255**2 / error) > 25  # docs/pcr.md gives the figures


def test_damaged_data_and_bad_targets_are_errors(photo_jpeg):
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"corrupt JPEG: .*\(at byte \d+\)"):
        decode_jpeg_scaled(photo_jpeg[:2000], (64, 64))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"corrupt JPEG: "):
        decode_jpeg_scaled(b"not a jpeg", (64, 64))
    with pytest.raises(tfliquid.ArgumentError, match="decode_size's height must be an int in 1..65535"):
        decode_jpeg_at_size(photo_jpeg, (0, 64))
    with pytest.raises(tfliquid.ArgumentError, match=r"decode_size must be \(height, width\)"):
        decode_jpeg_at_size(photo_jpeg, 224)


def test_a_pcr_dataset_decodes_each_scan_group_at_the_size_asked(photo_folder, tmp_path):
    dst = tmp_path / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=8, progress=False)
    for group in (1, 2, None):
        dataset = tfliquid.PCRDataset(str(dst), scan_group=group, decode_size=(64, 48), shuffle=False)
        assert dataset.element_spec["image"].shape == (64, 48, 3)
        images = [element["image"].numpy() for element in dataset]
        assert len(images) == sum(1 for _ in tfliquid.PCRDataset(str(dst), decode=False))
        assert all(image.shape == (64, 48, 3) for image in images)
    with pytest.raises(tfliquid.ArgumentError, match="decode_size .* needs decode=True"):
        tfliquid.PCRDataset(str(dst), decode=False, decode_size=(64, 64))


def test_pcr_decodes_every_scan_group_to_the_pixels_of_decode_jpeg(photo_folder, tmp_path):
    """PCRDataset(decode=True) at full size: tf.io.decode_jpeg's pixels of each group's progressive JPEG, exactly
    (the fast script's: decoded by the spectral-selection decoder)."""
    dst = tmp_path / "pcr"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=8, progress=False)
    for group in (1, 2, None):
        decoded = tfliquid.PCRDataset(str(dst), scan_group=group, shuffle=False, with_keys=True)
        assert decoded.element_spec["image"] == tf.TensorSpec([None, None, 3], tf.uint8)
        jpegs = tfliquid.PCRDataset(str(dst), scan_group=group, shuffle=False, decode=False, with_keys=True)
        jpeg_of = {x["key"]: x["image"] for x in jpegs.as_numpy_iterator()}
        images = {x["key"]: x["image"] for x in decoded.as_numpy_iterator()}
        assert images.keys() == jpeg_of.keys() and images
        for key, image in images.items():
            assert np.array_equal(image, tf.io.decode_jpeg(jpeg_of[key], channels=3).numpy()), key


def _one_dc_scan_per_component(tmp_path) -> bytes:
    """A flat 4:4:4 page made progressive with one DC scan per component (as mozjpeg writes them): its first two
    scan groups code about a bit for each luminance block and none for the blocks of the components not reached."""
    page = np.full((256, 320, 3), 250, np.uint8)
    page[100:104, 20:300] = 0
    baseline, script = tmp_path / "page.jpg", tmp_path / "scans.txt"
    baseline.write_bytes(tf.io.encode_jpeg(page, quality=90, chroma_downsampling=False).numpy())
    script.write_text("0: 0 0 0 0;\n1: 0 0 0 0;\n2: 0 0 0 0;\n0: 1 63 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n")
    command = ["jpegtran", "-scans", str(script), "-optimize", str(baseline)]
    return subprocess.run(command, capture_output=True, check=True).stdout


def test_prefixes_that_have_not_reached_every_component_decode(tmp_path):
    """The guard against frame headers claiming more blocks than the data codes counts only the blocks of the
    components that the prefix's scans reach; a header far too large for its data is still refused."""
    jpeg = _one_dc_scan_per_component(tmp_path)
    for end in jpeg_scan_ends(jpeg).numpy()[:2]:
        prefix = jpeg[:end] + b"\xff\xd9"
        expected = tf.io.decode_jpeg(prefix, channels=3).numpy()
        assert np.array_equal(decode_jpeg(prefix).numpy(), expected)
        image = decode_jpeg_at_size(prefix, (64, 80)).numpy().astype(float)
        reference = np.round(tf.image.resize(expected, (64, 80), antialias=True).numpy())
        assert np.abs(image - reference).mean() < 2
    huge = bytearray(jpeg[: jpeg_scan_ends(jpeg).numpy()[0]] + b"\xff\xd9")
    sof = huge.index(b"\xff\xc2")
    huge[sof + 5 : sof + 9] = (15000).to_bytes(2, "big") * 2
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"claims 15000x15000 pixels, more than \d+ bytes can code \(at byte {sof}\)",
    ):
        decode_jpeg(bytes(huge))


def test_pcr_reads_the_groups_of_one_dc_scan_per_component(tmp_path):
    (tmp_path / "src" / "page").mkdir(parents=True)
    (tmp_path / "src" / "page" / "page.jpg").write_bytes(_one_dc_scan_per_component(tmp_path))
    dst = str(tmp_path / "pcr")
    tfliquid.pcr.convert(str(tmp_path / "src"), dst, progress=False)
    for group in (1, 2):
        [jpeg] = [x["image"] for x in tfliquid.PCRDataset(dst, scan_group=group, decode=False).as_numpy_iterator()]
        [image] = [x["image"] for x in tfliquid.PCRDataset(dst, scan_group=group).as_numpy_iterator()]
        assert np.array_equal(image, tf.io.decode_jpeg(jpeg, channels=3).numpy())
        [sized] = [x["image"] for x in tfliquid.PCRDataset(dst, scan_group=group, decode_size=(32, 40))]
        assert sized.shape == (32, 40, 3)


def _segments(jpeg: bytes) -> list[bytes]:
    """The marker segments after SOI, in order, each with its scan's entropy-coded data."""
    return [jpeg[offset:end] for offset, _, end in scans._walk(jpeg)]


def test_a_quantisation_table_defined_just_before_its_first_scan(photo_jpeg):
    """Legal (libjpeg takes a component's table when its first scan starts): the prefixes before the chroma's
    first scan lack the chroma's table, and decode as the same prefixes with every table up front."""
    script = "0: 0-0, 0, 0; 0: 1-63, 0, 0; 1,2: 0-0, 0, 0; 1: 1-63, 0, 0; 2: 1-63, 0, 0;"
    progressive, ends = (t.numpy() for t in jpeg_to_progressive(photo_jpeg, scan_script=script))
    segments = _segments(progressive)
    chroma_table = next(s for s in segments if s[1] == 0xDB and s[4] & 15 == 1)
    segments.remove(chroma_table)
    third_scan = [k for k, s in enumerate(segments) if s[1] == 0xDA][2]
    segments.insert(third_scan, chroma_table)
    late = b"\xff\xd8" + b"".join(segments)
    late_ends = jpeg_scan_ends(late).numpy()
    for group in (1, 2, 5):
        prefix, late_prefix = progressive[: ends[group - 1]] + b"\xff\xd9", late[: late_ends[group - 1]] + b"\xff\xd9"
        for size in ((47, 62), (375, 500)):
            expected = decode_jpeg_scaled(prefix, size).numpy()
            assert np.array_equal(decode_jpeg_scaled(late_prefix, size).numpy(), expected), (group, size)


def _flat_chroma_jpeg(height: int, width: int, subsampling: int) -> bytes:
    """A photo crop whose chroma is constant over each 16 x 16 tile (its 4:2:0 chroma blocks code no AC
    coefficient), as a Pillow JPEG (subsampling 0: 4:4:4, 2: 4:2:0)."""
    photo = Image.open(photo_path("skimage", "astronaut.png")).convert("YCbCr").resize((width, height))
    planes = np.asarray(photo).astype(float)
    for y in range(0, height, 16):
        for x in range(0, width, 16):
            planes[y : y + 16, x : x + 16, 1:] = planes[y : y + 16, x : x + 16, 1:].mean(axis=(0, 1)).round()
    out = io.BytesIO()
    Image.fromarray(planes.astype(np.uint8), "YCbCr").save(out, "JPEG", quality=90, subsampling=subsampling)
    return out.getvalue()


@pytest.mark.parametrize(
    "kind, height, width",
    [("grey", 375, 500), ("4:4:4", 375, 500), ("4:2:0", 375, 500), ("grey", 181, 97), ("4:2:0", 203, 141)],
)
def test_a_dc_only_group_decodes_at_one_eighth_as_djpeg(tmp_path, kind, height, width):
    """PCR's scan group 1 (the DC scan) decoded at 1/8 from its DC coefficients alone (docs/formats/pcr.md,
    "Decoding a DC-only group"), against djpeg -scale 1/8 of the whole JPEG: at 1/8 libjpeg reads each luminance
    block's DC alone, and 4:2:0 chroma by a 2 x 2 transform whose AC coefficients are zero here (the chroma is flat
    over each block). Odd sizes included."""
    if kind == "grey":
        out = io.BytesIO()
        Image.open(photo_path("skimage", "camera.png")).convert("L").resize((width, height)).save(out, "JPEG")
        jpeg = out.getvalue()
    else:
        jpeg = _flat_chroma_jpeg(height, width, 0 if kind == "4:4:4" else 2)
    fast, ends = (t.numpy() for t in jpeg_to_progressive(jpeg, scan_script="fast"))
    dc_group = fast[: ends[0]] + b"\xff\xd9"
    expected = _djpeg(fast, 1, tmp_path)
    assert expected.shape[:2] == (-(-height // 8), -(-width // 8))
    for data in (dc_group, fast):  # the whole JPEG takes the DC-only path too where its chroma is 1:1
        decoded = decode_jpeg_scaled(data, (1, 1)).numpy()
        if kind == "4:2:0" and data is fast:
            continue  # its chroma's AC scans are there: libjpeg's 2 x 2 transform reads them (the path it takes)
        assert np.array_equal(decoded, expected), kind
