"""The record container that PCR and Liquid share (docs/formats/records.md): files of items stored group by group,
so that one read of a file's first bytes yields every item up to a group, with CRC32C checks; its reader in
tf.data; and the record job that converts images into records, on a registry of runners ("local", "beam").
It knows no image format: PCR stores progressive-JPEG scans as groups, Liquid stores whole items.

Modules, in data-flow order: `format` (the container, the oracle; no TensorFlow) -> `dataset` (`record_bytes`,
`RecordDataset`: the C++ reader) -> `job` (plan, resumable records, rejections, verify; the local runner) and
`job_beam` (the Beam runner).
"""

from tfliquid.records.dataset import RecordDataset, record_bytes
from tfliquid.records.format import RecordFormatError

__all__ = ["RecordDataset", "RecordFormatError", "record_bytes"]
