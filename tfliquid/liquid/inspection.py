"""What a Liquid dataset holds: images and bytes per format, records, classes, from its manifest alone."""

from __future__ import annotations

import dataclasses

from tfliquid._common.words import classes, counted
from tfliquid.liquid.format import dataset_bytes, read_manifest

__all__ = ["FormatShare", "LiquidInspection", "inspect"]


@dataclasses.dataclass(frozen=True)
class FormatShare:
    """The images a Liquid dataset stores in one format."""

    name: str
    ratio_weight: int
    images: int
    records: int
    num_bytes: int


@dataclasses.dataclass(frozen=True)
class LiquidInspection:
    """A Liquid dataset's contents, as `tfliquid inspect` prints them (`str()`)."""

    path: str
    format_version: int
    images: int
    channels: int
    classes: int
    class_names: tuple[str, ...]
    formats: tuple[FormatShare, ...]
    seed: int
    images_per_record: int
    source: str  # what was converted, in words
    num_bytes: int  # of every record: what an epoch reads without a cache
    predicted_bytes: int  # the size the conversion predicted before writing
    lossy_images: int

    @property
    def ratio(self) -> str:
        """The formats' weights, e.g. "3:7", as `tfliquid.liquid.convert(ratio=...)` takes it."""
        return ":".join(str(f.ratio_weight) for f in self.formats)

    def __str__(self) -> str:
        names = self.class_names
        lines = [
            f"{self.path}: Liquid dataset, format version {self.format_version}",
            f"  {counted(self.images, 'image')}, {counted(self.channels, 'channel')}, "
            f"{classes(self.classes, bool(names))}"
            + (f" ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names else ""),
            f"  formats {':'.join(f.name for f in self.formats)} at ratio {self.ratio}; seed {self.seed}, "
            f"{counted(self.images_per_record, 'image')} per record, from {self.source}",
            f"  {self.num_bytes / 1e6:,.1f} MB (predicted before writing: {self.predicted_bytes / 1e6:,.1f} MB)",
            f"  {'format':<8}{'images':>10}{'share':>8}{'records':>9}{'MB':>10}{'KB/image':>10}",
        ]
        for f in self.formats:
            lines.append(
                f"  {f.name:<8}{f.images:>10}{f.images / max(self.images, 1):>8.1%}{f.records:>9}"
                f"{f.num_bytes / 1e6:>10,.1f}{f.num_bytes / max(f.images, 1) / 1e3:>10,.1f}"
            )
        if self.lossy_images:
            lines.append(f"  {counted(self.lossy_images, 'image')} stored with a loss")
        return "\n".join(lines)


def inspect(path: str) -> LiquidInspection:
    """Images and bytes per format, records and classes of the Liquid dataset at `path`. `print()` it for what
    `tfliquid inspect PATH` prints.

        >>> tfliquid.liquid.inspect("photos-liquid/").ratio
    """
    manifest = read_manifest(path)
    conversion = manifest.conversion
    return LiquidInspection(
        path=path,
        format_version=manifest.format_version,
        images=manifest.num_images,
        channels=manifest.channels,
        classes=manifest.num_classes,
        class_names=tuple(manifest.class_names),
        formats=tuple(
            FormatShare(f.name, f.ratio_weight, f.num_images, len(f.records), f.num_bytes) for f in manifest.formats
        ),
        seed=conversion.seed,
        images_per_record=conversion.images_per_record,
        source=conversion.source,
        num_bytes=dataset_bytes(manifest),
        predicted_bytes=conversion.predicted_bytes,
        lossy_images=conversion.lossy_images,
    )
