"""Liquid conversion on real photos: exact counts, byte-identical reruns, lossless items, the size prediction,
rejected images, TFRecord sources and the command line."""

import os
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid.liquid import format as liquid_format
from tfliquid.samples import photos as sample_photos


@pytest.fixture(scope="module")
def crops(tmp_path_factory) -> pathlib.Path:
    """120 JPEG crops of the shipped photos (10 classes), 64 pixels a side."""
    root = tmp_path_factory.mktemp("liquid-src") / "crops"
    sample_photos.write_image_folder(str(root), 12, size=64, seed=3)
    return root


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _source_pixels(photo_folder: pathlib.Path, key: bytes) -> np.ndarray:
    contents = (photo_folder / key.decode()).read_bytes()
    image = tf.io.decode_image(contents, expand_animations=False).numpy()
    return np.repeat(image, 3, axis=2) if image.shape[2] == 1 else image[..., :3]


def test_every_format_holds_its_exact_share_and_decodes_to_the_source_pixels(photo_folder, tmp_path):
    dst = tmp_path / "mixed"
    report = tfliquid.liquid.convert(
        str(photo_folder), str(dst), formats="png,raw,l3,jpeg", ratio="4:3:2:1", images_per_record=3, progress=False
    )
    assert report.images == 16 and not report.failures
    manifest = liquid_format.read_manifest(str(dst))
    # 16 x (0.4, 0.3, 0.2, 0.1) = 6.4, 4.8, 3.2, 1.6: the two images left go to the largest remainders
    assert [(f.name, f.num_images) for f in manifest.formats] == [("png", 6), ("raw", 5), ("l3", 3), ("jpeg", 2)]
    items = liquid_format.read_records(str(dst))  # the reference reader checks every CRC and each item's format
    assert sorted(item.key for item in items) == sorted(
        str(p.relative_to(photo_folder)).encode() for p in photo_folder.rglob("*.*")
    )
    for item in items:
        source = (photo_folder / item.key.decode()).read_bytes()
        if item.format == "jpeg":
            assert item.data == source or not tf.io.is_jpeg(source)  # JPEGs are kept as they are
            continue
        if item.format == "raw":
            pixels = liquid_format.decode_raw(item.data)
        elif item.format == "png":
            pixels = tf.io.decode_png(item.data).numpy()
        else:
            pixels = tfliquid.l3.decode_l3(item.data).numpy()
        np.testing.assert_array_equal(pixels, _source_pixels(photo_folder, item.key), err_msg=item.key.decode())


def test_the_same_seed_gives_the_same_bytes_and_another_seed_another_assignment(crops, tmp_path):
    def convert(dst, seed):
        tfliquid.liquid.convert(
            str(crops), str(dst), formats="png,raw", ratio="3:7", images_per_record=16, seed=seed, progress=False
        )
        return _files(dst)

    first, second = convert(tmp_path / "a", 7), convert(tmp_path / "b", 7)
    first.pop("convert_state.json"), second.pop("convert_state.json")
    assert first == second
    assert liquid_format.read_manifest(str(tmp_path / "a")).formats[0].num_images == 36  # exactly 3:7 of 120

    def png_keys(path):
        return {i.key for i in liquid_format.read_records(str(path)) if i.format == "png"}

    convert(tmp_path / "c", 8)
    assert png_keys(tmp_path / "a") != png_keys(tmp_path / "c")


def test_size_is_predicted_within_two_percent_before_writing(crops, tmp_path, monkeypatch):
    from tfliquid.liquid import conversion

    monkeypatch.setattr(conversion, "SIZE_SAMPLE", 24)  # predict from a fifth of the PNGs and L3s, not all
    dst = tmp_path / "sized"
    predicted = tfliquid.liquid.convert(
        str(crops), str(dst), formats="png,l3,raw", ratio="2:2:1", size_only=True, progress=False
    )
    assert not dst.exists()  # nothing written
    assert predicted.prediction.sampled == {"png": 24, "l3": 24, "raw": 0}
    report = tfliquid.liquid.convert(str(crops), str(dst), formats="png,l3,raw", ratio="2:2:1", progress=False)
    written = sum(p.stat().st_size for p in (dst / "records").iterdir())
    assert report.dataset_bytes == written
    assert abs(written / predicted.prediction.total - 1) < 0.02
    assert "against the prediction" in str(report)


