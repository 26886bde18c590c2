"""What a user meets first: the import, the command line, progress output, errors and argument checks."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

import tfliquid
from tfliquid._common.checks import check_int
from tfliquid._common.progress import Progress


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


@pytest.mark.slow
def test_import_loads_neither_tensorflow_nor_keras_until_used():
    result = _python(
        "import sys, tfliquid\n"
        "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))\n"
        "import tfliquid.samples.photos\n"
        "print('keras' in sys.modules or 'tensorflow' in sys.modules)\n"
        "tfliquid.PCRDataset\n"
        "print('tensorflow' in sys.modules, 'tfliquid.keras' in sys.modules)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["[]", "False", "True False"]


def test_public_names_resolve_and_unknown_ones_raise():
    assert set(tfliquid.__all__) <= set(dir(tfliquid))
    for name in tfliquid.__all__:
        assert getattr(tfliquid, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'PCRDatset'"):
        tfliquid.PCRDatset  # noqa: B018


@pytest.mark.slow
def test_help_comes_first_with_no_tensorflow_log(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tfliquid", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("usage: tfliquid")
    assert result.stderr == ""
    # A command that imports TensorFlow: its start-up lines are hidden unless --verbose.
    missing = tmp_path / "missing"
    quiet = subprocess.run(
        [sys.executable, "-m", "tfliquid", "inspect", str(missing)], capture_output=True, text=True, timeout=120
    )
    assert quiet.returncode == 2  # the `python -m` entry point runs
    assert quiet.stderr.strip().splitlines() == [f"tfliquid: error: {missing}: no such file or folder"]
    verbose = subprocess.run(
        [sys.executable, "-m", "tfliquid", "inspect", str(missing), "--verbose"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verbose.returncode == 2 and len(verbose.stderr.strip().splitlines()) > 1
    usage = subprocess.run(
        [sys.executable, "-m", "tfliquid", "convert", "png", "a", "b"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 2 and "invalid choice: 'png'" in usage.stderr


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_plain_lines_in_a_log_and_a_bar_on_a_terminal():
    log = io.StringIO()
    with Progress(1000, "image", stream=log) as progress:
        for done in range(0, 1001, 50):
            progress.update(done)
    lines = log.getvalue().splitlines()
    assert [line.split(" ")[0] for line in lines] == [f"{n}/1000" for n in range(100, 1001, 100)]
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    assert lines[-1].startswith("1000/1000 images (100%), ")

    terminal = _Terminal()
    with Progress(10, "record", stream=terminal) as progress:
        progress.update(10)
    assert terminal.getvalue().startswith("\r10/10 records [==============================] 100%")
    assert terminal.getvalue().endswith("\n")

    silent = io.StringIO()
    with Progress(10, "image", enabled=False, stream=silent) as progress:
        progress.update(10)
    assert silent.getvalue() == ""


def test_errors_share_one_base_class():
    from tfliquid.cache.item_format import CacheFormatError
    from tfliquid.jpeg.scans import JpegError
    from tfliquid.l3.codec import L3Error
    from tfliquid.pcr.format import PCRFormatError

    for error in (CacheFormatError, L3Error, PCRFormatError, JpegError):
        assert issubclass(error, tfliquid.FormatError) and issubclass(error, tfliquid.TfliquidError), error
        assert issubclass(error, ValueError), error  # what they were before the hierarchy
    assert issubclass(tfliquid.ConversionError, tfliquid.TfliquidError)
    assert issubclass(tfliquid.ArgumentError, ValueError) and issubclass(tfliquid.ArgumentError, TypeError)
    from tfliquid._lib import OpLibraryError

    assert issubclass(OpLibraryError, tfliquid.TfliquidError) and issubclass(OpLibraryError, ImportError)


def test_check_int_takes_integers_only_and_names_the_argument():
    assert check_int("n", 3) == 3 and type(check_int("n", np.int64(3))) is int
    assert check_int("n", 0, 0, 5) == 0 and check_int("n", 5, 0, 5) == 5
    for bad, message in (
        (True, "n must be an int, got True"),
        (1.5, "n must be an int, got 1.5"),
        ("3", "n must be an int, got '3'"),
        (None, "n must be an int, got None"),
    ):
        with pytest.raises(tfliquid.ArgumentError, match=f"^{message}$"):
            check_int("n", bad)
    with pytest.raises(tfliquid.ArgumentError, match=r"^n must be an int in 0\.\.5, got 6$"):
        check_int("n", 6, 0, 5)
    with pytest.raises(tfliquid.ArgumentError, match=r"^n must be an int >= 1, got 0$"):
        check_int("n", 0, 1)
