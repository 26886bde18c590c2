"""What a PCR dataset holds: images, records, classes, and bytes per image at each scan group (the PCR paper's
Table 1), from its index alone."""

from __future__ import annotations

from tfliquid._common.words import classes, counted
from tfliquid.pcr.format import prefix_bytes, prefix_end, read_index

__all__ = ["inspect", "format_inspection"]


def inspect(path: str) -> dict:
    """Size per scan group (the PCR paper's Table 1), images, records and classes of a PCR dataset."""
    index = read_index(path)
    images = index.num_images
    full_payload = sum(r.prefix_ends[-1] - r.payload_offset for r in index.records)
    groups = []
    for g in range(1, index.num_scan_groups + 1):
        read = prefix_bytes(index, g)
        payload = sum(prefix_end(r.prefix_ends, g) - r.payload_offset for r in index.records)
        groups.append(
            {
                "scan_group": g,
                "bytes_per_image": payload / images,
                "percent_of_full": 100.0 * payload / full_payload,
                "read_bytes": read,
            }
        )
    return {
        "path": path,
        "images": images,
        "records": len(index.records),
        "classes": index.num_classes,
        "class_names": list(index.class_names),
        "scan_groups": groups,
        "lossy_images": index.conversion.lossy_images,
        "source": index.conversion.source,
        "scan_script": index.conversion.scan_script or "standard",  # indexes of tfliquid 0.1 hold none
    }


def format_inspection(info: dict) -> str:
    """The inspection as text: a summary line, the scan script, then a row per scan group."""
    script = info["scan_script"]
    lines = [
        f"{info['path']}: {counted(info['images'], 'image')}, {counted(info['records'], 'record')}, "
        f"{classes(info['classes'], bool(info['class_names']))} (source: {info['source']}; "
        f"{counted(info['lossy_images'], 'image')} re-encoded lossily)",
        *(
            [f"scan script: {script}"]
            if script in ("standard", "fast")
            else ["scan script (jpegtran -scans syntax):", *[f"  {line}" for line in script.strip().splitlines()]]
        ),
        f"{'scan group':>10}  {'bytes/image':>12}  {'% of full':>9}  {'bytes read/epoch':>16}",
    ]
    for g in info["scan_groups"]:
        lines.append(
            f"{g['scan_group']:>10}  {g['bytes_per_image']:>12,.0f}  {g['percent_of_full']:>8.1f}%"
            f"  {g['read_bytes']:>16,}"
        )
    return "\n".join(lines)
