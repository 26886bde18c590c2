"""PCR on records: which bytes are scan group g, the readable reference decoder (the test oracle), and the
dataset index. Specified in docs/formats/pcr.md.

A PCR record is a record container (tfliquid.records.format) whose items are images and whose groups are scan
groups: part k of image i is its k-th scan (`tfliquid.jpeg.scans.split_partials`), so the prefix of a record up
to scan group g holds every image at that fidelity. Image i at scan group g = its parts 1..min(g, its scans) |
EOI. The index (`index.pcrindex`) lists the records with where each scan group ends, so that a reader issues one
read per record.

This module has no TensorFlow dependency. The CRC function is a parameter: readers pass the C++ one
(tfliquid._lib.crc32c_fast), the tests the readable `crc32c`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from google.protobuf.message import DecodeError

from tfliquid._common import message_file
from tfliquid._common.checks import check_path_exists
from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import PathError
from tfliquid._common.files import write_atomically
from tfliquid._proto import pcr_pb2
from tfliquid.jpeg.scans import EOI
from tfliquid.records import format as records_format
from tfliquid.records.format import RecordFormatError

FORMAT_VERSION = records_format.FORMAT_VERSION  # of records, and DatasetIndex.format_version
INDEX_MAGIC = b"\x89PCI\r\n\x1a\n"
INDEX_VERSION = 2  # of the index file: tfliquid._common.message_file's layout
INDEX_V1_FIRST_BYTE = b"\x08"  # version 1 had no header: the message's first byte, field 1 (varint) tag
MAX_SCAN_GROUPS = records_format.MAX_GROUPS
INDEX_FILENAME = "index.pcrindex"

# A PCR record or index that violates the format; the message gives the file and the offset.
PCRFormatError = RecordFormatError


def decode_record(data: bytes, scan_group: int | None = None, crc: Callable[[bytes], int] = crc32c) -> list:
    """Reference decoder: every image of a PCR record prefix at `scan_group` (None = full fidelity), in stored
    order, as DecodedItems whose `data` is the progressive JPEG at that group (closed with EOI)."""
    if records_format.parse_preamble(data).flags & records_format.WHOLE_ITEMS:
        raise PCRFormatError("offset 20: a record of whole items (Liquid's), not of scan groups")
    items = records_format.decode_record(data, scan_group, crc)
    for item in items:
        item.data += EOI
    return items


def read_index(dataset_dir: str, crc: Callable[[bytes], int] = crc32c) -> pcr_pb2.DatasetIndex:
    """Reads and validates DATASET/index.pcrindex (index version 2, or version 1, which has no checksum)."""
    path = os.path.join(dataset_dir, INDEX_FILENAME)
    check_path_exists(dataset_dir)
    if os.path.isfile(dataset_dir):
        raise PCRFormatError(f"{dataset_dir} is a file; a PCR dataset is the directory that holds {INDEX_FILENAME}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise PathError(
            f"{dataset_dir} is not a PCR dataset: {INDEX_FILENAME} is missing "
            "(convert one with `tfliquid convert pcr SRC DST`)"
        ) from None
    if data[len(INDEX_MAGIC) : len(INDEX_MAGIC) + 1] == INDEX_V1_FIRST_BYTE and data.startswith(INDEX_MAGIC):
        # version 1: the message follows the magic, with no version and no checksum
        try:
            index = pcr_pb2.DatasetIndex.FromString(data[len(INDEX_MAGIC) :])
        except DecodeError:
            raise PCRFormatError(f"{path}: the index message cannot be parsed: the index is damaged") from None
    else:
        index = message_file.decode(
            path, data, INDEX_MAGIC, INDEX_VERSION, pcr_pb2.DatasetIndex, crc, PCRFormatError, "PCR index"
        )
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
        if not ends or not record.num_images or record.payload_offset < records_format.PREAMBLE.size:
            raise PCRFormatError(f"{where}: empty entry")
        if len(ends) > index.num_scan_groups or any(b < a for a, b in zip([record.payload_offset, *ends], ends)):
            raise PCRFormatError(f"{where}: scan group ends are not increasing, or more than the dataset's groups")
    if sum(r.num_images for r in index.records) != index.num_images:
        raise PCRFormatError(f"{path}: the records hold other than the {index.num_images} images the index counts")


def index_entry(written) -> pcr_pb2.RecordEntry:
    """The index entry of a record the record job wrote (tfliquid.records.job.WrittenRecord)."""
    return pcr_pb2.RecordEntry(
        path=written.path,
        num_images=written.num_items,
        payload_offset=written.payload_offset,
        prefix_ends=written.group_ends,
        header_crc32c=written.header_crc32c,
    )


def write_index(dataset_dir: str, index: pcr_pb2.DatasetIndex, crc: Callable[[bytes], int] = crc32c) -> None:
    """Writes the index (version 2) atomically (temp file + rename): readers see the old one or the new one."""
    data = message_file.encode(INDEX_MAGIC, INDEX_VERSION, index, crc)
    write_atomically(os.path.join(dataset_dir, INDEX_FILENAME), data)


def prefix_end(ends: Sequence[int], scan_group: int) -> int:
    """Where scan group `scan_group` (1-based) ends in a record or an image with these scan group ends: the rule
    of which bytes are scan group g (docs/formats/pcr.md). A record or image with fewer groups is read whole."""
    return records_format.group_end(ends, scan_group)


def record_prefix_bytes(index: pcr_pb2.DatasetIndex, scan_group: int) -> list[int]:
    """Bytes of each record's prefix up to `scan_group`: what reading the record at that scan group reads."""
    return [prefix_end(r.prefix_ends, scan_group) for r in index.records]


def prefix_bytes(index: pcr_pb2.DatasetIndex, scan_group: int) -> int:
    """Bytes of all record prefixes up to `scan_group`: what one epoch at that scan group reads."""
    return sum(record_prefix_bytes(index, scan_group))