def test_a_rerun_keeps_complete_records_and_verify_checks_them_all(tmp_path):
    crops = tmp_path / "crops"
    sample_photos.write_image_folder(str(crops), 3, size=64, seed=3)  # 30 crops: 4 + 4 records (verify is per image)
    dst = tmp_path / "resumed"
    args = dict(formats="l3,raw", ratio="1:1", images_per_record=4, progress=False)
    tfliquid.liquid.convert(str(crops), str(dst), **args)
    record = sorted((dst / "records").iterdir())[0]
    data = bytearray(record.read_bytes())
    data[-5] ^= 0xFF  # a flipped payload byte: the record is rebuilt, not kept
    record.write_bytes(bytes(data))
    report = tfliquid.liquid.convert(str(crops), str(dst), verify=True, **args)
    assert report.files_written == 1 and report.verified_images == 30
    liquid_format.read_records(str(dst))  # every CRC right again


def test_overwrite_leaves_only_the_new_conversions_records(crops, tmp_path):
    dst = tmp_path / "overwritten"
    tfliquid.liquid.convert(str(crops), str(dst), formats="raw", images_per_record=7, progress=False)  # 18 records
    tfliquid.liquid.convert(str(crops), str(dst), formats="raw", images_per_record=40, overwrite=True, progress=False)
    manifest = liquid_format.read_manifest(str(dst))
    listed = {os.path.normpath(r.path) for f in manifest.formats for r in f.records}
    on_disk = {str(p.relative_to(dst)) for p in (dst / "records").iterdir()}
    assert len(listed) == 3 and on_disk == listed


def test_no_old_manifest_is_ever_read_over_new_records(crops, tmp_path):
    """An overwrite removes the old manifest before it writes a record; a manifest over a record another conversion
    wrote (copied back, say) is refused at its read by the identity it lists, even where the sizes agree."""
    dst = tmp_path / "dst"
    tfliquid.liquid.convert(str(crops), str(dst), formats="raw", images_per_record=40, progress=False)
    old_manifest = (dst / liquid_format.MANIFEST_FILENAME).read_bytes()
    failing = tmp_path / "failing"
    shutil.copytree(crops, failing)
    (failing / "astronaut" / "empty.png").write_bytes(b"")
    with pytest.raises(tfliquid.ConversionError, match="empty.png"):
        tfliquid.liquid.convert(
            str(failing),
            str(dst),
            formats="raw",
            images_per_record=40,
            overwrite=True,
            on_error="raise",
            progress=False,
        )
    assert not (dst / liquid_format.MANIFEST_FILENAME).exists()
    changed = tmp_path / "changed"  # one image mirrored: its record keeps its size, not its bytes
    shutil.copytree(crops, changed)
    mirrored = sorted((changed / "astronaut").iterdir())[0]
    Image.open(mirrored).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(mirrored, format="JPEG")
    tfliquid.liquid.convert(str(changed), str(dst), formats="raw", images_per_record=40, overwrite=True, progress=False)
    (dst / liquid_format.MANIFEST_FILENAME).write_bytes(old_manifest)
    with pytest.raises(tf.errors.DataLossError, match=r"records/.*: offset \d+: header CRC32C .* index lists"):
        list(tfliquid.LiquidDataset(str(dst), batch_size=8, decode=False))


def test_unreadable_images_are_rejected_and_listed(crops, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(crops, src)
    victim = sorted((src / "astronaut").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:300])  # truncated JPEG
    (src / "astronaut" / "empty.png").write_bytes(b"")
    report = tfliquid.liquid.convert(str(src), str(tmp_path / "dst"), formats="png,raw", ratio="1:1", progress=False)
    reasons = {os.path.basename(path): reason for path, reason in report.failures}
    assert sorted(reasons) == sorted(["empty.png", victim.name])
    assert reasons["empty.png"] == "empty file (0 bytes)"
    assert report.images == 120 - 1
    assert liquid_format.read_manifest(str(tmp_path / "dst")).num_images == 119


