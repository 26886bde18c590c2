"""What a PCR dataset holds: images, records, classes, and bytes per image at each scan group (the PCR paper's
Table 1), from its index alone."""

from __future__ import annotations

import dataclasses

from tfliquid._common.words import classes, counted
from tfliquid.pcr.format import prefix_bytes, prefix_end, read_index

__all__ = ["PCRInspection", "ScanGroupSize", "inspect"]


@dataclasses.dataclass(frozen=True)
class ScanGroupSize:
    """What reading a PCR dataset at one scan group costs."""

    scan_group: int
    bytes_per_image: float  # of the images' data up to this group
    percent_of_full: float  # of the data read at full fidelity
    read_bytes: int  # read per epoch: every record's prefix up to this group, headers included


@dataclasses.dataclass(frozen=True)
class PCRInspection:
    """A PCR dataset's contents, as `tfliquid inspect` prints them (`str()`)."""

    path: str
    images: int
    records: int
    classes: int
    class_names: tuple[str, ...]
    scan_groups: tuple[ScanGroupSize, ...]  # scan groups 1, 2, ... full fidelity
    lossy_images: int  # non-JPEG sources, re-encoded as JPEG
    source: str  # what was converted, in words
    scan_script: str  # "fast", "standard", or the text of the jpegtran -scans script

    def __str__(self) -> str:
        script = self.scan_script
        lines = [
            f"{self.path}: {counted(self.images, 'image')}, {counted(self.records, 'record')}, "
            f"{classes(self.classes, bool(self.class_names))} (source: {self.source}; "
            f"{counted(self.lossy_images, 'image')} re-encoded lossily)",
            *(
                [f"scan script: {script}"]
                if script in ("standard", "fast")
                else ["scan script (jpegtran -scans syntax):", *[f"  {line}" for line in script.strip().splitlines()]]
            ),
            f"{'scan group':>10}  {'bytes/image':>12}  {'% of full':>9}  {'bytes read/epoch':>16}",
        ]
        for g in self.scan_groups:
            lines.append(
                f"{g.scan_group:>10}  {g.bytes_per_image:>12,.0f}  {g.percent_of_full:>8.1f}%  {g.read_bytes:>16,}"
            )
        return "\n".join(lines)


def inspect(path: str) -> PCRInspection:
    """Size per scan group (the PCR paper's Table 1), images, records and classes of the PCR dataset at `path`.
    `print()` it for the table `tfliquid inspect PATH` prints.

        >>> tfliquid.pcr.inspect("photos-pcr/").scan_groups[1].bytes_per_image   # at scan group 2
    """
    index = read_index(path)
    images = index.num_images
    full_payload = sum(r.prefix_ends[-1] - r.payload_offset for r in index.records)
    groups = []
    for g in range(1, index.num_scan_groups + 1):
        payload = sum(prefix_end(r.prefix_ends, g) - r.payload_offset for r in index.records)
        groups.append(ScanGroupSize(g, payload / images, 100.0 * payload / full_payload, prefix_bytes(index, g)))
    return PCRInspection(
        path=path,
        images=images,
        records=len(index.records),
        classes=index.num_classes,
        class_names=tuple(index.class_names),
        scan_groups=tuple(groups),
        lossy_images=index.conversion.lossy_images,
        source=index.conversion.source,
        scan_script=index.conversion.scan_script or "standard",  # indexes of tfliquid 0.1 hold none
    )
