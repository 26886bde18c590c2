"""The L3 decoder's fuzz targets run for a bounded time without a finding: the C++ codec under ASan/UBSan
(ops/tests/l3_fuzz.sh) and, when atheris is installed, the decode op against the reference decoder
(tests/fuzz_decode_l3.py). Findings are saved for replay: see those two files.

30 s (two builds side by side, 20 s of wall time) and 500 atheris inputs (about 12 s): with the sanitized build
(10-20 s, free when ccache has it) and TensorFlow's import, the file takes under a minute on two cores."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

import l3_fuzz_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ATHERIS_RUNS = 500  # about 12 s on two idle cores


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("l3_seeds")
    l3_fuzz_seeds.write_seeds(directory)
    return directory


@pytest.mark.slow
def test_cpp_decoder_survives_mutants_under_sanitizers(seed_dir):
    result = subprocess.run(
        ["bash", os.path.join(ROOT, "ops", "tests", "l3_fuzz.sh"), "30", str(seed_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summaries = re.findall(
        r"l3_fuzz: (\d+) iterations in .* (\d+) decode rejected, (\d+) decoded and round-tripped", result.stdout
    )
    assert len(summaries) == 2, result.stdout  # the SIMD build, then the scalar one
    for iterations, rejected, decoded in (map(int, summary) for summary in summaries):
        assert iterations >= 2000, result.stdout
        # The mutants get past the header checks into Decode, and both out of it and through the round trip.
        assert rejected >= iterations // 10 and decoded >= iterations // 20, result.stdout
    assert result.stdout.count("l3_fuzz: no crash") == 2, result.stdout


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed")
def test_decode_op_agrees_with_the_reference_under_atheris(seed_dir, tmp_path):
    corpus = tmp_path / "corpus"  # libFuzzer adds the inputs it finds to the first directory
    corpus.mkdir()
    # A fixed number of inputs, not a fixed time, so that a loaded machine makes the test slower, not weaker;
    # the time cap only stops a hang.
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "tests", "fuzz_decode_l3.py"),
            f"-runs={ATHERIS_RUNS}",
            "-max_total_time=120",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
            str(seed_dir),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-5000:] + _findings(tmp_path)
    runs = re.search(r"Done (\d+) runs", result.stderr)
    assert runs and int(runs.group(1)) >= ATHERIS_RUNS, result.stderr[-5000:]


def _findings(artifact_dir) -> str:
    """The inputs libFuzzer saved (crash-*, timeout-*, ...), as hex, and their paths for replay."""
    lines = []
    for path in sorted(artifact_dir.glob("*-*")):
        if path.is_file():
            lines.append(
                f"\n{path} ({path.stat().st_size} bytes; replay: python tests/fuzz_decode_l3.py {path}):\n"
                f"{path.read_bytes()[:512].hex()}"
            )
    return "".join(lines) or "\n(no input saved)"
