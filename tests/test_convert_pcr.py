"""The PCR conversion job: lossless transcoding, TFRecord sources, determinism, resuming, verification, CLI."""

import subprocess

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid import cli
from tfliquid.jpeg import ops as jpeg_ops
from tfliquid.jpeg import scans as jpeg_format
from tfliquid.pcr import format as pcr_format


def test_cpp_scan_split_matches_the_reference(zoo):
    for name, data in zoo.items():
        assert jpeg_ops.jpeg_scan_ends(data).numpy().tolist() == jpeg_format.scan_ends(data), name
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset 0: no SOI marker"):
        jpeg_ops.jpeg_scan_ends(b"PNG....")


@pytest.mark.parametrize("keep_markers, copy", [(False, "none"), (True, "all")])
def test_transcode_is_jpegtran_byte_for_byte(zoo_paths, keep_markers, copy):
    for name, path in zoo_paths.items():
        if name.startswith("progressive"):
            continue
        expected = subprocess.run(
            ["jpegtran", "-progressive", "-optimize", "-copy", copy, str(path)], check=True, capture_output=True
        ).stdout
        progressive, ends = jpeg_ops.jpeg_to_progressive(
            path.read_bytes(), name, keep_markers=keep_markers, scan_script="standard"
        )
        assert progressive.numpy() == expected, name
        assert ends.numpy().tolist() == jpeg_format.scan_ends(expected)
        np.testing.assert_array_equal(tf.io.decode_jpeg(progressive), tf.io.decode_jpeg(path.read_bytes()))


def test_progressive_input_is_kept_and_garbage_named(zoo):
    progressive, _ = jpeg_ops.jpeg_to_progressive(zoo["progressive_six_scans"])
    assert progressive.numpy() == zoo["progressive_six_scans"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="cats/broken.jpg: cannot make the JPEG progressive"):
        jpeg_ops.jpeg_to_progressive(zoo["baseline_420"][:200], "cats/broken.jpg")


def test_exif_is_kept_on_request(zoo):
    dropped, _ = jpeg_ops.jpeg_to_progressive(zoo["metadata"])
    kept, _ = jpeg_ops.jpeg_to_progressive(zoo["metadata"], keep_markers=True)
    assert b"Exif\x00\x00" in zoo["metadata"] and b"Exif\x00\x00" not in dropped.numpy()
    first_partial = jpeg_format.split_partials(kept.numpy())[0]
    assert b"Exif\x00\x00" in first_partial and b"ICC_PROFILE" in first_partial


def _convert(src, dst, **kwargs):
    kwargs.setdefault("progress", False)
    return tfliquid.pcr.convert(str(src), str(dst), **kwargs)


