"""MinIO cache directory format (docs/formats/cache.md): the readable reference, the oracle of ops/cache/.

    item   = "LQCITEM1" | u32 key_length | u32 tensor_count | key | tensor... | u32 crc32c(everything before)
    tensor = u32 dtype (TensorFlow enum) | u32 rank | i64 dims[rank] | data
    data   = elements little-endian, or for strings: (u64 length | bytes) per element
    LEDGER = "LQCLEDG1" | u64 capacity_bytes | u64 bytes | u64 items | u32 crc32c(first 32 bytes)

No TensorFlow import: arrays are NumPy (strings: object arrays of bytes).
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable, Sequence

import numpy as np

from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import ArgumentError, FormatError

ITEM_MAGIC = b"LQCITEM1"
LEDGER_MAGIC = b"LQCLEDG1"
MAX_KEY_BYTES = 65536
MAX_TENSORS = 4096
MAX_RANK = 254
DT_STRING = 7
# TensorFlow DataType enum -> NumPy dtype (little-endian) for the dtypes NumPy has.
DTYPES = {
    1: "<f4",
    2: "<f8",
    3: "<i4",
    4: "u1",
    5: "<i2",
    6: "i1",
    8: "<c8",
    9: "<i8",
    10: "?",
    17: "<u2",
    18: "<c16",
    19: "<f2",
    22: "<u4",
    23: "<u8",
}
_ENUM_OF = {np.dtype(v): k for k, v in DTYPES.items()}
_HEADER = struct.Struct("<8sII")
_LEDGER = struct.Struct("<8sQQQ")
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


class CacheFormatError(FormatError):
    """An item or ledger is not complete and intact; the message gives the offset."""


def encode_item(key: bytes, arrays: Sequence[np.ndarray], crc: Callable[[bytes], int] = crc32c) -> bytes:
    """The item file of `key` holding `arrays` (numbers, bool, or object arrays of bytes for strings)."""
    if not 1 <= len(key) <= MAX_KEY_BYTES:
        raise ArgumentError(f"key must be 1..{MAX_KEY_BYTES} bytes, got {len(key)}")
    if not 1 <= len(arrays) <= MAX_TENSORS:
        raise ArgumentError(f"an item holds 1..{MAX_TENSORS} arrays, got {len(arrays)}")
    out = [_HEADER.pack(ITEM_MAGIC, len(key), len(arrays)), key]
    for array in arrays:
        array = np.asarray(array)
        if array.dtype == object or array.dtype.kind == "S":
            out.append(struct.pack("<II", DT_STRING, array.ndim) + struct.pack(f"<{array.ndim}q", *array.shape))
            for element in array.reshape(-1):
                out.append(struct.pack("<Q", len(element)) + bytes(element))
            continue
        little = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if little not in _ENUM_OF:
            raise ArgumentError(f"cannot store dtype {array.dtype}")
        out.append(struct.pack("<II", _ENUM_OF[little], array.ndim) + struct.pack(f"<{array.ndim}q", *array.shape))
        out.append(np.ascontiguousarray(array, dtype=little).tobytes())
    body = b"".join(out)
    return body + struct.pack("<I", crc(body))


def decode_item(data: bytes, crc: Callable[[bytes], int] = crc32c) -> tuple[bytes, list[np.ndarray]]:
    """(key, arrays) of an item file; CacheFormatError if it is not complete and intact."""
    if len(data) < _HEADER.size + 4:
        raise CacheFormatError(f"offset 0: item of {len(data)} bytes is too short")
    magic, key_length, count = _HEADER.unpack_from(data)
    if magic != ITEM_MAGIC:
        raise CacheFormatError("offset 0: not a version-1 cache item")
    (stored_crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if crc(data[:-4]) != stored_crc:
        raise CacheFormatError(f"offset {len(data) - 4}: CRC mismatch")
    if not 1 <= key_length <= MAX_KEY_BYTES or not 1 <= count <= MAX_TENSORS:
        raise CacheFormatError("offset 8: key length or tensor count out of range")
    reader = _Reader(data, _HEADER.size, len(data) - 4)
    key = reader.take(key_length)
    arrays = [_decode_array(reader) for _ in range(count)]
    if reader.pos != reader.end:
        raise CacheFormatError(f"offset {reader.pos}: {reader.end - reader.pos} bytes after the last tensor")
    return key, arrays


def key_hash(key: bytes) -> str:
    """32 hex digits: two FNV-1a-64 hashes of the key, each finished with the splitmix64 mixer."""
    return "".join(f"{_fnv1a_splitmix(key, basis):016x}" for basis in (0xCBF29CE484222325, 0x84222325CBF29CE4))


def item_path(directory: str, key: bytes) -> str:
    """Where a cache directory stores the item of `key`."""
    digest = key_hash(key)
    return os.path.join(directory, "items", digest[:2], digest[2:] + ".item")


@dataclasses.dataclass
class Ledger:
    capacity_bytes: int
    bytes: int
    items: int


def encode_ledger(ledger: Ledger) -> bytes:
    body = _LEDGER.pack(LEDGER_MAGIC, ledger.capacity_bytes, ledger.bytes, ledger.items)
    return body + struct.pack("<I", crc32c(body))


def decode_ledger(data: bytes) -> Ledger:
    if len(data) != _LEDGER.size + 4:
        raise CacheFormatError(f"offset 0: a ledger is {_LEDGER.size + 4} bytes, got {len(data)}")
    magic, capacity, used, items = _LEDGER.unpack_from(data)
    if magic != LEDGER_MAGIC:
        raise CacheFormatError("offset 0: not a version-1 ledger")
    if struct.unpack_from("<I", data, _LEDGER.size)[0] != crc32c(data[: _LEDGER.size]):
        raise CacheFormatError(f"offset {_LEDGER.size}: CRC mismatch")
    return Ledger(capacity, used, items)


class _Reader:
    def __init__(self, data: bytes, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise CacheFormatError(f"offset {self.pos}: {n} bytes past the end")
        self.pos += n
        return self.data[self.pos - n : self.pos]

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))


def _decode_array(reader: _Reader) -> np.ndarray:
    start = reader.pos
    dtype, rank = reader.unpack("<II")
    if rank > MAX_RANK:
        raise CacheFormatError(f"offset {start}: rank {rank} > {MAX_RANK}")
    shape = reader.unpack(f"<{rank}q")
    if any(d < 0 for d in shape):
        raise CacheFormatError(f"offset {start}: negative dimension in {shape}")
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if dtype == DT_STRING:
        elements = [reader.take(reader.unpack("<Q")[0]) for _ in range(count)]
        array = np.empty(count, dtype=object)
        array[:] = elements
        return array.reshape(shape)
    if dtype not in DTYPES:
        raise CacheFormatError(f"offset {start}: unsupported dtype {dtype}")
    element = np.dtype(DTYPES[dtype])
    return np.frombuffer(reader.take(count * element.itemsize), dtype=element).reshape(shape)


def _fnv1a_splitmix(key: bytes, basis: int) -> int:
    h = basis
    for byte in key:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & _MASK
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & _MASK
    return h ^ (h >> 31)
