"""Progressive Compressed Records (Kuchnik et al., VLDB 2021): images stored by progressive-JPEG scan group, so
that one read of a record's prefix gives all its images at a chosen fidelity. Spec: docs/formats/pcr.md.

    >>> tfliquid.pcr.convert("photos/", "photos-pcr/")        # image folder or TFRecords -> PCR
    >>> ds = tfliquid.pcr.PCRDataset("photos-pcr/", scan_group=2)
    >>> print(tfliquid.pcr.format_inspection(tfliquid.pcr.inspect("photos-pcr/")))

Modules, in data-flow order: `jpeg` (scan splitting, the oracle) and `format` (records and index, the oracle; no
TensorFlow) -> `jpeg_ops` (the C++ transcoder and splitter) -> `dataset` (the tf.data readers) -> `conversion` (the
conversion job) and `inspection`.
"""

from tfliquid.pcr.conversion import convert
from tfliquid.pcr.dataset import PCRDataset, PCRRecordDataset
from tfliquid.pcr.format import PCRFormatError, prefix_end, read_index
from tfliquid.pcr.inspection import format_inspection, inspect

__all__ = [
    "PCRDataset",
    "PCRFormatError",
    "PCRRecordDataset",
    "convert",
    "format_inspection",
    "inspect",
    "prefix_end",
    "read_index",
]
