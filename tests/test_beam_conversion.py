"""Conversions on Apache Beam (DirectRunner, one worker process per core): the same bytes as the local runner for
PCR, L3 and Liquid datasets; rejections reported the same way; a pipeline killed midway and rerun completes."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from PIL import Image

import tfliquid
from tfliquid._common.errors import ConversionError
from tfliquid._common.report import REJECTED_FILENAME, read_rejected
from tfliquid.samples.photos import write_image_folder, write_tfrecords

pytestmark = pytest.mark.slow

# Files a conversion leaves besides the dataset: the lock, and nothing else once it has finished.
_NOT_DATA = {".tfliquid-lock"}


def dataset_files(root) -> dict[str, bytes]:
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name not in _NOT_DATA:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    files[os.path.relpath(path, root)] = f.read()
    return files


@pytest.fixture(scope="module")
def generated_folder(tmp_path_factory):
    """80 real-photo crops (10 classes), with a PNG and a grey image among the JPEGs."""
    root = tmp_path_factory.mktemp("beam-src")
    write_image_folder(str(root), images_per_class=8, size=64)
    shutil.copy(root / "coffee" / "0000.jpg", root / "coffee" / "copy.jpg")
    from PIL import Image

    Image.open(root / "astronaut" / "0001.jpg").save(root / "astronaut" / "as-png.png")
    Image.open(root / "chelsea" / "0002.jpg").convert("L").save(root / "chelsea" / "grey.jpg")
    return root


@pytest.mark.parametrize(
    "convert, options",
    [
        (tfliquid.pcr.convert, dict(images_per_record=9, seed=3)),
        (tfliquid.liquid.convert, dict(formats="l3,raw,png,jpeg", ratio="4:3:2:1", images_per_record=5, seed=7)),
        (tfliquid.l3.convert, dict(profile="paper")),
    ],
    ids=["pcr", "liquid", "l3"],
)
def test_beam_writes_the_bytes_the_local_runner_writes(generated_folder, tmp_path, convert, options):
    local = convert(str(generated_folder), str(tmp_path / "local"), progress=False, **options)
    beam = convert(str(generated_folder), str(tmp_path / "beam"), progress=False, runner="beam", **options)
    expected = dataset_files(tmp_path / "local")
    assert len(expected) >= 10
    assert dataset_files(tmp_path / "beam") == expected
    assert (beam.converted, beam.files_written, beam.output_bytes) == (
        local.converted,
        local.files_written,
        local.output_bytes,
    )
    assert beam.converted == 83 and not beam.failures
    # A rerun with either runner finds everything complete.
    again = convert(str(generated_folder), str(tmp_path / "beam"), progress=False, **options)
    assert (again.converted, again.skipped) == (0, 83)


def test_beam_reports_rejections_as_local_does(generated_folder, tmp_path):
    source = tmp_path / "with-bad"
    shutil.copytree(generated_folder, source)
    (source / "coffee" / "truncated.jpg").write_bytes((generated_folder / "coffee" / "0001.jpg").read_bytes()[:300])
    (source / "rocket" / "empty.png").write_bytes(b"")
    (source / "rocket" / "notes.png").write_text("not an image")
    Image.open(generated_folder / "rocket" / "0000.jpg").save(source / "rocket" / "scan.tiff")
    local = tfliquid.pcr.convert(str(source), str(tmp_path / "local"), images_per_record=16, progress=False)
    beam = tfliquid.pcr.convert(
        str(source), str(tmp_path / "beam"), images_per_record=16, progress=False, runner="beam"
    )
    assert dataset_files(tmp_path / "beam") == dataset_files(tmp_path / "local")  # rejected.tsv among them
    assert beam.failures == local.failures
    assert read_rejected(str(tmp_path / "beam" / REJECTED_FILENAME)) == sorted(beam.failures)
    reasons = {origin.rsplit("/", 1)[1]: reason for origin, reason in beam.failures}
    assert reasons == {
        "truncated.jpg": "coffee/truncated.jpg: cannot make the JPEG progressive: Premature end of JPEG file (at byte "
        "212)",
        "empty.png": "empty file (0 bytes)",
        "notes.png": "Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required.",
        "scan.tiff": "a TIFF image, which this conversion does not read (it reads JPEG, PNG, GIF, BMP and WebP); "
        "convert it to PNG first",
    }
    # The workers prepare images in parallel: the first rejection found stops the pipeline. (The TIFF, no image of
    # the plan, would stop the run before it.)
    (source / "rocket" / "scan.tiff").unlink()
    with pytest.raises(
        ConversionError, match=r"^the Beam pipeline failed: \S+/(truncated\.jpg|empty\.png|notes\.png): \S"
    ):
        tfliquid.pcr.convert(str(source), str(tmp_path / "raise"), progress=False, runner="beam", on_error="raise")


def test_beam_and_tensorflow_log_on_stderr_only_with_verbose(generated_folder, tmp_path):
    """The CLI on Beam: what Beam and its worker processes log (TensorFlow's start-up lines in each worker among
    it) reaches stderr with --verbose only; without it, a run that succeeds writes nothing there."""
    src = tmp_path / "src"
    for name in ("astronaut", "chelsea"):
        (src / name).mkdir(parents=True)
        shutil.copy(generated_folder / name / "0000.jpg", src / name)

    # As a user runs it: the log level conftest.py sets for the tests' TensorFlow is the user's to choose.
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}

    def convert(dst, *options):
        command = [sys.executable, "-m", "tfliquid", "convert", "pcr", str(src), str(tmp_path / dst), "--quiet"]
        beam = ["--runner", "beam", "--beam-options", "--direct_num_workers=1"]
        return subprocess.run([*command, *beam, *options], capture_output=True, text=True, env=environment)

    quiet = convert("quiet")
    assert quiet.returncode == 0 and "2 converted" in quiet.stdout
    assert quiet.stderr == ""
    verbose = convert("verbose", "--verbose")
    assert verbose.returncode == 0 and "2 converted" in verbose.stdout
    assert "apache_beam" in verbose.stderr, verbose.stderr


def test_beam_run_killed_midway_is_completed_by_a_rerun(tmp_path):
    """The CLI on Beam, killed with SIGKILL (every worker process with it) once records are being written: a rerun,
    with either runner, keeps what was complete and writes the dataset the local runner writes. The source is
    TFRecords: Beam's workers read their images at the offsets the plan located in the file."""
    folder = tmp_path / "folder"
    write_image_folder(str(folder), images_per_class=24, size=96)
    src = tmp_path / "train.tfrecord"
    assert write_tfrecords(str(folder), str(src)) == 240
    options = ["--images-per-record", "4", "--seed", "5", "--verify", "--quiet"]
    command = [sys.executable, "-m", "tfliquid", "convert", "pcr", str(src), str(tmp_path / "beam"), *options]
    beam = ["--runner", "beam", "--beam-options", "--direct_num_workers=2"]  # one flag, as the docs write it
    run = subprocess.Popen([*command, *beam], start_new_session=True, stderr=subprocess.DEVNULL)
    fragments = tmp_path / "beam" / "convert_state.d"
    deadline = time.monotonic() + 300
    while not (fragments.is_dir() and any(fragments.iterdir())) and run.poll() is None:
        assert time.monotonic() < deadline, "no record was written in 300 s"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert run.returncode == -signal.SIGKILL, "the conversion finished before it could be killed"
    assert not (tmp_path / "beam" / "index.pcrindex").exists()
    written = {path.name for path in (tmp_path / "beam" / "records").glob("*.pcr")}
    # Complete and reported: a worker killed between writing a record and reporting it leaves one not counted.
    partial = sum(1 for fragment in fragments.glob("*.json") if fragment.name.removeprefix("records_")[:-5] in written)
    print(f"killed with {len(written)} of 60 records written, {partial} of them reported")
    assert 0 < len(written) < 60 and partial <= len(written)

    # Rerun with the local runner: it keeps Beam's complete records, and removes what the killed pipeline left.
    # (Without --verify, which decodes every image at every scan group: the reruns' bytes are what is compared.)
    options = dict(images_per_record=4, seed=5, progress=False)
    rerun = tfliquid.pcr.convert(str(src), str(tmp_path / "beam"), **options)
    assert rerun.images == 240 and (rerun.files_skipped, rerun.files_written) == (partial, 60 - partial)
    local = tfliquid.pcr.convert(str(src), str(tmp_path / "local"), **options)  # the CLI's options, in process
    assert dataset_files(tmp_path / "beam") == dataset_files(tmp_path / "local")  # no .beam-outcomes left
    assert rerun.failures == local.failures == []
    # Beam resumes as well: two records lost, two written.
    for record in sorted((tmp_path / "beam" / "records").glob("*.pcr"))[:2]:
        record.unlink()
    rerun = tfliquid.pcr.convert(str(src), str(tmp_path / "beam"), runner="beam", **options)
    assert rerun.images == 240 and (rerun.files_skipped, rerun.files_written) == (58, 2)
    assert dataset_files(tmp_path / "beam") == dataset_files(tmp_path / "local")
    dataset = tfliquid.PCRDataset(str(tmp_path / "beam"), shuffle=False)
    assert sum(1 for _ in dataset) == 240


@pytest.mark.parametrize(
    "beam_options, refusal",
    [
        ("--runner=NoSuchRunner", "beam_options: Unexpected pipeline runner: NoSuchRunner. Valid values are "),
        ("--direct_num_worker=2", "beam_options: Beam knows no option --direct_num_worker"),
        ("--runner='DirectRunner", "beam_options cannot be split into flags (No closing quotation)"),
    ],
)
def test_beam_options_beam_would_refuse_or_discard_are_refused_before_anything_is_written(
    generated_folder, tmp_path, capsys, beam_options, refusal
):
    from tfliquid import cli

    dst = tmp_path / "dst"
    command = ["convert", "pcr", str(generated_folder), str(dst), "--runner", "beam", "--beam-options", beam_options]
    assert cli.main(command) == cli.EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tfliquid: error: {refusal}") and not dst.exists()
