"""L3 lossless images: the readable reference encoder and decoder, the oracle of every other implementation.

Format version 2 (version 1 files still read), specified in docs/formats/l3.md::

    header(24) | uint32 offsets[C * P + 1] | payload: channel 0 patches, channel 1 patches, ... | uint32 crc32c
    (version 2 only: the CRC32C of every byte before it)
    patch channel = row 0 raw | rows 1.. : residuals of the previous-row Paeth prediction, packed per segment
                    (all segment headers of the row, then every segment's values in its bit width), byte aligned

NumPy, vectorised per row so that the tests can round-trip real photos; no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import ArgumentError, FormatError

MAGIC = b"\x89L3I\r\n\x1a\n"
VERSION = 2  # written; VERSIONS are read
VERSIONS = (1, 2)
HEADER = struct.Struct("<8sBBBBIIHH")  # magic, version, channels, flags, segment, width, height, patch, reserved
CHECKSUM = struct.Struct("<I")  # version 2's trailer: CRC32C of every byte before it
FLAG_SUBTRACT_GREEN = 1
FLAG_ZIGZAG = 2
MAX_SIDE = 1 << 24
MAX_BYTES = 1 << 30
PROFILES = ("default", "paper")


class L3Error(FormatError):
    """Corrupt or unsupported L3 data; the message starts with "offset N:"."""


@dataclasses.dataclass(frozen=True)
class Params:
    channels: int
    subtract_green: bool
    zigzag: bool
    segment: int  # pixels per segment; 0 = a whole patch row
    patch: int
    version: int = VERSION  # the format version of the file

    @property
    def header_bits(self) -> int:
        return 4 if self.zigzag else 12


def profile_params(profile: str, height: int, width: int, channels: int) -> Params:
    if profile == "default":
        return Params(channels, channels >= 3, True, 8, 128)
    if profile == "paper":
        pixels = height * width
        patch = 32 if pixels <= 1080 * 720 else 64 if pixels <= 1920 * 1080 else 128
        return Params(channels, False, False, 0, patch)
    raise ArgumentError(f"profile must be one of {PROFILES}, got {profile!r}")


def _patch_grid(height: int, width: int, n: int):
    """(y0, y1, x0, x1) of every patch, row-major; edge patches are cut."""
    return [(y, min(y + n, height), x, min(x + n, width)) for y in range(0, height, n) for x in range(0, width, n)]


def _patch_count(height: int, width: int, n: int) -> int:
    """len(_patch_grid(...)) without building the grid, which a small header can make millions of patches long."""
    return -(-height // n) * -(-width // n)


def predict(previous: np.ndarray) -> np.ndarray:
    """The custom Paeth prediction of a row from the previous row alone (edges replicate the top pixel)."""
    b = previous.astype(np.int16)
    a = np.concatenate([b[:1], b[:-1]])  # top-left
    c = np.concatenate([b[1:], b[-1:]])  # top-right
    p = a + c - b
    da, db, dc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((da <= db) & (da <= dc), a, np.where(db <= dc, b, c)).astype(np.uint8)


def _segments(width: int, segment: int):
    step = segment or width
    return [(x, min(x + step, width)) for x in range(0, width, step)]


def _bits(values: np.ndarray, width: int) -> np.ndarray:
    """Each value in `width` bits, most significant first."""
    if width == 0:
        return np.zeros(0, np.uint8)
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint16)
    return ((values.astype(np.uint16)[:, None] >> shifts) & 1).astype(np.uint8).ravel()


def _bit_length(value: int) -> int:
    return int(value).bit_length()


def encode_row(residuals: np.ndarray, params: Params) -> bytes:
    """Packs one row of residuals (uint8): segment headers, then segment values, then zero padding."""
    headers, values = [], []
    for x0, x1 in _segments(len(residuals), params.segment):
        seg = residuals[x0:x1]
        if params.zigzag:
            signed = seg.view(np.int8).astype(np.int16)
            coded = ((signed << 1) ^ (signed >> 7)).astype(np.uint8)
            width = _bit_length(coded.max())
            headers.append(_bits(np.array([width]), 4))
        else:
            signed = seg.view(np.int8).astype(np.int16)
            base = int(signed.min())
            coded = (signed - base).astype(np.uint8)
            width = _bit_length(coded.max())
            headers.append(np.concatenate([_bits(np.array([width]), 4), _bits(np.array([base & 0xFF]), 8)]))
        values.append(_bits(coded, width))
    return np.packbits(np.concatenate(headers + values)).tobytes()


def encode_patch(patch: np.ndarray, params: Params) -> bytes:
    out = [patch[0].tobytes()]
    for y in range(1, patch.shape[0]):
        out.append(encode_row(patch[y] - predict(patch[y - 1]), params))
    return b"".join(out)


def _planes(image: np.ndarray, subtract_green: bool) -> np.ndarray:
    planes = np.moveaxis(image, -1, 0).copy()
    if subtract_green:
        planes[0] -= planes[1]
        planes[2] -= planes[1]
    return planes


def encode(image: np.ndarray, profile: str = "default", version: int = VERSION) -> bytes:
    """uint8 [H, W] or [H, W, C] (C = 1, 3, 4) -> L3 bytes; version 1 (no checksum) for readers of it."""
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[..., None]
    if version not in VERSIONS:
        raise ArgumentError(f"format version {version} does not exist; versions: {VERSIONS}")
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (1, 3, 4):
        raise ArgumentError(f"expected uint8 [H, W] or [H, W, C] with C in 1, 3, 4, got {image.dtype} {image.shape}")
    height, width, channels = image.shape
    if not (1 <= height <= MAX_SIDE and 1 <= width <= MAX_SIDE) or image.size > MAX_BYTES:
        raise ArgumentError(f"image {height}x{width}x{channels} outside the format's limits")
    params = profile_params(profile, height, width, channels)
    planes = _planes(image, params.subtract_green)
    grid = _patch_grid(height, width, params.patch)
    streams = [encode_patch(planes[c, y0:y1, x0:x1], params) for c in range(channels) for y0, y1, x0, x1 in grid]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in streams])]).astype("<u4")
    flags = (FLAG_SUBTRACT_GREEN if params.subtract_green else 0) | (FLAG_ZIGZAG if params.zigzag else 0)
    header = HEADER.pack(MAGIC, version, channels, flags, params.segment, width, height, params.patch, 0)
    return with_checksum(header + offsets.tobytes() + b"".join(streams), version)


def with_checksum(data: bytes, version: int) -> bytes:
    """The file's bytes followed by its checksum, in version 2."""
    return data + CHECKSUM.pack(crc32c(data)) if version >= 2 else data


