"""The `tfliquid` command as a whole: its exit statuses, its options' mapping onto the Python functions it wraps,
--version and --help, and a stdout closed early. Each command's own behaviour is tested beside its function's."""

import os

import pytest

import tfliquid
from tfliquid import cli
from tfliquid.samples.photos import write_image_folder


@pytest.fixture(scope="module")
def crops(tmp_path_factory):
    """An image folder of 2 JPEG crops per class of every shipped photo, each 48x48."""
    root = tmp_path_factory.mktemp("cli") / "crops"
    write_image_folder(str(root), 2, size=48, seed=3)
    return root


def test_convert_l3_to_a_bare_file_name(crops, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = os.path.join(crops, sorted(os.listdir(crops))[0], "0000.jpg")
    report = tfliquid.l3.convert(source, "scan.l3", progress=False)
    assert report.converted == 1 and (tmp_path / "scan.l3").is_file()
    assert cli.main(["convert", "l3", source, "again.l3", "--quiet"]) == 0
    assert (tmp_path / "again.l3").read_bytes() == (tmp_path / "scan.l3").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["again.l3", "scan.l3"]  # no lock or temporary file left behind
