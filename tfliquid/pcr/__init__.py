"""Progressive Compressed Records (Kuchnik et al., VLDB 2021): images stored by progressive-JPEG scan group, so
that one read of a record's prefix gives all its images at a chosen fidelity. Spec: docs/formats/pcr.md.

    >>> tfliquid.pcr.convert("photos/", "photos-pcr/")        # image folder or TFRecords -> PCR
    >>> ds = tfliquid.pcr.PCRDataset("photos-pcr/", scan_group=2)
    >>> print(tfliquid.pcr.inspect("photos-pcr/"))              # bytes per image at each scan group

PCR is scan groups on the shared record container (tfliquid.records): part k of a record's image is its k-th
progressive scan (tfliquid.jpeg). Modules, in data-flow order: `format` (scan groups, the reference decoder and the
index; no TensorFlow) -> `dataset` (the tf.data readers) -> `conversion` (the conversion job) and `inspection`.
"""

from tfliquid.pcr.conversion import convert
from tfliquid.pcr.dataset import PCRDataset, PCRRecordDataset
from tfliquid.pcr.format import PCRFormatError, prefix_end, read_index
from tfliquid.pcr.inspection import PCRInspection, ScanGroupSize, inspect

__all__ = [
    "PCRDataset",
    "PCRFormatError",
    "PCRInspection",
    "PCRRecordDataset",
    "ScanGroupSize",
    "convert",
    "inspect",
    "prefix_end",
    "read_index",
]
