"""What a Liquid dataset holds: images and bytes per format, records, classes, from its manifest alone."""

from __future__ import annotations

from tfliquid._common.words import classes, counted
from tfliquid.liquid.format import dataset_bytes, read_manifest


def format_inspection(path: str) -> str:
    manifest = read_manifest(path)
    conversion = manifest.conversion
    total = dataset_bytes(manifest)
    ratio = ":".join(str(f.ratio_weight) for f in manifest.formats)
    lines = [
        f"{path}: Liquid dataset, format version {manifest.format_version}",
        f"  {counted(manifest.num_images, 'image')}, {counted(manifest.channels, 'channel')}, "
        f"{classes(manifest.num_classes, bool(manifest.class_names))}"
        + (
            f" ({', '.join(manifest.class_names[:8])}{', ...' if len(manifest.class_names) > 8 else ''})"
            if manifest.class_names
            else ""
        ),
        f"  formats {':'.join(f.name for f in manifest.formats)} at ratio {ratio}; seed {conversion.seed}, "
        f"{counted(conversion.images_per_record, 'image')} per record, from {conversion.source}",
        f"  {total / 1e6:,.1f} MB (predicted before writing: {conversion.predicted_bytes / 1e6:,.1f} MB)",
        f"  {'format':<8}{'images':>10}{'share':>8}{'records':>9}{'MB':>10}{'KB/image':>10}",
    ]
    for f in manifest.formats:
        lines.append(
            f"  {f.name:<8}{f.num_images:>10}{f.num_images / max(manifest.num_images, 1):>8.1%}{len(f.records):>9}"
            f"{f.num_bytes / 1e6:>10,.1f}{f.num_bytes / max(f.num_images, 1) / 1e3:>10,.1f}"
        )
    if conversion.lossy_images:
        lines.append(f"  {counted(conversion.lossy_images, 'image')} stored with a loss")
    return "\n".join(lines)
