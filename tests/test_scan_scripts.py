"""Scan scripts of the PCR conversion: the built-in "fast" one, scripts from a file, re-scripting progressive
inputs, and scripts that are refused. (Byte-identity with jpegtran -scans: ops/tests/jpeg_test.cc.)"""

import shutil

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid import cli
from tfliquid.jpeg import ops as jpeg_ops
from tfliquid.pcr import format as pcr_format

# A refining script for colour images: another ladder than the standard one, still lossless.
REFINING = (
    "0,1,2: 0-0, 0, 1; 0: 1-9, 0, 1; 2: 1-63, 0, 0; 1: 1-63, 0, 0; 0: 10-63, 0, 1; 0,1,2: 0-0, 1, 0; 0: 1-63, 1, 0;"
)


def _convert(src, dst, **kwargs):
    return tfliquid.pcr.convert(str(src), str(dst), progress=False, **kwargs)


def _images(dst) -> dict[bytes, bytes]:
    """Key -> full-fidelity JPEG bytes."""
    ds = tfliquid.PCRDataset(str(dst), decode=False, shuffle=False, with_keys=True)
    return {x["key"]: x["image"] for x in ds.as_numpy_iterator()}


def _scans(jpeg: bytes) -> int:
    return len(jpeg_ops.jpeg_scan_ends(jpeg).numpy())


def test_the_fast_script_is_lossless_with_seven_groups_for_colour_and_five_for_grey(photo_folder, zoo, tmp_path):
    report = _convert(photo_folder, tmp_path / "fast", images_per_record=4, scan_script="fast", verify=True)
    assert report.verified_images == report.images == 16 and report.failures == []
    images = _images(tmp_path / "fast")
    grey = {b"grey/grey.jpg"}
    colour = {
        b"animals/baseline_420.jpg",
        b"animals/baseline_444.jpg",
        b"grey/restart_rows.jpg",
        b"things/odd_size.jpg",
        b"things/flower.jpg",
        b"things/coffee.png",
    }
    assert {_scans(images[k]) for k in grey} == {5} and {_scans(images[k]) for k in colour} == {7}
    assert _scans(images[b"things/progressive.jpg"]) == 10  # progressive inputs keep their own scans
    assert pcr_format.read_index(str(tmp_path / "fast")).num_scan_groups == 10
    assert "scan script: fast" in str(tfliquid.pcr.inspect(str(tmp_path / "fast")))
    for key in colour - {b"things/coffee.png"} | grey:  # the JPEGs' pixels, exactly
        source = (photo_folder / key.decode()).read_bytes()
        np.testing.assert_array_equal(tf.io.decode_jpeg(images[key]), tf.io.decode_jpeg(source))


def test_rescripted_progressive_inputs_get_the_script_losslessly(photo_folder, tmp_path):
    _convert(
        photo_folder, tmp_path / "re", images_per_record=4, scan_script="fast", rescript_progressive=True, verify=True
    )
    images = _images(tmp_path / "re")
    assert _scans(images[b"things/progressive.jpg"]) == 7 and _scans(images[b"grey/progressive_grey.jpg"]) == 5
    assert pcr_format.read_index(str(tmp_path / "re")).num_scan_groups == 7


def test_a_script_file_applies_to_images_of_its_components_and_rejects_the_others(photo_folder, tmp_path):
    script = tmp_path / "refining.scans"
    script.write_text("# luminance first, chroma after, then the last bits\n" + REFINING)
    report = _convert(photo_folder, tmp_path / "custom", images_per_record=4, scan_script=str(script), verify=True)
    assert [(f.split("/")[-1], r) for f, r in report.failures] == [  # the progressive grey one is kept as it is
        (
            "grey.jpg",
            "grey/grey.jpg: cannot make the JPEG progressive: the scan script is for images of 3 components; "
            "this one has 1",
        )
    ]
    images = _images(tmp_path / "custom")
    assert _scans(images[b"animals/china.jpg"]) == 7
    info = tfliquid.pcr.inspect(str(tmp_path / "custom"))
    assert info.scan_script == script.read_text()
    assert "scan script (jpegtran -scans syntax):" in str(info)


@pytest.mark.parametrize(
    "text, message",
    [
        ("0: 1-63, 0, 0; 0: 0-0, 0, 0;", "scan 1: AC coefficients of component 0 before its DC"),
        ("0: 0-0, 0, 1; 0: 1-63, 0, 0;", "coefficient 0 of component 0 is not sent to its last bit"),
        ("0,1,2: 0-0, 0, 0;", "coefficient 1 of component 0 is never sent"),
        ("0: 0-63, 0, 0;", "would make a sequential JPEG"),
        ("zero", "unexpected 'z'"),
    ],
)
def test_an_invalid_or_lossy_script_is_refused_before_anything_is_written(photo_folder, tmp_path, text, message):
    script = tmp_path / "bad.scans"
    script.write_text(text)
    with pytest.raises(tfliquid.ArgumentError, match=f"^scan script: .*{message}"):
        _convert(photo_folder, tmp_path / "dst", scan_script=str(script))
    assert not (tmp_path / "dst").exists()
    with pytest.raises(tfliquid.ArgumentError, match="missing.scans: No such file"):
        _convert(photo_folder, tmp_path / "dst", scan_script=str(tmp_path / "missing.scans"))


def test_another_script_into_the_same_destination_is_another_conversion(photo_folder, tmp_path):
    _convert(photo_folder, tmp_path / "dst", images_per_record=4, scan_script="standard")
    with pytest.raises(tfliquid.ConversionError, match=r"holds another conversion \(scan script standard there, fast"):
        _convert(photo_folder, tmp_path / "dst", images_per_record=4, scan_script="fast")


def test_cli_scan_script(photo_folder, tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    dst = tmp_path / "cli"
    assert (
        cli.main(["convert", "pcr", str(src), str(dst), "--scan-script", "fast", "--rescript-progressive", "--quiet"])
        == 0
    )
    assert cli.main(["inspect", str(dst)]) == 0
    assert "scan script: fast" in capsys.readouterr().out
    assert cli.main(["convert", "pcr", str(src), str(tmp_path / "x"), "--scan-script", "fastest", "--quiet"]) == 2
    assert "scan_script must be 'standard', 'fast' or a file's path; fastest: No such file" in capsys.readouterr().err
