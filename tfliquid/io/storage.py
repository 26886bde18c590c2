"""What a measurement of storage needs from the OS: reads that reach the device, and a count of the bytes read.

Both are Linux's: `posix_fadvise(DONTNEED)` (no root needed) and /proc/self/io.
"""

from __future__ import annotations

import os


def drop_page_cache(paths) -> None:
    """Asks the kernel to drop these files' pages from its cache (written pages flushed first, which it cannot
    drop), so that the next reads come from storage."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


_bytes_read_by_bytes_read = 0  # what reading /proc/self/io adds to its own count


def process_bytes_read() -> int:
    """Bytes this process has read so far, by any reader (Linux /proc/self/io `rchar`), less what calls of this
    function read."""
    global _bytes_read_by_bytes_read
    with open("/proc/self/io", "rb") as f:
        text = f.read()
    rchar = next(int(line.split()[1]) for line in text.splitlines() if line.startswith(b"rchar:"))  # before this read
    own, _bytes_read_by_bytes_read = _bytes_read_by_bytes_read, _bytes_read_by_bytes_read + len(text)
    return rchar - own
