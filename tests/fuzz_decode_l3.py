"""Atheris fuzz target of the L3 decode op, tfliquid.l3.decode_l3, against the reference decoder.

For every input, the op either rejects it with InvalidArgumentError ("L3: offset N: ...") as the reference
does, or decodes it to the header's shape and to the reference's pixels; anything else is a finding. The
reference decoder is instrumented, so its branches guide libFuzzer (the op's C++ is not instrumented).

    python tests/fuzz_decode_l3.py -max_total_time=60 [CORPUS_DIR...]   (any libFuzzer flag)
    python tests/fuzz_decode_l3.py CRASH_FILE                             (replays one input)

Without a corpus directory it starts from the seeds of tests/l3_fuzz_seeds.py, written to a new directory
in the system's temporary directory (libFuzzer exits the process: nothing would remove it).
"""

import os
import re
import sys
import tempfile

import atheris
import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import tfliquid  # noqa: E402

with atheris.instrument_imports(include=["tfliquid.l3.codec"]):
    from tfliquid.l3 import codec as l3

# The reference decodes row by row in Python: above this many bytes of image (which a few kilobytes of
# constant rows can describe) only the op decodes, and only the shape is checked.
MAX_REFERENCE_BYTES = 1 << 22


def test_one_input(data: bytes):
    try:
        params, height, width, _, _ = l3.parse_header(data)
        reference_error = None
    except l3.L3Error as e:
        reference_error = e
    expected = None
    if reference_error is None and height * width * params.channels <= MAX_REFERENCE_BYTES:
        try:
            expected = l3.decode(data)
        except l3.L3Error as e:
            reference_error = e
    try:
        decoded = tfliquid.l3.decode_l3(data).numpy()
    except tf.errors.InvalidArgumentError as e:
        if not re.search(r"\bL3: offset \d+: ", e.message):
            raise AssertionError(f"malformed error: {e.message}") from None
        if reference_error is None and expected is not None:
            raise AssertionError(f"the op rejects what the reference decodes: {e.message}") from None
        return
    if reference_error is not None:
        raise AssertionError(f"the op decodes what the reference rejects: {reference_error}")
    if decoded.shape != (height, width, params.channels):
        raise AssertionError(f"decoded shape {decoded.shape}, header {height}x{width}x{params.channels}")
    if expected is not None and not np.array_equal(decoded, expected):
        where = np.argwhere(decoded != expected)[:5].tolist()
        raise AssertionError(f"the op and the reference decode different pixels, first at {where}")


def main():
    argv = list(sys.argv)
    if not any(not arg.startswith("-") for arg in argv[1:]):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import l3_fuzz_seeds

        corpus = tempfile.mkdtemp(prefix="l3_corpus_")
        l3_fuzz_seeds.write_seeds(corpus)
        argv.append(corpus)
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