def _dirty_folder(root: pathlib.Path) -> pathlib.Path:
    """A messy image folder, as real data is: grey, RGBA, 16-bit, CMYK, BMP, WebP, GIF, nested, a truncated JPEG,
    an empty PNG and a text file."""
    for name in ("a", "b/nested"):
        (root / name).mkdir(parents=True)
    cat = Image.open(sample_photos.photo_path("skimage", "chelsea.png")).convert("RGB").crop((0, 0, 128, 128))
    cat.save(root / "a" / "ok.jpg", quality=90)
    Image.open(sample_photos.photo_path("skimage", "camera.png")).crop((0, 0, 128, 128)).save(root / "a" / "grey.jpg")
    Image.open(sample_photos.photo_path("skimage", "logo.png")).save(root / "a" / "rgba.png")
    grey = np.asarray(Image.open(sample_photos.photo_path("skimage", "camera.png")))[:64, :64]
    Image.fromarray(grey.astype(np.uint16) * 257).save(root / "a" / "grey16.png")
    cat.convert("CMYK").save(root / "a" / "cmyk.jpg")
    for name in ("cat.bmp", "cat.webp", "nested/deep.jpg"):
        cat.save(root / "b" / name)
    cat.convert("P").save(root / "b" / "palette.gif")
    ok = (root / "a" / "ok.jpg").read_bytes()
    (root / "b" / "truncated.jpg").write_bytes(ok[: len(ok) // 3])
    (root / "b" / "empty.png").write_bytes(b"")
    (root / "b" / "notes.txt").write_text("not an image\n")
    return root


@pytest.mark.slow
def test_the_size_prediction_leaves_out_the_images_the_conversion_rejects(tmp_path):
    src = _dirty_folder(tmp_path / "dirty")
    args = dict(formats="png,raw", ratio="1:1", progress=False)
    prediction = tfliquid.liquid.convert(str(src), str(tmp_path / "dst"), size_only=True, **args).prediction
    report = tfliquid.liquid.convert(str(src), str(tmp_path / "dst"), **args)
    rejected = sorted(origin for origin, _ in report.failures)
    assert sorted(prediction.left_out) == rejected and report.prediction.left_out == prediction.left_out
    assert [pathlib.Path(origin).name for origin in rejected] == ["grey16.png", "empty.png", "truncated.jpg"]
    assert report.images == 8 and abs(report.dataset_bytes / prediction.total - 1) < 0.1


def test_tfrecord_sources_and_grey_datasets(tmp_path):
    tfrecord = tmp_path / "photos.tfrecord"
    sample_photos.write_tfrecords(str(_small_folder(tmp_path)), str(tfrecord))
    dst = tmp_path / "grey"
    tfliquid.liquid.convert(str(tfrecord), str(dst), formats="raw,png", ratio="1:1", channels=1, progress=False)
    manifest = liquid_format.read_manifest(str(dst))
    assert manifest.channels == 1 and manifest.num_images == 20
    ds = tfliquid.LiquidDataset(str(dst), batch_size=4, shuffle=False)
    assert ds.element_spec["image"].shape.as_list() == [None, None, 1]
    assert sum(1 for _ in ds) == 20


def _small_folder(tmp_path) -> pathlib.Path:
    folder = tmp_path / "small"
    sample_photos.write_image_folder(str(folder), 2, size=32, seed=0)
    return folder


def test_bad_arguments_are_refused_before_anything_is_written(crops, tmp_path):
    dst = tmp_path / "never"
    for kwargs in [
        dict(formats="png,gif", ratio="1:1"),
        dict(formats="png,png", ratio="1:1"),
        dict(formats="png,raw"),  # no ratio
        dict(formats="png,raw", ratio="1:2:3"),
        dict(formats="png", channels=4),
        dict(formats="l3", l3_profile="fast"),
    ]:
        with pytest.raises(tfliquid.ArgumentError):
            tfliquid.liquid.convert(str(crops), str(dst), progress=False, **kwargs)
    assert not dst.exists()


def test_command_line_converts_predicts_and_inspects(crops, tmp_path, capsys):
    dst = str(tmp_path / "cli")
    assert cli.main(["convert", "liquid", str(crops), dst, "--formats", "l3,raw", "--ratio", "3:7", "--size-only"]) == 0
    assert "predicted size" in capsys.readouterr().out and not os.path.exists(dst)
    assert cli.main(["convert", "liquid", str(crops), dst, "--formats", "l3,raw", "--ratio", "3:7", "--quiet"]) == 0
    assert "against the prediction" in capsys.readouterr().out
    assert cli.main(["inspect", dst]) == 0
    out = capsys.readouterr().out
    assert "formats l3:raw at ratio 3:7" in out and "l3" in out and "36" in out
    assert cli.main(["convert", "liquid", str(crops), dst, "--formats", "l3,raw"]) == 2  # no ratio: a usage error
    assert "a ratio is needed" in capsys.readouterr().err
