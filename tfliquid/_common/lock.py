"""One process at a time per directory: an exclusive lock on DIR/.tfliquid-lock while it works there.

Two conversions writing into one destination would interleave their records and both report success; two
dispatchers on one work dir would write one journal. The lock is a `flock` on a file inside the directory, so the
kernel releases it when its holder exits, however it exits (a killed run leaves no stale lock). The file names its
holder, so a refused process can say who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable

from tfliquid._common.errors import ConversionError, TfliquidError

LOCK_FILENAME = ".tfliquid-lock"


class DirectoryLock:
    """Holds DIR/.tfliquid-lock while the `with` block runs; raises `refusal(holder)` (holder: who holds it, in
    words) if another process holds it. The file is removed on release."""

    def __init__(self, directory: str, refusal: Callable[[str], TfliquidError]):
        self.path = os.path.join(directory, LOCK_FILENAME)
        self._refusal = refusal
        self._fd: int | None = None

    def __enter__(self) -> DirectoryLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise self._refusal(holder) from None
            # The holder before us may have removed the file between our open and our lock: then we hold a lock
            # on a file nobody else will open, and must lock the one now at the path.
            if _same_file(fd, self.path):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(sys.argv),
        }
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is None:
            return
        os.unlink(self.path)  # before unlocking: a waiting opener then sees a new file, not ours
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def DestinationLock(dst: str) -> DirectoryLock:  # noqa: N802 (a lock class, specialized)
    """One conversion at a time per destination: ConversionError naming the other conversion."""
    return DirectoryLock(
        dst,
        lambda holder: ConversionError(
            f"{dst} is being converted by another process ({holder}); wait for it to finish or stop it, then rerun"
        ),
    )


@contextlib.contextmanager
def locked_destination(dst: str):
    """Creates DST if missing and holds its DestinationLock while the `with` block runs. If the block fails, what
    this run created and left empty (DST, its empty folders) is removed; files written are kept for a rerun."""
    created = not os.path.exists(dst)
    os.makedirs(dst, exist_ok=True)
    try:
        with DestinationLock(dst):
            yield
    except BaseException:
        if created:
            for folder, _, _ in os.walk(dst, topdown=False):
                with contextlib.suppress(OSError):  # not empty: it holds what the run wrote
                    os.rmdir(folder)
        raise


def _same_file(fd: int, path: str) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {holder['pid']} on {holder['host']} since {holder['since']}: {holder['command']}"
    except (ValueError, KeyError, TypeError):
        return "its details are not written yet"
