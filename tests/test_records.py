"""The record container PCR and Liquid share: reference encoder/decoder, CRC32C, PCR's scan groups on it, and the
C++ reader's hand-written wire decoder against headers written by Python protobuf (unknown fields, unpacked
repeated fields)."""

import struct

import numpy as np
import pytest
import tensorflow as tf

from tfliquid._common.crc32c import crc32c
from tfliquid._lib import crc32c_fast
from tfliquid._proto import records_pb2
from tfliquid.jpeg import scans as jpeg_format
from tfliquid.pcr import format as pcr_format
from tfliquid.records import RecordDataset, record_bytes
from tfliquid.records import format as records_format


def test_crc32c_known_vector_and_cpp_agrees():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = np.random.default_rng(0)
    for size in (0, 1, 7, 8, 9, 1000, 4097):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        assert crc32c_fast(data) == crc32c(data)


def _partials(zoo, names):
    return [jpeg_format.split_partials(zoo[n]) for n in names]


NAMES = ["progressive", "progressive_grey", "progressive_six_scans", "progressive_restart"]


def test_reference_round_trip_every_scan_group(zoo):
    """PCR's images on the container: part k of an image is its k-th scan, and a prefix read up to group g holds
    every image at that fidelity (closed with EOI by PCR's decoder)."""
    partials = _partials(zoo, NAMES)
    record = records_format.encode_record(partials, labels=[3, 1, 4, 1], keys=[n.encode() for n in NAMES])
    assert len(record.group_ends) == 10  # the colour images' scan count; grey (6) and six-scan get empty ones
    for g in range(1, 11):
        prefix = record.data[: record.group_ends[g - 1]]  # one contiguous read
        images = pcr_format.decode_record(prefix, g)
        assert [i.label for i in images] == [3, 1, 4, 1]
        assert [i.key for i in images] == [n.encode() for n in NAMES]
        for image, parts in zip(images, partials):
            assert image.data == jpeg_format.join_partials(parts, min(g, len(parts)))
        items = records_format.decode_record(prefix, g)  # the container's items: the parts, no EOI
        assert [i.data + jpeg_format.EOI for i in items] == [i.data for i in images]
    full = pcr_format.decode_record(record.data)
    assert [i.data[:-2] for i in full] == [zoo[n][: jpeg_format.scan_ends(zoo[n])[-1]] for n in NAMES]


def test_records_of_whole_items_are_not_pcr_records():
    record = records_format.encode_record([[b"item one"], [b"two"]], [0, 1], flags=records_format.WHOLE_ITEMS)
    assert [i.data for i in records_format.decode_record(record.data)] == [b"item one", b"two"]
    with pytest.raises(pcr_format.PCRFormatError, match="offset 20: a record of whole items"):
        pcr_format.decode_record(record.data)
    with pytest.raises(records_format.RecordFormatError, match="a record of whole items has one group, got 2"):
        records_format.encode_record([[b"a", b"b"]], [0], flags=records_format.WHOLE_ITEMS)


def test_reference_rejects_bad_inputs(zoo):
    record = records_format.encode_record(_partials(zoo, NAMES[:2]), labels=[0, 1])
    with pytest.raises(records_format.RecordFormatError, match="offset 0: bad magic"):
        records_format.decode_record(b"\x00" * 8 + record.data[8:])
    with pytest.raises(records_format.RecordFormatError, match="header CRC32C"):
        records_format.decode_record(record.data[:30] + bytes([record.data[30] ^ 1]) + record.data[31:])
    flipped = bytearray(record.data)
    flipped[record.payload_offset + 5] ^= 0x40
    with pytest.raises(records_format.RecordFormatError, match=f"offset {record.payload_offset}: group 1 CRC32C"):
        records_format.decode_record(bytes(flipped))
    with pytest.raises(records_format.RecordFormatError, match=f"offset {record.payload_offset}: group 1 CRC32C"):
        records_format.check_record(bytes(flipped))
    with pytest.raises(records_format.RecordFormatError, match="the record's groups end at"):
        records_format.check_record(record.data[:-1])
    with pytest.raises(records_format.RecordFormatError, match="one label"):
        records_format.encode_record(_partials(zoo, NAMES[:2]), labels=[0])


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _write_record(path, header_bytes: bytes, groups: list[bytes]) -> list[int]:
    """Writes a record of this header and these groups; returns where its groups end."""
    preamble = records_format.PREAMBLE.pack(records_format.RECORD_MAGIC, 1, len(header_bytes), crc32c(header_bytes), 0)
    path.write_bytes(preamble + header_bytes + b"".join(groups))
    ends, end = [], len(preamble) + len(header_bytes)
    for g in groups:
        end += len(g)
        ends.append(end)
    return ends


def _read_cpp(path, group_ends, group, item_format="jpeg"):
    """The record's items as the C++ reader emits them (PCR's: each closed with EOI)."""
    source = record_bytes(str(path), records_format.group_end(group_ends, group))
    ds = RecordDataset(source, str(path), group, with_keys=True, item_format=item_format)
    return [(bytes(x["item"]), int(x["label"]), bytes(x["key"])) for x in ds.as_numpy_iterator()]


