"""The Liquid format's reference implementation (docs/formats/liquid.md), the test oracle: manifest I/O, the raw
item codec, the plan (exact counts, seeded assignment) and the composition of batches. NumPy and the standard
library only; the decoders of the compressed items are the formats' own."""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable, Sequence

import numpy as np

from tfliquid._common import message_file
from tfliquid._common.checks import check_path_exists
from tfliquid._common.crc32c import crc32c
from tfliquid._common.errors import ArgumentError, FormatError
from tfliquid._proto import liquid_pb2
from tfliquid.records import format as records_format

FORMAT_VERSION = 1
MANIFEST_FILENAME = "manifest.liquid"
MANIFEST_MAGIC = b"\x89LQM\r\n\x1a\n"
RAW_MAGIC = b"\x89RAW"
RAW_HEADER = struct.Struct("<4sIII")  # magic, height, width, channels
MAX_SIDE = 1 << 16
MAX_FORMATS = 4
CHANNELS = (1, 3)
# Every format, in the order decoders are indexed, with the first bytes of its items.
FORMATS = ("raw", "png", "jpeg", "l3")
MAGICS = {"raw": RAW_MAGIC, "png": b"\x89PNG", "jpeg": b"\xff\xd8", "l3": b"\x89L3I"}
LOSSLESS = ("raw", "png", "l3")
PCR_INDEX_FILENAME = "index.pcrindex"  # what a PCR dataset holds instead of a manifest, named in errors


class LiquidFormatError(FormatError):
    """A manifest, record or item violates the format; the message names the file or the offset."""


