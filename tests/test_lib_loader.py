"""The op library loads only under the TensorFlow it was built for, with one clear message otherwise."""

import shutil

import pytest
import tensorflow as tf

from tfliquid import _lib


def test_library_records_the_tensorflow_it_was_built_for():
    assert _lib.built_for() == tf.__version__
    _lib.check_build(tf.__version__)


def test_version_mismatch_names_both_versions_and_the_rebuild_command():
    with pytest.raises(_lib.OpLibraryError) as error:
        _lib.check_build("2.99.0")
    message = str(error.value)
    assert f"built for TensorFlow {tf.__version__}" in message and "TensorFlow 2.99.0 is installed" in message
    assert "pip install --no-build-isolation" in message


def test_missing_or_foreign_library(tmp_path):
    with pytest.raises(_lib.OpLibraryError, match="not built"):
        _lib.check_build(tf.__version__, str(tmp_path / "missing.so"))
    foreign = tmp_path / "foreign.so"
    shutil.copy(tf.sysconfig.get_lib() + "/libtensorflow_framework.so.2", foreign)
    with pytest.raises(_lib.OpLibraryError, match="carries no build information"):
        _lib.check_build(tf.__version__, str(foreign))
