"""Holding back what is written to stderr at the file-descriptor level, where C++ code and child processes write."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


@contextlib.contextmanager
def held_back():
    """Holds back what is written to file descriptor 2 while the block runs, by this process (C++ included) and by
    the processes it starts, and shows it only if the block raises. For logs that no log level silences:
    TensorFlow's start-up lines, which come before its log level applies, and the log of Beam's worker processes."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            sys.stderr.flush()
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