def verify_checksum(data: bytes, version: int) -> None:
    """Raises L3Error at the trailer when a version 2 file's bytes do not give its checksum."""
    if version >= 2:
        at = len(data) - CHECKSUM.size
        stored, computed = CHECKSUM.unpack_from(data, at)[0], crc32c(data[:at])
        if stored != computed:
            raise L3Error(f"offset {at}: checksum mismatch: the file says {stored:08x}, its bytes give {computed:08x}")


class _Reader:
    def __init__(self, data: bytes, start: int, end: int):
        self.data, self.pos, self.end = data, start, end

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise L3Error(f"offset {self.pos}: patch data ends {self.pos + n - self.end} bytes early")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


def decode_row(reader: _Reader, width: int, params: Params) -> np.ndarray:
    """Unpacks one row of residuals (the inverse of encode_row)."""
    segments = _segments(width, params.segment)
    header_bytes = -(-len(segments) * params.header_bits // 8)
    at = reader.pos
    header_bits = np.unpackbits(np.frombuffer(reader.take(header_bytes), np.uint8))
    widths, bases = [], []
    for k in range(len(segments)):
        fields = header_bits[k * params.header_bits : (k + 1) * params.header_bits]
        seg_width = int(np.packbits(np.concatenate([np.zeros(4, np.uint8), fields[:4]]))[0])
        if seg_width > 8:
            raise L3Error(f"offset {at}: segment width {seg_width} > 8")
        widths.append(seg_width)
        bases.append(0 if params.zigzag else int(np.packbits(fields[4:12]).view(np.int8)[0]))
    header_total = len(segments) * params.header_bits
    value_total = sum((x1 - x0) * w for (x0, x1), w in zip(segments, widths))
    reader.pos = at
    bits = np.unpackbits(np.frombuffer(reader.take(-(-(header_total + value_total) // 8)), np.uint8))
    residuals = np.empty(width, np.uint8)
    pos = header_total
    for (x0, x1), seg_width, base in zip(segments, widths, bases):
        n = x1 - x0
        if seg_width:
            fields = bits[pos : pos + n * seg_width].reshape(n, seg_width).astype(np.uint16)
            coded = (fields << np.arange(seg_width - 1, -1, -1, dtype=np.uint16)).sum(axis=1)
        else:
            coded = np.zeros(n, np.uint16)
        pos += n * seg_width
        if params.zigzag:
            residuals[x0:x1] = ((coded >> 1) ^ (-(coded & 1))).astype(np.uint8)
        else:
            residuals[x0:x1] = ((coded.astype(np.int16) + base) & 0xFF).astype(np.uint8)
    return residuals


def decode_patch(reader: _Reader, height: int, width: int, params: Params) -> np.ndarray:
    patch = np.empty((height, width), np.uint8)
    patch[0] = np.frombuffer(reader.take(width), np.uint8)
    for y in range(1, height):
        patch[y] = decode_row(reader, width, params) + predict(patch[y - 1])
    return patch


def parse_params(data: bytes):
    """Validates the 24-byte header at the start of `data` (the rest may be absent); returns (params, height,
    width). params.version is the file's format version."""
    if len(data) < HEADER.size:
        raise L3Error(f"offset {len(data)}: data ends inside the 24-byte header")
    magic, version, channels, flags, segment, width, height, patch, reserved = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise L3Error("offset 0: bad magic: not an L3 image")
    if version not in VERSIONS:
        raise L3Error(f"offset 8: unsupported version {version}")
    if channels not in (1, 3, 4):
        raise L3Error(f"offset 9: {channels} channels (1, 3 or 4 expected)")
    if flags & ~(FLAG_SUBTRACT_GREEN | FLAG_ZIGZAG) or (flags & FLAG_SUBTRACT_GREEN and channels < 3):
        raise L3Error(f"offset 10: invalid flags {flags:#x} for {channels} channels")
    if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE) or width * height * channels > MAX_BYTES:
        raise L3Error(f"offset 12: image {width}x{height}x{channels} outside the format's limits")
    if not 1 <= patch <= 4096 or reserved:
        raise L3Error(f"offset 20: patch size {patch} outside 1..4096 or reserved field set")
    params = Params(channels, bool(flags & FLAG_SUBTRACT_GREEN), bool(flags & FLAG_ZIGZAG), segment, patch, version)
    return params, height, width


def parse_header(data: bytes):
    """Validates header and offsets (not the checksum); returns (params, height, width, offsets, payload start)."""
    params, height, width = parse_params(data)
    count = params.channels * _patch_count(height, width, params.patch) + 1
    payload = HEADER.size + 4 * count
    if payload > len(data):
        raise L3Error(f"offset {len(data)}: data ends inside the {count} patch offsets")
    offsets = np.frombuffer(data, "<u4", count, HEADER.size).astype(np.int64)
    trailer = CHECKSUM.size if params.version >= 2 else 0
    if np.any(np.diff(offsets) < 0) or offsets[0] != 0 or payload + offsets[-1] + trailer != len(data):
        raise L3Error(f"offset {HEADER.size}: patch offsets are not increasing from 0 to the payload length")
    return params, height, width, offsets, payload


def decode(data: bytes) -> np.ndarray:
    """L3 bytes -> uint8 [H, W, C]. The patch data's rules are checked as it decodes, the checksum after: a damaged
    file that breaks a rule names its byte, one that does not is still refused."""
    params, height, width, offsets, payload = parse_header(data)
    grid = _patch_grid(height, width, params.patch)
    planes = np.empty((params.channels, height, width), np.uint8)
    for c in range(params.channels):
        for p, (y0, y1, x0, x1) in enumerate(grid):
            i = c * len(grid) + p
            reader = _Reader(data, payload + int(offsets[i]), payload + int(offsets[i + 1]))
            planes[c, y0:y1, x0:x1] = decode_patch(reader, y1 - y0, x1 - x0, params)
            if reader.pos != reader.end:
                raise L3Error(
                    f"offset {reader.pos}: {reader.end - reader.pos} bytes left over in channel {c} patch {p}"
                )
    verify_checksum(data, params.version)
    if params.subtract_green:
        planes[0] += planes[1]
        planes[2] += planes[1]
    return np.moveaxis(planes, 0, -1)
