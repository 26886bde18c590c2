"""The file layout of a dataset's description (a PCR index, a Liquid manifest): a magic, a version, the CRC32C of a
protobuf message, then the message. All integers little-endian::

    offset 0: 8-byte magic | 8: u32 version | 12: u32 crc32c(message) | 16: message, to the end of the file

One codec for both, so that a damaged description is always an error naming the file and the offset, never other
counts or names."""

from __future__ import annotations

import struct
from collections.abc import Callable

from google.protobuf.message import DecodeError

from tfliquid._common.errors import FormatError

HEADER = struct.Struct("<8sII")  # magic, version, crc32c(message)


def encode(magic: bytes, version: int, message, crc: Callable[[bytes], int]) -> bytes:
    body = message.SerializeToString()
    return HEADER.pack(magic, version, crc(body)) + body


def decode(
    path: str,
    data: bytes,
    magic: bytes,
    version: int,
    message_type,
    crc: Callable[[bytes], int],
    error: type[FormatError],
    what: str,
):
    """The `message_type` message of the file `path` holding `data`, checked: `error` naming the file, the offset and
    `what` the file is ("PCR index", "Liquid manifest") otherwise."""
    if not magic.startswith(data[: len(magic)]):  # a prefix of the magic is a file cut short
        raise error(f"{path}: offset 0: bad magic: not a {what}")
    if len(data) < HEADER.size:
        raise error(f"{path}: offset {len(data)}: the {what} ends inside its {HEADER.size}-byte header")
    _, found_version, stored_crc = HEADER.unpack_from(data)
    if found_version != version:
        raise error(f"{path}: offset 8: unsupported {what} version {found_version} (this reader reads {version})")
    body = data[HEADER.size :]
    if crc(body) != stored_crc:
        raise error(f"{path}: offset 12: {what} CRC32C mismatch: the {what} is damaged")
    try:
        return message_type.FromString(body)
    except DecodeError:
        raise error(f"{path}: offset {HEADER.size}: the {what} message cannot be parsed: it is damaged") from None
