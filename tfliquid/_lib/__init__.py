"""Lazy loader of tfliquid's op library (`_tfliquid_ops.so`, built by `pip install .`).

The library is loaded on first use, not on `import tfliquid`, and only under the TensorFlow version it was
compiled against: a custom-op library built for another version fails with undefined symbols or, worse, loads
and corrupts memory. The check gives one clear message instead.
"""

import functools
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_PATH = os.path.join(_HERE, "_tfliquid_ops.so")
_BUILD_INFO = re.compile(rb"tfliquid-built-for-tensorflow=([^;\x00]+);")
REBUILD_COMMAND = "pip install --no-build-isolation --force-reinstall --no-deps ."


class OpLibraryError(ImportError):
    """The op library is missing or was built for another TensorFlow."""


def built_for(library_path: str = LIBRARY_PATH) -> str:
    """The TensorFlow version embedded in the library at build time (ops/common/build_info.cc)."""
    try:
        with open(library_path, "rb") as f:
            found = _BUILD_INFO.search(f.read())
    except FileNotFoundError:
        raise OpLibraryError(f"tfliquid's op library is not built ({library_path} is missing). "
                             f"Build it from the source tree with: {REBUILD_COMMAND}") from None
    if not found:
        raise OpLibraryError(f"{library_path} carries no build information; rebuild it with: {REBUILD_COMMAND}")
    return found.group(1).decode()


def check_build(tensorflow_version: str, library_path: str = LIBRARY_PATH) -> None:
    """Raises OpLibraryError unless the library exists and was built for `tensorflow_version`."""
    built = built_for(library_path)
    if built != tensorflow_version:
        raise OpLibraryError(
            f"tfliquid's op library was built for TensorFlow {built} but TensorFlow {tensorflow_version} is "
            f"installed. Rebuild it from the source tree with: {REBUILD_COMMAND}")


@functools.lru_cache(maxsize=None)
def ops():
    """The loaded op module: liquid_read_file, liquid_pcr_record_dataset, ..."""
    import tensorflow as tf

    check_build(tf.__version__)
    return tf.load_op_library(LIBRARY_PATH)
