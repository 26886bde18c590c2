"""Runs the pure C++ layers' standalone tests (ops/tests), optimised and under ASan/UBSan, from the suite."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_jpeg_split_and_transcode_under_sanitizers():
    result = subprocess.run(
        ["bash", os.path.join(ROOT, "ops", "tests", "build_and_run.sh"), "1500"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("all checks passed") == 2


@pytest.mark.slow
def test_l3_simd_row_loops_match_the_scalar_ones_under_sanitizers():
    result = subprocess.run(
        ["bash", os.path.join(ROOT, "ops", "tests", "l3_row_kernels.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SIMD and scalar agree") == 2
