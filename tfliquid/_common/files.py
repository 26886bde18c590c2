"""Finding images in a folder tree, and writing files so that they are never seen half-written."""

from __future__ import annotations

import os
from collections.abc import Callable


def image_files(root: str, extensions: tuple[str, ...]) -> list[str]:
    """Paths of the files under `root` whose names end with one of `extensions` (any case), in a stable order:
    sorted names, folder by folder. Hidden files and folders are skipped: `._photo.jpg` (macOS metadata) and
    `.ipynb_checkpoints/` hold no images of the dataset."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        paths.extend(
            os.path.join(dirpath, f)
            for f in sorted(filenames)
            if not f.startswith(".") and f.lower().endswith(extensions)
        )
    return paths


def write_atomically(path: str, data: bytes, check: Callable[[str], None] | None = None) -> None:
    """Writes `data` to `path` through a temporary file renamed into place: `path` is never partially written.

    `check(temporary path)`, if given, runs on the written file before the rename; if it raises, `path` is left
    as it was. The temporary file (`path`.tmp-PID: concurrent runs into one destination do not share one) never
    outlives the call, whatever interrupts it.
    """
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the rename must not reach the disk before the data (power loss)
        if check:
            check(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
