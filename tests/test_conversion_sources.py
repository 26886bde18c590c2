"""What a conversion makes of its source: every file of an image folder converted, rejected with why, or ignored
as documented (hidden files, files that are no image by their extension); the classes and labels of folders and
of TFRecords (ImageNet's labels from 1, TFDS-style keys, no labels), said as they are."""

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid.pcr import format as pcr_format
from tfliquid.samples.photos import load_photos


def _photo_bytes(index: int, image_format: str, side: int = 64) -> bytes:
    out = io.BytesIO()
    load_photos()[index][1].resize((side, side)).save(out, format=image_format)
    return out.getvalue()


@pytest.fixture(scope="module")
def messy_folder(tmp_path_factory):
    """Two classes of JPEGs, a TIFF made by Pillow from a shipped photo, an image beside the class folders, and
    what a real folder holds besides: a README, notes, hidden files."""
    root = tmp_path_factory.mktemp("messy")
    for name in ("cats", "dogs"):
        (root / name).mkdir()
    (root / "cats" / "a.jpg").write_bytes(_photo_bytes(0, "JPEG"))
    (root / "cats" / "scan.tiff").write_bytes(_photo_bytes(1, "TIFF"))
    (root / "dogs" / "b.JPG").write_bytes(_photo_bytes(2, "JPEG"))
    (root / "stray.png").write_bytes(_photo_bytes(3, "PNG"))
    (root / "README.md").write_text("photos\n")
    (root / "dogs" / "notes.txt").write_text("not an image\n")
    (root / "dogs" / ".DS_Store").write_bytes(b"\0\1\2")
    (root / "cats" / "._a.jpg").write_bytes(b"\0\5\0\7")  # macOS metadata beside a.jpg
    return root


@pytest.mark.slow  # three conversions
def test_tiff_and_stray_images_are_rejected_with_why_and_the_rest_ignored_as_documented(messy_folder, tmp_path):
    expected = [
        (
            str(messy_folder / "cats" / "scan.tiff"),
            "a TIFF image, which this conversion does not read (it reads JPEG, PNG, GIF, BMP and WebP); convert it "
            "to PNG first",
        ),
        (
            str(messy_folder / "stray.png"),
            "not in a class subfolder: images go in one subfolder per class (SRC/CLASS/IMAGE)",
        ),
    ]
    pcr = tfliquid.pcr.convert(str(messy_folder), str(tmp_path / "pcr"), progress=False)
    liquid = tfliquid.liquid.convert(str(messy_folder), str(tmp_path / "liquid"), formats="png", progress=False)
    for report in (pcr, liquid):
        assert sorted(report.failures) == expected and report.converted == 2
    l3 = tfliquid.l3.convert(str(messy_folder / "cats"), str(tmp_path / "l3"), progress=False)
    assert (l3.converted, l3.failures) == (2, [])  # L3 reads TIFF
    decoded = tfliquid.l3.decode_l3((tmp_path / "l3" / "scan.l3").read_bytes()).numpy()
    np.testing.assert_array_equal(decoded, np.asarray(Image.open(messy_folder / "cats" / "scan.tiff")))


def test_a_folder_of_nothing_readable_says_what_it_rejected(tmp_path):
    (tmp_path / "src" / "scans").mkdir(parents=True)
    (tmp_path / "src" / "scans" / "page.tif").write_bytes(_photo_bytes(0, "TIFF"))
    with pytest.raises(tfliquid.ConversionError, match=r"no images .* 1 files rejected, e.g. \S+page.tif: a TIFF"):
        tfliquid.pcr.convert(str(tmp_path / "src"), str(tmp_path / "dst"), progress=False)


def test_an_empty_class_folder_keeps_its_label_and_the_report_says_so(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / "src" / name).mkdir(parents=True)
    (tmp_path / "src" / "a" / "x.jpg").write_bytes(_photo_bytes(0, "JPEG"))
    (tmp_path / "src" / "c" / "y.jpg").write_bytes(_photo_bytes(1, "JPEG"))
    report = tfliquid.pcr.convert(str(tmp_path / "src"), str(tmp_path / "dst"), progress=False)
    assert report.notes == [
        "1 class folder without images (b): each still a class, so that every label stays its folder's position "
        "(label 1)"
    ]
    assert "\n  1 class folder without images (b)" in str(report)
    index = pcr_format.read_index(str(tmp_path / "dst"))
    assert (list(index.class_names), index.num_classes) == (["a", "b", "c"], 3)
    dataset = tfliquid.PCRDataset(str(tmp_path / "dst"), with_keys=True, decode=False)
    labels = {x["key"]: x["label"] for x in dataset.as_numpy_iterator()}
    assert labels == {b"a/x.jpg": 0, b"c/y.jpg": 2}


def _example(image: bytes, **features) -> bytes:
    feature = {"image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image]))}
    for name, value in features.items():
        name = name.replace("__", "/")
        if isinstance(value, int):
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        else:
            feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write(path, examples) -> str:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for example in examples:
            writer.write(example)
    return str(path)


def test_imagenet_labels_from_one_are_counted_as_a_classifier_needs_and_said_so(tmp_path, capsys):
    names = ["cat", "dog", "owl"]
    src = _write(
        tmp_path / "train.tfrecord",
        [
            _example(
                _photo_bytes(i, "JPEG", 48), image__class__label=i % 3 + 1, image__class__text=names[i % 3].encode()
            )
            for i in range(6)
        ],
    )
    report = tfliquid.pcr.convert(src, str(tmp_path / "pcr"), progress=False)
    assert report.notes == ["labels 1..3, 3 distinct: num_classes 4 counts 0..3, and no image has label 0"]
    assert pcr_format.read_index(str(tmp_path / "pcr")).num_classes == 4
    assert cli.main(["inspect", str(tmp_path / "pcr")]) == 0
    assert "6 images, 1 record, labels 0..3 (no class names) (source: TFRecords" in capsys.readouterr().out


def test_unlabelled_records_are_refused_naming_the_label_key_or_converted_with_label_minus_one(tmp_path, capsys):
    src = _write(tmp_path / "nolabel.tfrecord", [_example(_photo_bytes(i, "JPEG", 48)) for i in range(3)])
    with pytest.raises(tfliquid.ConversionError) as refused:
        tfliquid.pcr.convert(src, str(tmp_path / "refused"), progress=False)
    assert str(refused.value) == (
        f"{src}: example 0 has no int64 feature 'image/class/label': set the label key to the feature that holds "
        "the labels, or to '' to convert without labels (every label -1)"
    )
    assert not (tmp_path / "refused").exists()
    assert cli.main(["convert", "pcr", src, str(tmp_path / "pcr"), "--label-key", "", "--quiet"]) == 0
    assert "no labels: every label is -1" in capsys.readouterr().out
    dataset = tfliquid.PCRDataset(str(tmp_path / "pcr"), decode=False)
    assert [x["label"] for x in dataset.as_numpy_iterator()] == [-1, -1, -1]
    assert pcr_format.read_index(str(tmp_path / "pcr")).num_classes == 0
