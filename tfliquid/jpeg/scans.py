"""Scan splitting of (progressive) JPEGs: the reference implementation and test oracle.

Contract (docs/formats/pcr.md, "Scan splitting"): `scan_ends(data)` walks the markers of a JPEG and returns,
for every scan (SOS segment and its entropy-coded data), the offset one past its entropy-coded data.
Partial 1 is `data[0:end_1]`, partial k is `data[end_(k-1):end_k]`, so partial k > 1 starts with the segments
that precede its SOS (DHT, DRI, COM, APPn...). Partials 1..g followed by EOI (`FF D9`) form a valid JPEG at
scan group g. Malformed data raises `JpegError`, whose message starts with the byte offset of the problem.

`ops/jpeg/scan_split.cc` is the C++ twin of this module: same offsets, same errors, same messages.
This module is plain Python (no NumPy, no TensorFlow) so that it stays easy to read and to trust.
"""

from tfliquid._common.errors import ArgumentError, FormatError

SOI = b"\xff\xd8"
EOI = b"\xff\xd9"
MAX_SCANS = 64

_SOS = 0xDA
_EOI = 0xD9
# Markers without a length field. EOI is also one but ends the walk; the others are only valid inside
# entropy-coded data (RSTn) or at the very start (SOI), and TEM is never emitted by an encoder.
_STANDALONE = {0x01, 0xD8} | set(range(0xD0, 0xD8))
# SOFn: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_SOF = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_PROGRESSIVE_SOF = {0xC2, 0xC6, 0xCA}


class JpegError(FormatError):
    """Malformed JPEG data. The message starts with "offset N:", the byte offset of the problem."""


def _entropy_end(data: bytes, pos: int) -> int:
    """Return the offset of the marker that ends the entropy-coded data starting at pos (len(data) if none).

    In entropy-coded data an FF is followed by 00 (a stuffed FF) or by D0-D7 (a restart marker); any other
    byte makes it a marker. A marker may be preceded by fill bytes (FF FF ...): as libjpeg does, a run of FF
    is looked through, and the marker starts at the last FF of the run.
    """
    n = len(data)
    while True:
        pos = data.find(0xFF, pos)
        if pos < 0:
            return n
        last = pos
        while last + 1 < n and data[last + 1] == 0xFF:
            last += 1
        if last + 1 == n:
            raise JpegError(f"offset {pos}: marker runs past end of data")
        code = data[last + 1]
        if code != 0x00 and not 0xD0 <= code <= 0xD7:
            return last
        pos = last + 2


def _walk(data: bytes):
    """Yield (offset, code, end) for every segment in file order, EOI included.

    offset is the marker's FF (after any fill bytes) and the segment's parameters are data[offset + 4:end].
    For SOS, end is the end of the scan's entropy-coded data. The walk stops after EOI, or after a scan whose
    entropy-coded data runs to the end of the data (a missing EOI is tolerated there and only there).
    """
    n = len(data)
    if data[:2] != SOI:
        raise JpegError("offset 0: no SOI marker, not a JPEG")
    pos = 2
    while True:
        if pos == n:
            raise JpegError(f"offset {pos}: data ends before EOI")
        if data[pos] != 0xFF:
            raise JpegError(f"offset {pos}: expected a marker, found byte 0x{data[pos]:02x}")
        while pos + 1 < n and data[pos + 1] == 0xFF:  # fill bytes
            pos += 1
        if pos + 1 == n:
            raise JpegError(f"offset {pos}: marker runs past end of data")
        offset, code = pos, data[pos + 1]
        pos += 2
        if code == _EOI:
            yield offset, code, pos
            return
        if code == 0x00 or code in _STANDALONE:
            raise JpegError(f"offset {offset}: 0xff{code:02x} is not a segment marker")
        if pos + 2 > n:
            raise JpegError(f"offset {pos}: segment length runs past end of data")
        length = data[pos] << 8 | data[pos + 1]  # counts its own two bytes
        if length < 2:
            raise JpegError(f"offset {pos}: segment length {length} is less than 2")
        if pos + length > n:
            raise JpegError(f"offset {pos}: segment of length {length} runs past end of data")
        pos += length
        if code == _SOS:
            pos = _entropy_end(data, pos)
        yield offset, code, pos
        if code == _SOS and pos == n:  # the scan's entropy-coded data ran to the end: EOI is missing
            return


def scan_ends(data: bytes) -> list[int]:
    """Offsets one past each scan's entropy-coded data, in order. Raises JpegError on malformed data."""
    ends = []
    for offset, code, end in _walk(bytes(data)):
        if code == _SOS:
            if len(ends) == MAX_SCANS:
                raise JpegError(f"offset {offset}: more than {MAX_SCANS} scans")
            ends.append(end)
        elif code == _EOI and not ends:
            raise JpegError(f"offset {offset}: no scan before EOI")
    return ends


def split_partials(data: bytes) -> list[bytes]:
    """The partials of a JPEG: partial 1 = data[0:end_1], partial k = data[end_(k-1):end_k]."""
    data = bytes(data)
    ends = scan_ends(data)
    return [data[start:end] for start, end in zip([0] + ends[:-1], ends)]


def join_partials(partials: list[bytes], g: int) -> bytes:
    """The JPEG at scan group g: partials 1..min(g, len(partials)) followed by EOI."""
    if g < 1:
        raise ArgumentError(f"scan group must be >= 1, got {g}")
    return b"".join(partials[:g]) + EOI


def is_jpeg(data: bytes) -> bool:
    """True if data starts like a JPEG: SOI followed by a marker."""
    return bytes(data[:3]) == b"\xff\xd8\xff"


def _frame_header(data: bytes):
    """(code, offset, end) of the SOFn segment before the first scan, or raises JpegError."""
    for offset, code, end in _walk(bytes(data)):
        if code in _SOF:
            return code, offset, end
        if code in (_SOS, _EOI):  # the walk always reaches one of these or raises
            break
    raise JpegError(f"offset {offset}: no frame header (SOFn) before the first scan")


def is_progressive(data: bytes) -> bool:
    """True if the frame header before the first scan is progressive (SOF2, SOF6, SOF10). Never raises."""
    try:
        code, _, _ = _frame_header(data)
    except JpegError:
        return False
    return code in _PROGRESSIVE_SOF


def frame_info(data: bytes) -> tuple[int, int, int, bool]:
    """(height, width, components, progressive) from the frame header. Raises JpegError."""
    data = bytes(data)
    code, offset, end = _frame_header(data)
    body = data[offset + 4 : end]  # precision, height (2), width (2), components, ...
    if len(body) < 6:
        raise JpegError(f"offset {offset}: frame header of {len(body)} bytes is too short")
    height = body[1] << 8 | body[2]
    width = body[3] << 8 | body[4]
    return height, width, body[5], code in _PROGRESSIVE_SOF
