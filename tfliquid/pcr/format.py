"""PCR records: the readable reference encoder and decoder (the test oracle), and the dataset index.

Format version 1, specified in docs/formats/pcr.md::

    record = preamble(24) | RecordHeader | scan group 1 | scan group 2 | ... | scan group G
    preamble = magic "\\x89PCR\\r\\n\\x1a\\n" | u32 version | u32 header_length | u32 header_crc32c | u32 flags
    scan group k = partial k of image 0 | partial k of image 1 | ...

Image i at scan group g = partial 1 | ... | partial min(g, G) | EOI. All integers little-endian.

This module has no TensorFlow dependency. `encode_record` takes the CRC function as a parameter: the conversion
job passes the C++ one (crc32c_fast), the tests the plain table-driven `crc32c`.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable, Sequence

from google.protobuf.message import DecodeError

from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import FormatError
from tfliquid._common.files import write_atomically
from tfliquid._proto import pcr_pb2
from tfliquid.pcr.jpeg import EOI

RECORD_MAGIC = b"\x89PCR\r\n\x1a\n"
INDEX_MAGIC = b"\x89PCI\r\n\x1a\n"
FORMAT_VERSION = 1  # of records (their preamble), and DatasetIndex.format_version
INDEX_VERSION = 2  # of the index file: magic | u32 version | u32 crc32c(message) | message
INDEX_HEADER = struct.Struct("<II")
INDEX_V1_FIRST_BYTE = b"\x08"  # version 1 had no header: the message's first byte, field 1 (varint) tag
PREAMBLE = struct.Struct("<8sIIII")  # magic, version, header_length, header_crc32c, flags
WHOLE_ITEMS = 1  # flags bit 0: one group of whole items, no EOI appended (Liquid records, docs/formats/liquid.md)
MAX_IMAGES = 1 << 20
MAX_SCAN_GROUPS = 64
INDEX_FILENAME = "index.pcrindex"


class PCRFormatError(FormatError):
    """A record or index violates the format; the message gives the offset."""


@dataclasses.dataclass
class EncodedRecord:
    """A serialized record and what its index entry needs."""

    data: bytes
    num_images: int
    payload_offset: int
    prefix_ends: list[int]


def encode_record(
    partials: Sequence[Sequence[bytes]],
    labels: Sequence[int],
    keys: Sequence[bytes] = (),
    crc: Callable[[bytes], int] = crc32c,
    flags: int = 0,
) -> EncodedRecord:
    """Serializes one record.

    partials[i] lists image i's partials (tfliquid.pcr.jpeg.split_partials); images may have different
    scan counts: the record has max(len) scan groups and shorter images get empty partials. With
    flags=WHOLE_ITEMS, partials[i] is [item i]: a record of whole items (Liquid's).
    """
    if flags & ~WHOLE_ITEMS:
        raise PCRFormatError(f"unknown flags {flags:#x}")
    num_images = len(partials)
    if not 1 <= num_images <= MAX_IMAGES:
        raise PCRFormatError(f"a record holds 1 to {MAX_IMAGES} images, got {num_images}")
    if len(labels) != num_images or (keys and len(keys) != num_images):
        raise PCRFormatError("one label (and one key, when keys are given) per image")
    num_groups = max(len(p) for p in partials)
    if not 1 <= num_groups <= MAX_SCAN_GROUPS:
        raise PCRFormatError(f"images need 1 to {MAX_SCAN_GROUPS} scans, got {num_groups}")
    if flags & WHOLE_ITEMS and num_groups != 1:
        raise PCRFormatError(f"a record of whole items has one group, got {num_groups}")

    groups = [b"".join(p[k] if k < len(p) else b"" for p in partials) for k in range(num_groups)]
    header = pcr_pb2.RecordHeader(
        num_images=num_images,
        num_scan_groups=num_groups,
        labels=list(labels),
        keys=list(keys),
        partial_sizes=[len(p[k]) if k < len(p) else 0 for k in range(num_groups) for p in partials],
        group_crc32c=[crc(g) for g in groups],
    )
    end = 0
    for group in groups:
        end += len(group)
        header.group_ends.append(end)
    header_bytes = header.SerializeToString()
    preamble = PREAMBLE.pack(RECORD_MAGIC, FORMAT_VERSION, len(header_bytes), crc(header_bytes), flags)
    payload_offset = PREAMBLE.size + len(header_bytes)
    return EncodedRecord(
        data=b"".join([preamble, header_bytes, *groups]),
        num_images=num_images,
        payload_offset=payload_offset,
        prefix_ends=[payload_offset + e for e in header.group_ends],
    )


@dataclasses.dataclass
class DecodedImage:
    jpeg: bytes
    label: int
    key: bytes


def parse_preamble(data: bytes) -> int:
    """Validates the preamble and returns the header length."""
    if len(data) < PREAMBLE.size:
        raise PCRFormatError(f"offset {len(data)}: file ends inside the 24-byte preamble")
    magic, version, header_length, _, flags = PREAMBLE.unpack_from(data)
    if magic != RECORD_MAGIC:
        raise PCRFormatError("offset 0: bad magic: not a PCR record")
    if version != FORMAT_VERSION:
        raise PCRFormatError(f"offset 8: unsupported format version {version}")
    if flags & ~WHOLE_ITEMS:
        raise PCRFormatError(f"offset 20: unknown flags {flags:#x}")
    return header_length


def parse_header(data: bytes, crc: Callable[[bytes], int] = crc32c) -> pcr_pb2.RecordHeader:
    """Validates preamble and header of a record prefix (at least preamble + header bytes)."""
    header_length = parse_preamble(data)
    if PREAMBLE.size + header_length > len(data):
        raise PCRFormatError(f"offset 12: header length {header_length} runs past the {len(data)} bytes read")
    header_bytes = data[PREAMBLE.size : PREAMBLE.size + header_length]
    stored = PREAMBLE.unpack_from(data)[3]
    if crc(header_bytes) != stored:
        raise PCRFormatError("offset 24: header CRC32C mismatch")
    header = pcr_pb2.RecordHeader.FromString(header_bytes)
    n, g = header.num_images, header.num_scan_groups
    if not (
        1 <= n <= MAX_IMAGES
        and 1 <= g <= MAX_SCAN_GROUPS
        and len(header.labels) == n
        and len(header.keys) in (0, n)
        and len(header.partial_sizes) == n * g
        and len(header.group_ends) == g
        and len(header.group_crc32c) == g
    ):
        raise PCRFormatError("offset 24: header fields are inconsistent")
    if PREAMBLE.unpack_from(data)[4] & WHOLE_ITEMS and g != 1:
        raise PCRFormatError(f"offset 24: a record of whole items has one group, not {g}")
    return header


def decode_record(
    data: bytes, scan_group: int | None = None, crc: Callable[[bytes], int] = crc32c
) -> list[DecodedImage]:
    """Reference decoder: every image of a record prefix at `scan_group` (None = all), in stored order.

    `data` may be just the prefix up to that scan group; the CRC of every group read is checked.
    """
    header = parse_header(data, crc)
    n, g = header.num_images, header.num_scan_groups
    groups = g if scan_group is None else min(scan_group, g)
    if groups < 1:
        raise PCRFormatError("scan group must be >= 1")
    payload = PREAMBLE.size + PREAMBLE.unpack_from(data)[2]
    images = [bytearray() for _ in range(n)]
    start = payload
    for k in range(groups):
        end = payload + header.group_ends[k]
        if end > len(data):
            raise PCRFormatError(f"offset {len(data)}: record ends before scan group {k + 1} (at {end})")
        if crc(data[start:end]) != header.group_crc32c[k]:
            raise PCRFormatError(f"offset {start}: scan group {k + 1} CRC32C mismatch")
        offset = start
        for i in range(n):
            size = header.partial_sizes[k * n + i]
            images[i] += data[offset : offset + size]
            offset += size
        if offset != end:
            raise PCRFormatError(f"offset {start}: scan group {k + 1} size does not match its partials")
        start = end
    keys = list(header.keys) or [b""] * n
    end = b"" if PREAMBLE.unpack_from(data)[4] & WHOLE_ITEMS else EOI
    return [DecodedImage(bytes(img) + end, label, key) for img, label, key in zip(images, header.labels, keys)]


def read_index(dataset_dir: str, crc: Callable[[bytes], int] = crc32c) -> pcr_pb2.DatasetIndex:
    """Reads and validates DATASET/index.pcrindex (index version 2, or version 1, which has no checksum)."""
    path = os.path.join(dataset_dir, INDEX_FILENAME)
    if os.path.isfile(dataset_dir):
        raise PCRFormatError(f"{dataset_dir} is a file; a PCR dataset is the directory that holds {INDEX_FILENAME}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{dataset_dir} is not a PCR dataset: {INDEX_FILENAME} is missing "
            "(convert one with `tfliquid convert pcr SRC DST`)"
        ) from None
    if not data.startswith(INDEX_MAGIC):
        raise PCRFormatError(f"{path}: offset 0: bad magic: not a PCR index")
    body = data[len(INDEX_MAGIC) :]
    if body[:1] == INDEX_V1_FIRST_BYTE:  # version 1: the message follows the magic
        message = body
    else:
        if len(body) < INDEX_HEADER.size:
            raise PCRFormatError(f"{path}: offset {len(data)}: the index ends inside its header")
        version, stored_crc = INDEX_HEADER.unpack_from(body)
        if version != INDEX_VERSION:
            raise PCRFormatError(f"{path}: offset 8: unsupported index version {version}")
        message = body[INDEX_HEADER.size :]
        if crc(message) != stored_crc:
            raise PCRFormatError(f"{path}: offset 12: index CRC32C mismatch: the index is damaged")
    try:
        index = pcr_pb2.DatasetIndex.FromString(message)
    except DecodeError:
        raise PCRFormatError(f"{path}: the index message cannot be parsed: the index is damaged") from None
    _check_index(path, index)
    return index


def _check_index(path: str, index: pcr_pb2.DatasetIndex) -> None:
    """What a reader relies on: the record format version, record paths inside the dataset directory, record
    entries that fit together, and counts that add up."""
    if index.format_version != FORMAT_VERSION:
        raise PCRFormatError(f"{path}: unsupported record format version {index.format_version}")
    for i, record in enumerate(index.records):
        where = f"{path}: record {i} ({record.path!r})"
        if os.path.isabs(record.path) or os.path.normpath(record.path).split(os.sep)[0] in ("..", ".", ""):
            raise PCRFormatError(f"{where}: its path leaves the dataset directory")
        ends = list(record.prefix_ends)
        if not ends or not record.num_images or record.payload_offset < PREAMBLE.size:
            raise PCRFormatError(f"{where}: empty entry")
        if len(ends) > index.num_scan_groups or any(b < a for a, b in zip([record.payload_offset, *ends], ends)):
            raise PCRFormatError(f"{where}: scan group ends are not increasing, or more than the dataset's groups")
    if sum(r.num_images for r in index.records) != index.num_images:
        raise PCRFormatError(f"{path}: the records hold other than the {index.num_images} images the index counts")


def write_index(dataset_dir: str, index: pcr_pb2.DatasetIndex, crc: Callable[[bytes], int] = crc32c) -> None:
    """Writes the index (version 2) atomically (temp file + rename): readers see the old one or the new one."""
    message = index.SerializeToString()
    data = INDEX_MAGIC + INDEX_HEADER.pack(INDEX_VERSION, crc(message)) + message
    write_atomically(os.path.join(dataset_dir, INDEX_FILENAME), data)


def prefix_end(ends: Sequence[int], scan_group: int) -> int:
    """Where scan group `scan_group` (1-based) ends in a record or an image with these scan group ends: the rule
    of which bytes are scan group g (docs/formats/pcr.md). A record or image with fewer groups is read whole."""
    return ends[min(scan_group, len(ends)) - 1]


def record_prefix_bytes(index: pcr_pb2.DatasetIndex, scan_group: int) -> list[int]:
    """Bytes of each record's prefix up to `scan_group`: what reading the record at that scan group reads."""
    return [prefix_end(r.prefix_ends, scan_group) for r in index.records]


def prefix_bytes(index: pcr_pb2.DatasetIndex, scan_group: int) -> int:
    """Bytes of all record prefixes up to `scan_group`: what one epoch at that scan group reads."""
    return sum(record_prefix_bytes(index, scan_group))