def _tree_bytes(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_folder_conversion_is_verified_deterministic_and_counts_lossy_images(photo_folder, tmp_path):
    report = _convert(photo_folder, tmp_path / "a", images_per_record=5, seed=3, verify=True)
    assert (report.images, report.files_written, report.files_skipped) == (16, 4, 0)
    assert report.lossy_images == 2 and report.verified_images == 16
    _convert(photo_folder, tmp_path / "b", images_per_record=5, seed=3)
    assert _tree_bytes(tmp_path / "a") == _tree_bytes(tmp_path / "b")
    _convert(photo_folder, tmp_path / "c", images_per_record=5, seed=4)
    assert (tmp_path / "a/records/pcr-00000.pcr").read_bytes() != (tmp_path / "c/records/pcr-00000.pcr").read_bytes()
    index = pcr_format.read_index(str(tmp_path / "a"))
    assert list(index.class_names) == ["animals", "grey", "things"]
    assert [r.num_images for r in index.records] == [5, 5, 5, 1]


def test_resume_skips_complete_records_and_redoes_broken_ones(photo_folder, tmp_path):
    dst = tmp_path / "out"
    _convert(photo_folder, dst, images_per_record=4)
    original = _tree_bytes(dst)
    (dst / "records/pcr-00001.pcr").unlink()  # never written
    data = (dst / "records/pcr-00002.pcr").read_bytes()
    (dst / "records/pcr-00002.pcr").write_bytes(data[: len(data) // 2])  # half written by a crashed writer
    (dst / "index.pcrindex").unlink()
    report = _convert(photo_folder, dst, images_per_record=4)
    assert (report.files_written, report.files_skipped, report.lossy_images) == (2, 2, 2)
    assert _tree_bytes(dst) == original
    assert _convert(photo_folder, dst, images_per_record=4).files_written == 0  # idempotent
    # One line saying what differs, in words both the command line's and Python's users read as theirs.
    with pytest.raises(tfliquid.ConversionError) as refused:
        _convert(photo_folder, dst, images_per_record=3)
    assert str(refused.value) == (
        f"{dst} holds another conversion (images per record 4 there, 3 now); use another destination, or the "
        "overwrite option to replace it"
    )
    assert _convert(photo_folder, dst, images_per_record=3, overwrite=True).files_written == 6


def test_a_corrupt_image_is_rejected_and_listed_or_stops_the_run_with_fail_fast(photo_folder, tmp_path):
    src = tmp_path / "src"
    (src / "ok").mkdir(parents=True)
    for i, name in enumerate(["animals/china.jpg", "things/flower.jpg"]):
        (src / "ok" / f"{i}.jpg").write_bytes((photo_folder / name).read_bytes())
    (src / "ok" / "2.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a jpeg")
    report = _convert(src, tmp_path / "dst", images_per_record=2, seed=0)
    assert report.images == 2 and [(f, "not a jpeg" in r or "JPEG" in r) for f, r in report.failures] == [
        (str(src / "ok" / "2.jpg"), True)
    ]
    assert f"{src / 'ok' / '2.jpg'}: " in str(report)
    keys = sorted(
        x["key"] for x in tfliquid.PCRDataset(str(tmp_path / "dst"), decode=False, with_keys=True).as_numpy_iterator()
    )
    assert keys == [b"ok/0.jpg", b"ok/1.jpg"]
    with pytest.raises(tfliquid.ConversionError, match="ok/2.jpg"):
        _convert(src, tmp_path / "fast", images_per_record=1, seed=0, on_error="raise")
    assert not list((tmp_path / "fast/records").glob("*.tmp-*"))  # no half-written files left behind


def _write_tfrecords(path, photo_folder, compression):
    files = sorted(photo_folder.rglob("*.jpg"))
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for label, f in enumerate(files):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f.read_bytes()])),
                        "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                        "image/filename": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f.name.encode()])),
                    }
                )
            )
            writer.write(example.SerializeToString())
    return files


@pytest.mark.parametrize("compression, suffix", [("", ".tfrecord"), ("GZIP", ".tfrecord.gz"), ("ZLIB", ".tfrecord.zz")])
def test_tfrecord_sources(photo_folder, tmp_path, compression, suffix):
    files = _write_tfrecords(tmp_path / f"train{suffix}", photo_folder, compression)
    report = _convert(tmp_path / f"train{suffix}", tmp_path / "pcr", images_per_record=4, verify=True)
    assert report.images == len(files) == 14 and report.lossy_images == 0
    got = {bytes(x["key"]): x for x in tfliquid.PCRDataset(str(tmp_path / "pcr"), with_keys=True).as_numpy_iterator()}
    for label, f in enumerate(files):
        assert int(got[f.name.encode()]["label"]) == label
        np.testing.assert_array_equal(got[f.name.encode()]["image"], tf.io.decode_jpeg(f.read_bytes(), channels=3))
    assert not (tmp_path / "pcr" / "spool.tmp").exists()


def test_tfrecord_wrong_keys_are_a_clear_error(photo_folder, tmp_path):
    _write_tfrecords(tmp_path / "train.tfrecord", photo_folder, "")
    with pytest.raises(tfliquid.ConversionError, match="image key .jpeg."):
        _convert(tmp_path / "train.tfrecord", tmp_path / "pcr", image_key="jpeg")


def test_cli_convert_and_inspect(photo_folder, tmp_path, capsys):
    dst = tmp_path / "cli"
    assert (
        cli.main(["convert", "pcr", str(photo_folder), str(dst), "--images-per-record", "8", "--quiet", "--verify"])
        == 0
    )
    assert "16 images in 2 records" in capsys.readouterr().out
    assert cli.main(["inspect", str(dst)]) == 0
    out = capsys.readouterr().out
    assert "16 images, 2 records, 3 classes" in out and "100.0%" in out
    rows = [line.split() for line in out.splitlines()[3:]]  # after the summary, the script and the heading
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    percents = [float(r[2].rstrip("%")) for r in rows]
    assert percents == sorted(percents) and percents[0] < 20
    assert cli.main(["inspect", str(tmp_path)]) == 2
    assert "is neither a PCR dataset" in capsys.readouterr().err