def encode_raw(pixels: np.ndarray) -> bytes:
    """A raw item: the 16-byte header and the uint8 pixels [H, W, C], row-major."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3:
        raise LiquidFormatError(f"raw items hold uint8 [H, W, C] pixels, got {pixels.dtype} {pixels.shape}")
    height, width, channels = pixels.shape
    if not (1 <= height <= MAX_SIDE and 1 <= width <= MAX_SIDE and channels in CHANNELS):
        raise LiquidFormatError(f"raw items are 1..{MAX_SIDE} pixels a side with 1 or 3 channels, got {pixels.shape}")
    return RAW_HEADER.pack(RAW_MAGIC, height, width, channels) + np.ascontiguousarray(pixels).tobytes()


def decode_raw(item: bytes) -> np.ndarray:
    if len(item) < RAW_HEADER.size:
        raise LiquidFormatError(f"offset {len(item)}: a raw item ends inside its 16-byte header")
    magic, height, width, channels = RAW_HEADER.unpack_from(item)
    if magic != RAW_MAGIC:
        raise LiquidFormatError("offset 0: bad magic: not a raw item")
    if not (1 <= height <= MAX_SIDE and 1 <= width <= MAX_SIDE and channels in CHANNELS):
        raise LiquidFormatError(f"offset 4: shape {height}x{width}x{channels} outside the format's limits")
    if len(item) != RAW_HEADER.size + height * width * channels:
        raise LiquidFormatError(
            f"offset {RAW_HEADER.size}: {len(item) - RAW_HEADER.size} pixel bytes for {height}x{width}x{channels}"
        )
    return np.frombuffer(item, np.uint8, offset=RAW_HEADER.size).reshape(height, width, channels)


def item_format(item: bytes) -> str:
    """The format of an item, from its first bytes."""
    for name, magic in MAGICS.items():
        if item.startswith(magic):
            return name
    raise LiquidFormatError(f"offset 0: an item of no known format (first bytes {item[:4].hex()})")


def parse_ratio(ratio: str | Sequence[int], num_formats: int) -> list[int]:
    """ "3:7" or [3, 7] -> [3, 7]: one integer weight >= 0 per format, with a positive sum."""
    if isinstance(ratio, str):
        try:
            weights = [int(part) for part in ratio.split(":")]
        except ValueError:
            raise ArgumentError(f"a ratio is integers separated by ':', e.g. 3:7; got {ratio!r}") from None
    else:
        weights = list(ratio)
        if not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in weights):
            raise ArgumentError(f"ratio weights must be integers, got {ratio!r}")
    if len(weights) != num_formats:
        raise ArgumentError(f"the ratio has {len(weights)} terms for {num_formats} formats")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ArgumentError(f"ratio weights must be >= 0 with a positive sum, got {weights}")
    return [int(w) for w in weights]


def counts(num_images: int, weights: Sequence[int]) -> list[int]:
    """Images per format, by largest remainder: exact, and within one of num_images * w / sum(w)."""
    total = sum(weights)
    shares = [num_images * w for w in weights]  # over `total`: integer arithmetic, no rounding error
    result = [share // total for share in shares]
    by_remainder = sorted(range(len(weights)), key=lambda f: (-(shares[f] % total), f))
    for f in by_remainder[: num_images - sum(result)]:
        result[f] += 1
    return result


def assignment(num_images: int, weights: Sequence[int], seed: int) -> list[np.ndarray]:
    """For each format, its images (indices into the source), in the order they fill records."""
    order = np.random.default_rng(seed).permutation(num_images)
    ends = np.cumsum(counts(num_images, weights))
    return np.split(order, ends[:-1])


def batch_counts(stream_sizes: Sequence[int], batch_size: int) -> np.ndarray:
    """[num_batches, num_streams]: how many elements each batch of a pass takes from each stream.

    Batch b of size n_b takes floor(n_b * s_k / N) from stream k, and the rest one each from the streams furthest
    behind their share (ties to the lower k), so no stream drifts from its share by two elements or more and a pass
    takes each stream exactly."""
    sizes = _checked_sizes(stream_sizes, batch_size)
    total = int(sizes.sum())
    rows, taken = [], np.zeros_like(sizes)
    for emitted, n in _batch_spans(total, batch_size):
        row = _apportion(n, emitted, sizes, taken)
        rows.append(row)
        taken += row
    return _checked_rows(rows, sizes, stream_sizes, batch_size)


def split_batch_counts(cached_sizes: Sequence[int], uncached_sizes: Sequence[int], batch_size: int) -> np.ndarray:
    """[num_batches, num_formats, 2]: per batch, how many elements of each format come from its cached records
    ([..., 0]) and from its uncached ones ([..., 1]).

    Each format's count in every batch is that of `batch_counts` over the formats (its share, floor or ceil). The
    uncached total aims at `batch_counts` over (cached, uncached), so that every batch reads the same number of
    images from storage, give or take one; it can miss when the cached records are not the same fraction of every
    format, as far as the formats' shares force it. It is split among the formats furthest behind their uncached
    share, within what their streams have left."""
    cached = _checked_sizes(cached_sizes, batch_size, allow_empty=True)
    uncached = _checked_sizes(uncached_sizes, batch_size, allow_empty=True)
    formats = _checked_sizes(cached + uncached, batch_size)
    total = int(formats.sum())
    split = np.array([cached.sum(), uncached.sum()])
    rows, taken, taken_split = [], np.zeros((len(formats), 2), np.int64), np.zeros(2, np.int64)
    for emitted, n in _batch_spans(total, batch_size):
        per_format = _apportion(n, emitted, formats, taken.sum(axis=1))
        from_storage = _apportion(n, emitted, split, taken_split)[1]
        low = np.maximum(0, per_format - (cached - taken[:, 0]))  # what the cached records cannot give
        high = np.minimum(per_format, uncached - taken[:, 1])
        # When the formats' shares leave no room (their cached parts are not the same fraction of each format),
        # the formats' exact shares win and the storage count moves by what they force.
        from_storage = min(max(from_storage, int(low.sum())), int(high.sum()))
        storage = low.copy()
        for _ in range(from_storage - int(low.sum())):
            behind = (emitted + n) * uncached - (taken[:, 1] + storage) * total
            open_formats = [f for f in range(len(formats)) if storage[f] < high[f]]
            storage[max(open_formats, key=lambda f: (behind[f], -f))] += 1
        row = np.stack([per_format - storage, storage], axis=1)
        rows.append(row)
        taken += row
        taken_split += row.sum(axis=0)
    result = np.array(rows, np.int64)
    if (taken[:, 0] != cached).any() or (taken[:, 1] != uncached).any() or (result < 0).any():
        raise AssertionError(f"split_batch_counts({list(cached)}, {list(uncached)}, {batch_size}) took {taken}")
    return result


def _checked_sizes(sizes: Sequence[int], batch_size: int, allow_empty: bool = False) -> np.ndarray:
    array = np.asarray(sizes, np.int64)
    if batch_size < 1 or (array < 0).any() or (array.sum() <= 0 and not allow_empty):
        raise LiquidFormatError(f"batches need a positive batch size and elements, got {batch_size}, {list(sizes)}")
    return array


def _batch_spans(total: int, batch_size: int):
    """(elements emitted before, size) of every batch of a pass."""
    for emitted in range(0, total, batch_size):
        yield emitted, min(batch_size, total - emitted)


def _apportion(n: int, emitted: int, sizes: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """n elements among streams: floor(n * s_k / N) each, the rest one each to the streams furthest behind their
    share after this batch (in units of 1/N, exact integers), ties to the lower k."""
    total = int(sizes.sum())
    base = n * sizes // total
    behind = (emitted + n) * sizes - (taken + base) * total
    row = base.copy()
    for k in sorted(range(len(sizes)), key=lambda k: (-behind[k], k))[: n - int(base.sum())]:
        row[k] += 1
    return row


def _checked_rows(rows, sizes, stream_sizes, batch_size) -> np.ndarray:
    result = np.array(rows, np.int64)
    if (result.sum(axis=0) != sizes).any() or (result < 0).any():  # the docstring's invariant; a bug if it fails
        raise AssertionError(f"batch_counts({list(stream_sizes)}, {batch_size}) took {result.sum(axis=0).tolist()}")
    return result


def write_manifest(dataset_dir: str, manifest: liquid_pb2.LiquidManifest, write=None) -> None:
    """Writes DATASET/manifest.liquid (with `write(path, data)`, e.g. an atomic writer)."""
    data = message_file.encode(MANIFEST_MAGIC, FORMAT_VERSION, manifest, crc32c)
    path = os.path.join(dataset_dir, MANIFEST_FILENAME)
    if write is None:
        with open(path, "wb") as f:
            f.write(data)
    else:
        write(path, data)


def read_manifest(dataset_dir: str, crc: Callable[[bytes], int] = crc32c) -> liquid_pb2.LiquidManifest:
    """Reads and validates DATASET/manifest.liquid."""
    path = os.path.join(dataset_dir, MANIFEST_FILENAME)
    check_path_exists(dataset_dir)
    if not os.path.exists(path):
        hint = " (it is a PCR dataset)" if os.path.exists(os.path.join(dataset_dir, PCR_INDEX_FILENAME)) else ""
        raise LiquidFormatError(f"{dataset_dir}: not a Liquid dataset: no {MANIFEST_FILENAME}{hint}")
    with open(path, "rb") as f:
        data = f.read()
    manifest = message_file.decode(
        path, data, MANIFEST_MAGIC, FORMAT_VERSION, liquid_pb2.LiquidManifest, crc, LiquidFormatError, "Liquid manifest"
    )
    _check_manifest(path, manifest)
    return manifest


def _check_manifest(path: str, manifest: liquid_pb2.LiquidManifest) -> None:
    names = [f.name for f in manifest.formats]
    if not names or len(names) > MAX_FORMATS or len(set(names)) != len(names) or set(names) - set(FORMATS):
        raise LiquidFormatError(f"{path}: formats must be 1 to {MAX_FORMATS} distinct of {FORMATS}, got {names}")
    if manifest.channels not in CHANNELS:
        raise LiquidFormatError(f"{path}: channels must be 1 or 3, got {manifest.channels}")
    for fmt in manifest.formats:
        if sum(r.num_images for r in fmt.records) != fmt.num_images:
            raise LiquidFormatError(f"{path}: the {fmt.name} records' image counts do not add up to its num_images")
        for record in fmt.records:
            if os.path.isabs(record.path) or ".." in record.path.split("/") or not record.num_images:
                raise LiquidFormatError(f"{path}: bad record entry {record.path!r}")
    if sum(f.num_images for f in manifest.formats) != manifest.num_images:
        raise LiquidFormatError(f"{path}: the formats' image counts do not add up to num_images")


def dataset_bytes(manifest: liquid_pb2.LiquidManifest) -> int:
    """Bytes of every record file of the dataset: what an epoch reads without a cache."""
    return sum(f.num_bytes for f in manifest.formats)


def record_files(dataset_dir: str, manifest: liquid_pb2.LiquidManifest) -> list[str]:
    """The paths of every record file of the dataset, format by format."""
    return [os.path.join(dataset_dir, r.path) for f in manifest.formats for r in f.records]


@dataclasses.dataclass
class Item:
    """One image as stored: its format, item bytes, label and key."""

    format: str
    data: bytes
    label: int
    key: bytes


def read_records(dataset_dir: str) -> list[Item]:
    """Reference reader: every item of the dataset, format by format, record by record, in stored order; CRCs,
    the record flag and each item's format checked."""
    manifest = read_manifest(dataset_dir)
    items = []
    for fmt in manifest.formats:
        for record in fmt.records:
            path = os.path.join(dataset_dir, record.path)
            with open(path, "rb") as f:
                data = f.read()
            try:
                if not records_format.parse_preamble(data).flags & records_format.WHOLE_ITEMS:
                    raise LiquidFormatError("offset 20: not a record of whole items (flag bit 0 is clear)")
                decoded = records_format.decode_record(data)
            except records_format.RecordFormatError as e:
                raise LiquidFormatError(f"{path}: {e}") from None
            for item in decoded:
                if item_format(item.data) != fmt.name:
                    raise LiquidFormatError(f"{path}: a {item_format(item.data)} item in a {fmt.name} record")
                items.append(Item(fmt.name, item.data, item.label, item.key))
    return items
