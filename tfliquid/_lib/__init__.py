"""Loader of tfliquid's op library (`_tfliquid_ops.so`, built by `pip install .`).

The library is loaded on first use of an op, not on `import tfliquid`, and only under the TensorFlow version it
was compiled against: a custom-op library built for another version fails with undefined symbols or, worse, loads
and corrupts memory. The check gives one clear message instead.

A process that runs graphs made elsewhere (a tf.data service worker running a pipeline that uses tfliquid's ops)
never calls a tfliquid function, so it must load the ops itself before it starts: `tfliquid.load_ops()`.
"""

import functools
import os
import re

from tfliquid._common.errors import TfliquidError

_HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_PATH = os.path.join(_HERE, "_tfliquid_ops.so")
_BUILD_INFO = re.compile(rb"tfliquid-built-for-tensorflow=([^;\x00]+);")
# In a checkout, `make install` builds it into the checkout's .venv; elsewhere pip builds it against the TensorFlow
# installed. A checkout's unbuilt tfliquid/ shadows an installed tfliquid for programs run from its root.
REBUILD_COMMAND = "make install (in a checkout), or: pip install --no-build-isolation --force-reinstall --no-deps ."


class OpLibraryError(TfliquidError, ImportError):
    """The op library is missing or was built for another TensorFlow."""


def built_for(library_path: str = LIBRARY_PATH) -> str:
    """The TensorFlow version embedded in the library at build time (ops/common/build_info.cc)."""
    try:
        with open(library_path, "rb") as f:
            found = _BUILD_INFO.search(f.read())
    except FileNotFoundError:
        raise OpLibraryError(
            f"tfliquid's op library is not built ({library_path} is missing). "
            f"Build it from the source tree with: {REBUILD_COMMAND}"
        ) from None
    if not found:
        raise OpLibraryError(f"{library_path} carries no build information; rebuild it with: {REBUILD_COMMAND}")
    return found.group(1).decode()


def check_build(tensorflow_version: str, library_path: str = LIBRARY_PATH) -> None:
    """Raises OpLibraryError unless the library exists and was built for `tensorflow_version`."""
    built = built_for(library_path)
    if built != tensorflow_version:
        raise OpLibraryError(
            f"tfliquid's op library was built for TensorFlow {built} but TensorFlow {tensorflow_version} is "
            f"installed. Rebuild it from the source tree with: {REBUILD_COMMAND}"
        )


@functools.cache
def load_ops():
    """Loads tfliquid's ops into this process's TensorFlow (once) and returns their Python module (liquid_read_file,
    liquid_record_dataset, ...). Call it in a process that must run graphs using the ops before any tfliquid
    function has: a tf.data service worker, for one."""
    import tensorflow as tf

    check_build(tf.__version__)
    return tf.load_op_library(LIBRARY_PATH)


def op_def(op_name: str):
    """The OpDef (protobuf) of one of tfliquid's ops, e.g. "Liquid>CacheStats": its inputs, attributes and their
    allowed values, as the C++ registration declares them."""
    load_ops()
    from tensorflow.python.framework import op_def_registry  # where the generated op wrappers find their OpDefs

    definition = op_def_registry.get(op_name)
    if definition is None:
        raise OpLibraryError(
            f"tfliquid's op library registers no op {op_name!r}: it is older than this code; rebuild it with: "
            f"{REBUILD_COMMAND}"
        )
    return definition


def crc32c_fast(data: bytes) -> int:
    """CRC32C of `data` by the library's op (SSE4.2, GB/s): what the conversion jobs use on every file they write;
    `tfliquid._common.crc32c.crc32c` is its readable oracle."""
    return int(load_ops().liquid_crc32c(data))
