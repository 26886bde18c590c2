"""Conversion jobs under misuse and damage: concurrent runs, damaged or foreign records on resume, destinations
that cannot work, bad source files. Each is refused, repaired or rejected with a message naming the file."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tfliquid
from tfliquid import cli
from tfliquid._common.lock import LOCK_FILENAME
from tfliquid._common.report import ConversionReport
from tfliquid.jpeg.ops import jpeg_to_progressive
from tfliquid.jpeg.sized import decode_jpeg
from tfliquid.pcr import format as pcr_format
from tfliquid.records import job as record_job


def _convert(src, dst, **kwargs):
    return tfliquid.pcr.convert(str(src), str(dst), progress=False, **kwargs)


def _tree_bytes(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _records(dst):
    return sorted((dst / "records").glob("*.pcr"))


_HOLD_LOCK = textwrap.dedent("""
    import sys, time
    from tfliquid._common.lock import DestinationLock
    with DestinationLock(sys.argv[1]):
        print("holding", flush=True)
        time.sleep(60)
""")


def test_a_second_conversion_into_a_held_destination_is_refused_and_a_dead_holder_holds_nothing(photo_folder, tmp_path):
    dst = tmp_path / "dst"
    dst.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(dst)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        with pytest.raises(tfliquid.ConversionError, match=rf"being converted by another process \(pid {holder.pid} "):
            _convert(photo_folder, dst, images_per_record=4)
        assert sorted(p.name for p in dst.iterdir()) == [LOCK_FILENAME]  # nothing written
    finally:
        holder.send_signal(signal.SIGKILL)  # dies holding the lock: the kernel releases it
        holder.wait()
    report = _convert(photo_folder, dst, images_per_record=4)
    assert report.images == 16 and not (dst / LOCK_FILENAME).exists()


def test_resume_repairs_a_damaged_payload_and_a_record_holding_other_images(photo_folder, tmp_path):
    dst = tmp_path / "dst"
    _convert(photo_folder, dst, images_per_record=4)
    original = _tree_bytes(dst)
    first, second = _records(dst)[:2]
    data = bytearray(first.read_bytes())
    data[-10] ^= 0x01  # a payload byte: the header and the size are intact
    first.write_bytes(bytes(data))
    shutil.copy(second, _records(dst)[2])  # a complete, valid record, of the wrong images
    report = _convert(photo_folder, dst, images_per_record=4)
    assert (report.files_written, report.files_skipped) == (2, 2)
    assert _tree_bytes(dst) == original


def test_verify_on_a_rerun_verifies_the_records_it_keeps(photo_folder, tmp_path):
    dst = tmp_path / "dst"
    _convert(photo_folder, dst, images_per_record=4)
    original = _tree_bytes(dst)
    report = _convert(photo_folder, dst, images_per_record=4, verify=True)
    assert (report.files_written, report.files_skipped, report.verified_images) == (0, 4, 16)
    assert _tree_bytes(dst) == original


def test_an_overwrite_stopped_midway_leaves_no_old_index_beside_the_new_records(photo_folder, zoo, tmp_path):
    dst = tmp_path / "dst"
    _convert(photo_folder, dst, images_per_record=4)
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    (src / "things" / "truncated.jpg").write_bytes(zoo["baseline_420"][:600])
    with pytest.raises(tfliquid.ConversionError, match="truncated.jpg"):
        _convert(src, dst, images_per_record=4, seed=1, overwrite=True, on_error="raise")
    assert not (dst / pcr_format.INDEX_FILENAME).exists()
    with pytest.raises(FileNotFoundError, match="is not a PCR dataset"):
        tfliquid.PCRDataset(str(dst))


def _flat_page_with_one_dc_scan_per_component(tmp_path) -> bytes:
    """A flat 1024x768 4:2:0 page whose progressive script sends each component's DC alone (as mozjpeg does): its
    first scan groups code few bits for many blocks."""
    page = tmp_path / "page.ppm"
    Image.new("RGB", (1024, 768), (250, 250, 245)).save(page)
    baseline = subprocess.run(["cjpeg", "-quality", "90", str(page)], check=True, capture_output=True).stdout
    script = tmp_path / "dc_per_component.scans"
    script.write_text("0: 0 0 0 0;\n1: 0 0 0 0;\n2: 0 0 0 0;\n0: 1 63 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n")
    return subprocess.run(["jpegtran", "-scans", str(script)], input=baseline, check=True, capture_output=True).stdout


def test_verify_reads_every_scan_group_as_the_dataset_will(zoo, tmp_path):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "page.jpg").write_bytes(_flat_page_with_one_dc_scan_per_component(tmp_path))
    (src / "a" / "photo.jpg").write_bytes(zoo["baseline_420"])
    report = _convert(src, tmp_path / "dst", verify=True)
    # Whatever the decoder takes, --verify lets nothing into the dataset that PCRDataset cannot read at some scan
    # group as TensorFlow decodes the same bytes; what it refuses is rejected alone, with the scan group.
    assert [reason for _, reason in report.failures if "fails verification at scan group " not in reason] == []
    assert report.images + len(report.failures) == 2 and report.images >= 1
    for g in range(1, pcr_format.read_index(str(tmp_path / "dst")).num_scan_groups + 1):
        dataset = tfliquid.PCRDataset(str(tmp_path / "dst"), scan_group=g, decode=False, shuffle=False)
        for x in dataset:
            np.testing.assert_array_equal(decode_jpeg(x["image"]), tf.io.decode_jpeg(x["image"], channels=3))


def test_an_image_that_fails_verification_is_rejected_alone_and_its_record_written(zoo, tmp_path):
    job = tfliquid.pcr.conversion.PCRJobSpec(90, False, "fast", False, True).job()
    built, report = record_job.BuiltRecord(), ConversionReport(str(tmp_path))
    # b's expected pixels are another image's: what a transcode that changed its pixels would give
    for key, jpeg, expected in [("a.jpg", "baseline_420", "baseline_420"), ("b.jpg", "baseline_444", "china")]:
        progressive, ends = (t.numpy() for t in jpeg_to_progressive(zoo[jpeg], scan_script="fast"))
        prepared = (progressive, ends.tolist(), 0, key.encode(), False, zoo[expected], len(zoo[jpeg]))
        built.add(prepared, f"src/{key}", "reject", report)
    entry = record_job.write_record(built, str(tmp_path), "r.pcr", None, job, True, "reject", report)
    assert report.failures == [
        ("src/b.jpg", "fails verification when read whole: it decodes to other pixels than its source's")
    ]
    assert (entry.num_items, report.converted, report.files_written) == (1, 1, 1)
    assert [x.key for x in pcr_format.decode_record((tmp_path / "r.pcr").read_bytes())] == [b"a.jpg"]
    assert sorted(os.listdir(tmp_path)) == ["r.pcr"]


@pytest.mark.parametrize("inside", [".", "pcr", "deeper/pcr"])
def test_a_destination_in_the_source_folder_is_refused_before_anything_is_written(photo_folder, tmp_path, inside):
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    before = _tree_bytes(src)
    with pytest.raises(tfliquid.ConversionError, match="is inside the source folder"):
        _convert(src, src / inside)
    assert _tree_bytes(src) == before


def test_destinations_and_sources_that_cannot_work_are_one_line_errors(photo_folder, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(tfliquid.ConversionError, match="a_file is a file"):
        _convert(photo_folder, a_file)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(tfliquid.ConversionError, match="empty is an empty folder"):
        _convert(empty, tmp_path / "out1")
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(photo_folder / "animals" / "china.jpg", flat)
    with pytest.raises(tfliquid.ConversionError, match="holds images but no class subfolders"):
        _convert(flat, tmp_path / "out2")
    looped = tmp_path / "looped"
    shutil.copytree(photo_folder, looped)
    os.symlink("loop", looped / "loop")
    with pytest.raises(tfliquid.ConversionError, match="loop: Too many levels of symbolic links"):
        _convert(looped, tmp_path / "out3")
    # A failed run removes the destination it created where it wrote nothing there.
    assert not any((tmp_path / f"out{i}").exists() for i in range(1, 4))


@pytest.mark.parametrize(
    "bad",
    [
        dict(seed=-1),
        dict(seed="1"),
        dict(images_per_record=0),
        dict(quality=101),
        dict(source_format="zip"),
        dict(on_error="ignore"),
    ],
)
def test_invalid_arguments_are_refused_before_anything_is_written(photo_folder, tmp_path, bad):
    with pytest.raises(tfliquid.ArgumentError, match=next(iter(bad))):
        _convert(photo_folder, tmp_path / "dst", **bad)
    assert not (tmp_path / "dst").exists()


def test_what_a_killed_run_left_is_removed_and_the_rerun_completes(photo_folder, tmp_path):
    dst = tmp_path / "dst"
    _convert(photo_folder, dst, images_per_record=4)
    original = _tree_bytes(dst)
    leftovers = [dst / "records" / "pcr-00001.pcr.tmp-99999", dst / "index.pcrindex.tmp-99998", dst / "spool.tmp.tmp"]
    for path in leftovers:
        path.write_bytes(b"half written")
    _convert(photo_folder, dst, images_per_record=4)
    assert _tree_bytes(dst) == original


def test_a_truncated_tfrecord_is_an_error_naming_it_and_leaves_no_spool(tmp_path, photo_folder):
    from tfliquid.samples.photos import write_tfrecords

    path = tmp_path / "train.tfrecord"
    write_tfrecords(str(photo_folder), str(path))
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(tfliquid.ConversionError, match="train.tfrecord: cannot read TFRecords .*truncated"):
        _convert(path, tmp_path / "dst")
    assert not (tmp_path / "dst").exists()  # created by the run, which wrote nothing there


def test_rejected_images_are_listed_with_their_reason_and_make_the_cli_exit_1(photo_folder, tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    (src / "things" / "empty.png").write_bytes(b"")
    (src / "things" / "text.jpg").write_bytes(b"not an image at all")
    status = cli.main(["convert", "pcr", str(src), str(tmp_path / "dst"), "--images-per-record", "4", "--quiet"])
    out, err = capsys.readouterr()
    listed = tmp_path / "dst" / "rejected.tsv"
    assert status == 1 and f"tfliquid: error: 2 images could not be converted (listed in {listed})" in err
    assert f"{src / 'things' / 'empty.png'}: empty file (0 bytes)" in out
    assert f"{src / 'things' / 'text.jpg'}: " in out
    assert pcr_format.read_index(str(tmp_path / "dst")).num_images == 16
    start = time.perf_counter()
    assert cli.main(["convert", "pcr", str(src), str(tmp_path / "fast"), "--fail-fast", "--quiet"]) == 1
    assert "tfliquid: error: " in capsys.readouterr().err and time.perf_counter() - start < 60


def _with_frame_size(jpeg: bytes, height: int, width: int) -> bytes:
    """The JPEG with its frame header (SOF0/1/2) claiming height x width, found segment by segment."""
    at = 2
    while jpeg[at + 1] not in (0xC0, 0xC1, 0xC2):
        at += 2 + int.from_bytes(jpeg[at + 2 : at + 4], "big")
    return jpeg[: at + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + jpeg[at + 9 :]


def test_truncated_corrupt_and_impossible_jpegs_are_rejected_not_stored(photo_folder, zoo, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    bad = {
        "truncated_baseline.jpg": zoo["baseline_420"][: len(zoo["baseline_420"]) * 2 // 3],
        "truncated_progressive.jpg": zoo["progressive"][: len(zoo["progressive"]) * 2 // 3],
        "bomb.jpg": _with_frame_size(zoo["baseline_420"][:631], 15000, 15000),
    }
    for name, data in bad.items():
        (src / "animals" / name).write_bytes(data)
    report = _convert(src, tmp_path / "dst", images_per_record=4)
    reasons = {os.path.basename(source): reason for source, reason in report.failures}
    assert sorted(reasons) == sorted(bad) and report.images == 16
    assert "(at byte " in reasons["truncated_baseline.jpg"]
    assert "corrupt progressive JPEG" in reasons["truncated_progressive.jpg"]
    assert "claims 15000x15000 pixels" in reasons["bomb.jpg"]


def _with_damaged_scan_data(jpeg: bytes) -> bytes:
    """The JPEG with 60 bytes of its entropy-coded data inverted where djpeg then reports "Corrupt JPEG data" (the
    first such place after the first scan's header): damage libjpeg decodes with a warning, not an error."""
    data_start = jpeg.index(b"\xff\xda") + 14
    for start in range(data_start + 100, len(jpeg) - 200, 97):
        damaged = bytearray(jpeg)
        for i in range(start, start + 60):
            damaged[i] = damaged[i] ^ 0xFF if damaged[i] not in (0x00, 0xFF) else damaged[i]  # no new markers
        djpeg = subprocess.run(["djpeg"], input=bytes(damaged), capture_output=True)
        if djpeg.returncode == 2 and b"Corrupt JPEG data" in djpeg.stderr:  # 2: decoded, with warnings
            return bytes(damaged)
    raise AssertionError("no damage that djpeg reports as corrupt data")


def test_a_jpeg_with_damaged_scan_data_is_rejected_by_every_conversion(zoo, tmp_path):
    """libjpeg decodes it, grey where it lost step; djpeg warns; every conversion refuses it as corrupt."""
    src = tmp_path / "src" / "photos"
    src.mkdir(parents=True)
    (src / "damaged.jpg").write_bytes(_with_damaged_scan_data(zoo["baseline_420"]))
    (src / "whole.jpg").write_bytes(zoo["baseline_420"])
    reports = {
        "pcr": tfliquid.pcr.convert(str(src.parent), str(tmp_path / "pcr"), progress=False),
        "liquid": tfliquid.liquid.convert(str(src.parent), str(tmp_path / "liquid"), formats="raw", progress=False),
        "l3": tfliquid.l3.convert(str(src.parent), str(tmp_path / "l3"), progress=False),
    }
    for kind, report in reports.items():
        assert [os.path.basename(origin) for origin, _ in report.failures] == ["damaged.jpg"], kind
        assert "Corrupt JPEG data" in report.failures[0][1] and report.converted == 1, kind


def _png_header_claiming(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height, with no pixel data: what a decompression bomb looks like."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def test_an_image_claiming_too_many_pixels_is_rejected_before_it_is_decoded(photo_folder, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(photo_folder, src)
    (src / "things" / "bomb.png").write_bytes(_png_header_claiming(20000, 20000))  # 1.6 GB if decoded
    report = _convert(src, tmp_path / "dst", images_per_record=4)
    assert [(os.path.basename(f), r) for f, r in report.failures] == [
        ("bomb.png", "the header claims more than 178956970 pixels")
    ]


@pytest.mark.slow
def test_ctrl_c_exits_130_with_one_line_and_no_traceback():
    # TensorFlow's import (3 s), then three policies' simulations of 10^7 accesses each (21 s in all), so that the
    # signal comes well before the end: with one policy, 4 to 7 s in all, a run that had finished its work and was
    # exiting died of the signal (-2) once in CI.
    process = subprocess.Popen(
        [sys.executable, "-m", "tfliquid", "simulate", "cache", "--items", "10000", "--epochs", "1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job may ignore SIGINT
    )
    time.sleep(4)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "tfliquid: interrupted (a conversion resumes when rerun)"


def test_a_record_written_but_not_reported_is_built_again(photo_folder, tmp_path):
    """A Beam worker killed between writing a record and reporting it leaves a complete record that the state does
    not count: a rerun builds it again, and ends with the state and the bytes of an uninterrupted run."""
    options = dict(images_per_record=4, seed=3, progress=False)
    clean = tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "clean"), **options)
    tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "resumed"), **options)
    state_path = tmp_path / "resumed" / record_job.STATE_FILENAME
    state = json.loads(state_path.read_text())
    unreported = sorted(state["lossy"])[1]
    del state["lossy"][unreported]
    state_path.write_text(json.dumps(state))

    rerun = tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "resumed"), **options)
    assert (rerun.files_written, rerun.files_skipped) == (1, clean.files_written - 1)
    for name in (record_job.STATE_FILENAME, unreported, pcr_format.INDEX_FILENAME):
        assert (tmp_path / "resumed" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name
