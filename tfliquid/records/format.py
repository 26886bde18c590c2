"""The record container that PCR and Liquid share: the readable reference encoder and decoder (the test oracle).

Format version 1, specified in docs/formats/records.md::

    record = preamble(24) | RecordHeader | group 1 | group 2 | ... | group G
    preamble = magic "\\x89PCR\\r\\n\\x1a\\n" | u32 version | u32 header_length | u32 header_crc32c | u32 flags
    group k = part k of item 0 | part k of item 1 | ...

Item i up to group g = part 1 | ... | part min(g, G). One read of a file's first bytes, up to where group g
ends, gives every item up to group g. All integers little-endian. What the parts of an item are is the format's
business that stores it: PCR's are the scans of a progressive JPEG, Liquid's items are whole (flag WHOLE_ITEMS).

This module has no TensorFlow dependency. `encode_record` takes the CRC function as a parameter: the conversion
jobs pass the C++ one (tfliquid._lib.crc32c_fast), the tests the readable `crc32c`.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Sequence

from google.protobuf.message import DecodeError

from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import FormatError
from tfliquid._proto import records_pb2

RECORD_MAGIC = b"\x89PCR\r\n\x1a\n"  # the name of the first format stored in the container
FORMAT_VERSION = 1
PREAMBLE = struct.Struct("<8sIIII")  # magic, version, header_length, header_crc32c, flags
WHOLE_ITEMS = 1  # flags bit 0: every item whole, in one group (Liquid's records)
MAX_ITEMS = 1 << 20
MAX_GROUPS = 64


class RecordFormatError(FormatError):
    """A record violates the format; the message gives the offset."""


@dataclasses.dataclass
class EncodedRecord:
    """A serialized record and where its groups end in it."""

    data: bytes
    num_items: int
    payload_offset: int
    group_ends: list[int]  # absolute: one past group k at group_ends[k - 1]
    header_crc32c: int  # the preamble's: the record's identity


def encode_record(
    parts: Sequence[Sequence[bytes]],
    labels: Sequence[int],
    keys: Sequence[bytes] = (),
    crc: Callable[[bytes], int] = crc32c,
    flags: int = 0,
) -> EncodedRecord:
    """Serializes one record. parts[i] lists item i's parts; items may have different numbers of parts: the record
    has max(len) groups and shorter items get empty parts. With flags=WHOLE_ITEMS, parts[i] is [item i]."""
    if flags & ~WHOLE_ITEMS:
        raise RecordFormatError(f"unknown flags {flags:#x}")
    num_items = len(parts)
    if not 1 <= num_items <= MAX_ITEMS:
        raise RecordFormatError(f"a record holds 1 to {MAX_ITEMS} items, got {num_items}")
    if len(labels) != num_items or (keys and len(keys) != num_items):
        raise RecordFormatError("one label (and one key, when keys are given) per item")
    num_groups = max(len(p) for p in parts)
    if not 1 <= num_groups <= MAX_GROUPS:
        raise RecordFormatError(f"items have 1 to {MAX_GROUPS} parts, got {num_groups}")
    if flags & WHOLE_ITEMS and num_groups != 1:
        raise RecordFormatError(f"a record of whole items has one group, got {num_groups}")

    groups = [b"".join(p[k] if k < len(p) else b"" for p in parts) for k in range(num_groups)]
    header = records_pb2.RecordHeader(
        num_items=num_items,
        num_groups=num_groups,
        labels=list(labels),
        keys=list(keys),
        part_sizes=[len(p[k]) if k < len(p) else 0 for k in range(num_groups) for p in parts],
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
        num_items=num_items,
        payload_offset=payload_offset,
        group_ends=[payload_offset + e for e in header.group_ends],
        header_crc32c=crc(header_bytes),
    )


@dataclasses.dataclass
class DecodedItem:
    data: bytes
    label: int
    key: bytes


@dataclasses.dataclass
class Preamble:
    header_length: int
    header_crc32c: int
    flags: int

    @property
    def payload_offset(self) -> int:
        return PREAMBLE.size + self.header_length


def parse_preamble(data: bytes) -> Preamble:
    """Validates the preamble (the first 24 bytes of `data`)."""
    if len(data) < PREAMBLE.size:
        raise RecordFormatError(f"offset {len(data)}: file ends inside the 24-byte preamble")
    magic, version, header_length, header_crc, flags = PREAMBLE.unpack_from(data)
    if magic != RECORD_MAGIC:
        raise RecordFormatError("offset 0: bad magic: not a tfliquid record")
    if version != FORMAT_VERSION:
        raise RecordFormatError(f"offset 8: unsupported format version {version}")
    if flags & ~WHOLE_ITEMS:
        raise RecordFormatError(f"offset 20: unknown flags {flags:#x}")
    return Preamble(header_length, header_crc, flags)


def parse_header(data: bytes, crc: Callable[[bytes], int] = crc32c) -> records_pb2.RecordHeader:
    """Validates preamble and header of a record prefix (at least preamble + header bytes)."""
    preamble = parse_preamble(data)
    if preamble.payload_offset > len(data):
        raise RecordFormatError(f"offset 12: header length {preamble.header_length} runs past the {len(data)} bytes")
    header_bytes = data[PREAMBLE.size : preamble.payload_offset]
    if crc(header_bytes) != preamble.header_crc32c:
        raise RecordFormatError("offset 24: header CRC32C mismatch")
    try:
        header = records_pb2.RecordHeader.FromString(header_bytes)
    except DecodeError:
        raise RecordFormatError("offset 24: the header message cannot be parsed") from None
    n, g = header.num_items, header.num_groups
    if not (
        1 <= n <= MAX_ITEMS
        and 1 <= g <= MAX_GROUPS
        and len(header.labels) == n
        and len(header.keys) in (0, n)
        and len(header.part_sizes) == n * g
        and len(header.group_ends) == g
        and len(header.group_crc32c) == g
    ):
        raise RecordFormatError("offset 24: header fields are inconsistent")
    if preamble.flags & WHOLE_ITEMS and g != 1:
        raise RecordFormatError(f"offset 24: a record of whole items has one group, not {g}")
    return header


def decode_record(data: bytes, group: int | None = None, crc: Callable[[bytes], int] = crc32c) -> list[DecodedItem]:
    """Reference decoder: every item of a record prefix up to `group` (None: all), in stored order.

    `data` may be just the prefix up to that group; the CRC of every group read is checked.
    """
    header = parse_header(data, crc)
    n, g = header.num_items, header.num_groups
    groups = g if group is None else min(group, g)
    if groups < 1:
        raise RecordFormatError("group must be >= 1")
    payload = parse_preamble(data).payload_offset
    items = [bytearray() for _ in range(n)]
    start = payload
    for k in range(groups):
        end = payload + header.group_ends[k]
        if end > len(data):
            raise RecordFormatError(f"offset {len(data)}: record ends before group {k + 1} (at {end})")
        if crc(data[start:end]) != header.group_crc32c[k]:
            raise RecordFormatError(f"offset {start}: group {k + 1} CRC32C mismatch")
        offset = start
        for i in range(n):
            size = header.part_sizes[k * n + i]
            items[i] += data[offset : offset + size]
            offset += size
        if offset != end:
            raise RecordFormatError(f"offset {start}: group {k + 1} size does not match its parts")
        start = end
    keys = list(header.keys) or [b""] * n
    return [DecodedItem(bytes(item), label, key) for item, label, key in zip(items, header.labels, keys)]


def check_record(data: bytes, crc: Callable[[bytes], int] = crc32c) -> records_pb2.RecordHeader:
    """The header of a whole record file, after checking that the file ends where its last group does and that
    every group's CRC32C is right."""
    header = parse_header(data, crc)
    payload = parse_preamble(data).payload_offset
    if payload + header.group_ends[-1] != len(data):
        raise RecordFormatError(f"offset {len(data)}: the record's groups end at {payload + header.group_ends[-1]}")
    start = payload
    for k, (end, stored) in enumerate(zip(header.group_ends, header.group_crc32c)):
        if crc(data[start : payload + end]) != stored:
            raise RecordFormatError(f"offset {start}: group {k + 1} CRC32C mismatch")
        start = payload + end
    return header


def group_end(ends: Sequence[int], group: int) -> int:
    """Where group `group` (1-based) ends in a record (or an item) whose groups end at `ends`: the rule of which
    bytes hold the items up to a group. A record with fewer groups is read whole."""
    return ends[min(group, len(ends)) - 1]
