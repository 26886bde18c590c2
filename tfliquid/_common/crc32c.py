"""CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of records, indexes, manifests and MinIO cache
items: the readable version, the oracle of the C++ one (`tfliquid._lib.crc32c_fast`)."""

from __future__ import annotations

__all__ = ["crc32c"]


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), readable and slow (orders of magnitude slower than the C++ one): its oracle."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ _CRC_TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF
