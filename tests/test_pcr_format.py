"""The PCR record format: reference encoder/decoder, CRC32C, and the C++ reader's hand-written wire decoder
against headers written by Python protobuf (unknown fields, unpacked repeated fields)."""

import struct

import numpy as np
import pytest
import tensorflow as tf

import tfliquid
from tfliquid._proto import pcr_pb2
from tfliquid.data.pcr_dataset import _PCRRecordDataset
from tfliquid.formats import jpeg as jpeg_format
from tfliquid.formats import pcr as pcr_format


def test_crc32c_known_vector_and_cpp_agrees():
    assert pcr_format.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = np.random.default_rng(0)
    for size in (0, 1, 7, 8, 9, 1000, 4097):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        assert int(tfliquid.io.crc32c(data)) == pcr_format.crc32c(data)


def _partials(zoo, names):
    return [jpeg_format.split_partials(zoo[n]) for n in names]


NAMES = ["progressive", "progressive_grey", "progressive_six_scans", "progressive_restart"]


def test_reference_round_trip_every_scan_group(zoo):
    partials = _partials(zoo, NAMES)
    record = pcr_format.encode_record(partials, labels=[3, 1, 4, 1], keys=[n.encode() for n in NAMES])
    assert len(record.prefix_ends) == 10  # the colour images' scan count; grey (6) and six-scan get empty ones
    for g in range(1, 11):
        prefix = record.data[:record.prefix_ends[g - 1]]  # one contiguous read
        images = pcr_format.decode_record(prefix, g)
        assert [i.label for i in images] == [3, 1, 4, 1]
        assert [i.key for i in images] == [n.encode() for n in NAMES]
        for image, parts in zip(images, partials):
            assert image.jpeg == jpeg_format.join_partials(parts, min(g, len(parts)))
    full = pcr_format.decode_record(record.data)
    assert [i.jpeg[:-2] for i in full] == [zoo[n][:jpeg_format.scan_ends(zoo[n])[-1]] for n in NAMES]


def test_reference_rejects_bad_inputs(zoo):
    record = pcr_format.encode_record(_partials(zoo, NAMES[:2]), labels=[0, 1])
    with pytest.raises(pcr_format.PCRFormatError, match="offset 0: bad magic"):
        pcr_format.decode_record(b"\x00" * 8 + record.data[8:])
    with pytest.raises(pcr_format.PCRFormatError, match="header CRC32C"):
        pcr_format.decode_record(record.data[:30] + bytes([record.data[30] ^ 1]) + record.data[31:])
    flipped = bytearray(record.data)
    flipped[record.payload_offset + 5] ^= 0x40
    with pytest.raises(pcr_format.PCRFormatError, match=f"offset {record.payload_offset}: scan group 1 CRC32C"):
        pcr_format.decode_record(bytes(flipped))
    with pytest.raises(pcr_format.PCRFormatError, match="one label"):
        pcr_format.encode_record(_partials(zoo, NAMES[:2]), labels=[0])


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _write_record(path, header_bytes: bytes, groups: list[bytes]) -> pcr_pb2.RecordEntry:
    preamble = pcr_format.PREAMBLE.pack(pcr_format.RECORD_MAGIC, 1, len(header_bytes),
                                        pcr_format.crc32c(header_bytes), 0)
    path.write_bytes(preamble + header_bytes + b"".join(groups))
    offset = len(preamble) + len(header_bytes)
    ends, end = [], offset
    for g in groups:
        end += len(g)
        ends.append(end)
    return pcr_pb2.RecordEntry(path=str(path), num_images=0, payload_offset=offset, prefix_ends=ends)


def _read_cpp(path, entry, scan_group):
    ds = _PCRRecordDataset(str(path), list(entry.prefix_ends), scan_group, 0, False, with_keys=True)
    return [(bytes(x["image"]), int(x["label"]), bytes(x["key"])) for x in ds.as_numpy_iterator()]


def test_cpp_header_decoder_skips_unknown_fields_and_reads_unpacked_fields(zoo, tmp_path):
    partials = _partials(zoo, NAMES)
    labels = [7, -2, 2**40, 0]  # negative and wide labels exercise 10-byte varints
    reference = pcr_format.encode_record(partials, labels, keys=[b"a", b"", b"c", b"d"])
    header = pcr_format.parse_header(reference.data)
    groups = [reference.data[reference.payload_offset + s:reference.payload_offset + e]
              for s, e in zip([0, *header.group_ends], header.group_ends)]

    # Unpacked labels (one tag per value, as proto2 writers emit them), then fields from a future version:
    # varint, fixed64, length-delimited and fixed32, before and after the known ones.
    unpacked = pcr_pb2.RecordHeader()
    unpacked.CopyFrom(header)
    del unpacked.labels[:]
    unknown_before = _varint(99 << 3 | 0) + _varint(12345) + _varint(100 << 3 | 1) + struct.pack("<Q", 7)
    unknown_after = (_varint(101 << 3 | 2) + _varint(5) + b"hello" + _varint(102 << 3 | 5) + struct.pack("<I", 9))
    labels_unpacked = b"".join(_varint(3 << 3 | 0) + _varint(label) for label in labels)
    header_bytes = unknown_before + unpacked.SerializeToString() + labels_unpacked + unknown_after
    assert list(pcr_pb2.RecordHeader.FromString(header_bytes).labels) == labels  # what protobuf itself reads

    entry = _write_record(tmp_path / "future.pcr", header_bytes, groups)
    for g in (1, 3, 10):
        expected = pcr_format.decode_record(reference.data, g)
        assert _read_cpp(tmp_path / "future.pcr", entry, g) == [(i.jpeg, i.label, i.key) for i in expected]


@pytest.mark.parametrize("mutation, message", [
    ("group_type", "malformed header field 1"),  # num_images sent as length-delimited
    ("truncated_varint", "malformed header"),
    ("group_wire_type", "malformed header"),  # wire type 3 (groups) is rejected
    ("labels_missing", "0 labels for 2 images"),
    ("sizes_mismatch", "scan group 1 spans"),
])
def test_cpp_header_decoder_errors(zoo, tmp_path, mutation, message):
    reference = pcr_format.encode_record(_partials(zoo, NAMES[:2]), [0, 1])
    header = pcr_format.parse_header(reference.data)
    payload = reference.data[reference.payload_offset:]
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
        header.partial_sizes[0] += 1
        header_bytes = header.SerializeToString()
    path = tmp_path / f"{mutation}.pcr"
    entry = _write_record(path, header_bytes, [payload])
    entry.prefix_ends[:] = [len(path.read_bytes())]
    with pytest.raises(tf.errors.DataLossError, match=f"{mutation}.pcr: offset {offset}: .*{message}"):
        _read_cpp(path, entry, 1)


def test_cpp_reader_survives_random_corruption(zoo, tmp_path):
    """Mutated records (bit flips in preamble, header and payload, truncations) give DataLoss errors or,
    where the mutation hits nothing that is checked, images; never a crash."""
    reference = pcr_format.encode_record(_partials(zoo, NAMES), [0, 1, 2, 3])
    rng = np.random.default_rng(0)
    outcomes = {"error": 0, "read": 0}
    for trial in range(150):
        data = bytearray(reference.data)
        if trial % 3 == 0:
            data = data[:rng.integers(0, len(data))]
        else:
            region = reference.payload_offset if trial % 3 == 1 else len(data)
            for _ in range(rng.integers(1, 4)):
                data[rng.integers(0, region)] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"fuzz{trial}.pcr"
        path.write_bytes(bytes(data))
        entry = pcr_pb2.RecordEntry(prefix_ends=[min(e, len(data)) for e in reference.prefix_ends])
        try:
            images = _read_cpp(path, entry, 10)
            assert len(images) == 4
            outcomes["read"] += 1
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
            assert f"fuzz{trial}.pcr" in e.message and "offset" in e.message
            outcomes["error"] += 1
    assert outcomes["error"] > 100  # CRCs catch nearly every mutation