def test_cpp_header_decoder_skips_unknown_fields_and_reads_unpacked_fields(zoo, tmp_path):
    partials = _partials(zoo, NAMES)
    labels = [7, -2, 2**40, 0]  # negative and wide labels exercise 10-byte varints
    reference = records_format.encode_record(partials, labels, keys=[b"a", b"", b"c", b"d"])
    header = records_format.parse_header(reference.data)
    groups = [
        reference.data[reference.payload_offset + s : reference.payload_offset + e]
        for s, e in zip([0, *header.group_ends], header.group_ends)
    ]

    # Unpacked labels (one tag per value, as proto2 writers emit them), then fields from a future version:
    # varint, fixed64, length-delimited and fixed32, before and after the known ones.
    unpacked = records_pb2.RecordHeader()
    unpacked.CopyFrom(header)
    del unpacked.labels[:]
    unknown_before = _varint(99 << 3 | 0) + _varint(12345) + _varint(100 << 3 | 1) + struct.pack("<Q", 7)
    unknown_after = _varint(101 << 3 | 2) + _varint(5) + b"hello" + _varint(102 << 3 | 5) + struct.pack("<I", 9)
    labels_unpacked = b"".join(_varint(3 << 3 | 0) + _varint(label) for label in labels)
    header_bytes = unknown_before + unpacked.SerializeToString() + labels_unpacked + unknown_after
    assert list(records_pb2.RecordHeader.FromString(header_bytes).labels) == labels  # what protobuf itself reads

    ends = _write_record(tmp_path / "future.pcr", header_bytes, groups)
    for g in (1, 3, 10):
        expected = pcr_format.decode_record(reference.data, g)
        assert _read_cpp(tmp_path / "future.pcr", ends, g) == [(i.data, i.label, i.key) for i in expected]
        items = records_format.decode_record(reference.data, g)
        assert _read_cpp(tmp_path / "future.pcr", ends, g, "bytes") == [(i.data, i.label, i.key) for i in items]


@pytest.mark.parametrize(
    "mutation, message",
    [
        ("group_type", "malformed header field 1"),  # num_items sent as length-delimited
        ("truncated_varint", "malformed header"),
        ("group_wire_type", "malformed header"),  # wire type 3 (groups) is rejected
        ("labels_missing", "0 labels for 2 items"),
        ("sizes_mismatch", "group 1 spans"),
    ],
)
def test_cpp_header_decoder_errors(zoo, tmp_path, mutation, message):
    reference = records_format.encode_record(_partials(zoo, NAMES[:2]), [0, 1])
    header = records_format.parse_header(reference.data)
    payload = reference.data[reference.payload_offset :]
    offset = 24  # the header's start, where invariant errors point
    if mutation == "group_type":
        header_bytes = _varint(1 << 3 | 2) + _varint(1) + b"\x02" + header.SerializeToString()
    elif mutation == "truncated_varint":
        header_bytes = header.SerializeToString() + b"\x08\xff"
        offset += len(header.SerializeToString())  # the field's own offset
    elif mutation == "group_wire_type":
        header_bytes = header.SerializeToString() + _varint(50 << 3 | 3)
        offset += len(header.SerializeToString())
    elif mutation == "labels_missing":
        del header.labels[:]
        header_bytes = header.SerializeToString()
    else:
        header.part_sizes[0] += 1
        header_bytes = header.SerializeToString()
    path = tmp_path / f"{mutation}.pcr"
    _write_record(path, header_bytes, [payload])
    with pytest.raises(tf.errors.DataLossError, match=f"{mutation}.pcr: offset {offset}: .*{message}"):
        _read_cpp(path, [len(path.read_bytes())], 1)


def test_cpp_reader_survives_random_corruption(zoo, tmp_path):
    """Mutated records (bit flips in preamble, header and payload, truncations) give DataLoss errors or,
    where the mutation hits nothing that is checked, images; never a crash."""
    reference = records_format.encode_record(_partials(zoo, NAMES), [0, 1, 2, 3])
    rng = np.random.default_rng(0)
    outcomes = {"error": 0, "read": 0}
    for trial in range(150):
        data = bytearray(reference.data)
        if trial % 3 == 0:
            data = data[: rng.integers(0, len(data))]
        else:
            region = reference.payload_offset if trial % 3 == 1 else len(data)
            for _ in range(rng.integers(1, 4)):
                data[rng.integers(0, region)] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"fuzz{trial}.pcr"
        path.write_bytes(bytes(data))
        try:
            images = _read_cpp(path, [min(e, len(data)) for e in reference.group_ends], 10)
            assert len(images) == 4
            outcomes["read"] += 1
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
            assert f"fuzz{trial}.pcr" in e.message and "offset" in e.message
            outcomes["error"] += 1
    assert outcomes["error"] > 100  # CRCs catch nearly every mutation
