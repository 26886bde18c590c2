"""The list of rejected sources a conversion keeps in its destination (DST/rejected.tsv): every one, with its
reason, named in the report; right after a rerun that converts nothing new, after the user fixes a source, and
after a run that fails midway; the same for PCR, Liquid and L3."""

import io
import os
import shutil

import pytest
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid._common.report import REJECTED_FILENAME, read_rejected
from tfliquid.samples.photos import load_photos, write_image_folder


def _jpeg(photo: Image.Image, side: int = 64) -> bytes:
    out = io.BytesIO()
    photo.convert("RGB").resize((side, side)).save(out, format="JPEG", quality=90)
    return out.getvalue()


def _tiff(photo: Image.Image) -> bytes:
    out = io.BytesIO()
    photo.convert("RGB").resize((48, 48)).save(out, format="TIFF")
    return out.getvalue()


def _bad_sources() -> dict[str, bytes]:
    """25 real bad inputs by name: truncated JPEGs, empty files, text files named .jpg, TIFFs (Pillow's, of the
    shipped photos), and two names with a tab and a newline in them."""
    photos = [photo for _, photo in load_photos()]
    bad = {}
    for i in range(8):
        whole = _jpeg(photos[i % len(photos)])
        bad[f"truncated{i}.jpg"] = whole[: len(whole) // 3 + 7 * i]
    bad.update({f"empty{i}.{'png' if i % 2 else 'jpg'}": b"" for i in range(6)})
    bad.update({f"text{i}.jpg": f"not an image, number {i}\n".encode() for i in range(6)})
    bad.update({f"scan{i}.tiff": _tiff(photos[i]) for i in range(3)})
    bad["tab\there.jpg"] = b"tab"
    bad["new\nline.jpg"] = b""
    return bad


@pytest.fixture(scope="module")
def dirty_folder(tmp_path_factory):
    """10 good JPEGs in 10 classes, and the 25 bad sources spread over the classes."""
    root = tmp_path_factory.mktemp("dirty")
    assert write_image_folder(str(root), images_per_class=1, size=48) == 10
    classes = sorted(os.listdir(root))
    for i, (name, data) in enumerate(_bad_sources().items()):
        (root / classes[i % len(classes)] / name).write_bytes(data)
    return root


def _find(root, name: str):
    (path,) = root.rglob(name)
    return path


def _bad_paths(root) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and not p.name[0].isdigit())


@pytest.mark.slow  # four conversions
def test_every_rejected_source_is_listed_in_the_destination_and_named_in_the_summary(dirty_folder, tmp_path, capsys):
    src, dst = tmp_path / "src", tmp_path / "pcr"
    shutil.copytree(dirty_folder, src)
    command = ["convert", "pcr", str(src), str(dst), "--images-per-record", "4", "--quiet"]
    assert cli.main(command) == 1
    out = capsys.readouterr().out
    listed = read_rejected(str(dst / REJECTED_FILENAME))
    assert [source for source, _ in listed] == _bad_paths(src) and len(listed) == 25
    assert f"  ... and 5 more: all 25 in {dst / REJECTED_FILENAME}" in out.splitlines()
    reasons = dict(listed)
    assert reasons[str(_find(src, "empty0.jpg"))] == "empty file (0 bytes)"
    assert "Premature end of JPEG file" in reasons[str(_find(src, "truncated0.jpg"))]
    assert "a TIFF image, which this conversion does not read" in reasons[str(_find(src, "scan0.tiff"))]
    assert all(reason for reason in reasons.values())

    # A rerun that converts nothing new lists every source still rejected, the same way.
    before = (dst / REJECTED_FILENAME).read_bytes()
    assert cli.main(command) == 1
    assert (dst / REJECTED_FILENAME).read_bytes() == before
    capsys.readouterr()

    # Fixed, or removed: no longer listed. The others still are.
    good = (src / "astronaut" / "0000.jpg").read_bytes()
    fixed = [_find(src, name) for name in ("truncated0.jpg", "empty1.png", "text2.jpg")]
    for path in fixed:
        path.write_bytes(good)
    _find(src, "scan0.tiff").unlink()
    report = tfliquid.pcr.convert(str(src), str(dst), images_per_record=4, progress=False)
    assert report.images == 13 and len(report.failures) == 21
    assert [source for source, _ in read_rejected(str(dst / REJECTED_FILENAME))] == sorted(
        set(_bad_paths(src)) - {str(p) for p in fixed}
    )
    # Nothing rejected (the bad files removed: another plan, which replaces the conversion): no list.
    for source, _ in report.failures:
        os.remove(source)
    report = tfliquid.pcr.convert(str(src), str(dst), images_per_record=4, progress=False, overwrite=True)
    assert not report.failures and report.rejected_list is None and not (dst / REJECTED_FILENAME).exists()


def test_a_run_that_fails_midway_keeps_every_source_still_rejected_listed(dirty_folder, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "pcr"
    shutil.copytree(dirty_folder, src)
    for tiff in src.rglob("*.tiff"):  # rejected before any record is built: this run must fail among the records
        tiff.unlink()
    tfliquid.pcr.convert(str(src), str(dst), images_per_record=2, progress=False)
    first = read_rejected(str(dst / REJECTED_FILENAME))
    assert len(first) == 22
    fixed = _find(src, "truncated0.jpg")
    fixed.write_bytes((src / "astronaut" / "0000.jpg").read_bytes())
    with pytest.raises(tfliquid.ConversionError):
        tfliquid.pcr.convert(str(src), str(dst), images_per_record=2, progress=False, on_error="raise")
    after = read_rejected(str(dst / REJECTED_FILENAME))
    still_bad = {source for source, _ in first} - {str(fixed)}
    assert still_bad <= {source for source, _ in after} <= {source for source, _ in first}
    assert set(after) <= set(first)  # with the reasons found for them


@pytest.mark.slow  # four conversions
def test_liquid_and_l3_list_their_rejects_too(dirty_folder, tmp_path):
    report = tfliquid.liquid.convert(str(dirty_folder), str(tmp_path / "liquid"), formats="png", progress=False)
    listed = read_rejected(str(tmp_path / "liquid" / REJECTED_FILENAME))
    assert [source for source, _ in listed] == _bad_paths(dirty_folder) == sorted(s for s, _ in report.failures)
    assert f"all 25 in {tmp_path / 'liquid' / REJECTED_FILENAME}" in str(report)

    src = tmp_path / "src"
    shutil.copytree(dirty_folder, src)
    report = tfliquid.l3.convert(str(src), str(tmp_path / "l3"), progress=False)
    listed = read_rejected(str(tmp_path / "l3" / REJECTED_FILENAME))
    not_tiffs = [path for path in _bad_paths(src) if not path.endswith(".tiff")]  # L3 reads TIFF
    assert [source for source, _ in listed] == not_tiffs and report.converted == 13
    # A rerun converts nothing new and still lists them all; a fixed source is dropped.
    again = tfliquid.l3.convert(str(src), str(tmp_path / "l3"), progress=False)
    assert (again.converted, again.skipped) == (0, 13) and read_rejected(
        str(tmp_path / "l3" / REJECTED_FILENAME)
    ) == listed
    _find(src, "text0.jpg").write_bytes((src / "astronaut" / "0000.jpg").read_bytes())
    tfliquid.l3.convert(str(src), str(tmp_path / "l3"), progress=False)
    assert [s for s, _ in read_rejected(str(tmp_path / "l3" / REJECTED_FILENAME))] == [
        path for path in not_tiffs if not path.endswith("text0.jpg")
    ]
