"""The L3 decoder's fuzz targets run for a bounded time without a finding: the C++ codec under ASan/UBSan
(ops/tests/l3_fuzz.sh) and, when atheris is installed, the decode op against the reference decoder
(tests/fuzz_decode_l3.py). Findings are saved for replay: see those two files.

30 s (two builds) and 15 s of fuzzing: with the sanitized build (10-20 s) and TensorFlow's import, the file takes about a
minute on two cores."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest

import l3_fuzz_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("l3_seeds")
    l3_fuzz_seeds.write_seeds(directory)
    return directory


@pytest.mark.slow
def test_cpp_decoder_survives_mutants_under_sanitizers(seed_dir):
    result = subprocess.run(["bash", os.path.join(ROOT, "ops", "tests", "l3_fuzz.sh"), "30", str(seed_dir)],
                            capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    assert result.returncode == 0, result.stdout + result.stderr
    summaries = re.findall(r"l3_fuzz: (\d+) iterations in .* (\d+) decode rejected, (\d+) decoded and round-tripped",
                           result.stdout)
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
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fuzz_decode_l3.py"), "-max_total_time=15",
                             f"-artifact_prefix={tmp_path}/", str(corpus), str(seed_dir)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-5000:]
    runs = re.search(r"Done (\d+) runs", result.stderr)
    assert runs and int(runs.group(1)) >= 300, result.stderr[-5000:]
