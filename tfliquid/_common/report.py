"""ConversionReport: what one run of a conversion job did, the same for every format."""

from __future__ import annotations

import dataclasses

_MAX_LISTED_FAILURES = 20


@dataclasses.dataclass
class ConversionReport:
    """Counts of one run. `converted` and the byte and pixel counts are those of the images this run converted;
    `skipped` counts the images found already converted (a rerun resumes). Output files are records (PCR, several
    images each) or one file per image (L3): `files_written` and `files_skipped` count them."""

    path: str
    converted: int = 0
    skipped: int = 0
    failures: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (source image, reason)
    files_written: int = 0
    files_skipped: int = 0
    file_kind: str = "file"
    lossy_images: int = 0  # stored with a loss: re-encoded, reduced to 8 bits or converted to RGB
    verified_images: int = 0  # read back and found to decode to their source pixels
    input_bytes: int = 0
    output_bytes: int = 0
    pixels: int = 0
    seconds: float = 0.0
    lossy_reason: str = "stored with a loss"
    notes: list[str] = dataclasses.field(default_factory=list)  # what the user should know of the source's labels

    @property
    def images(self) -> int:
        """Images the destination holds: converted by this run or before it."""
        return self.converted + self.skipped

    @property
    def ratio(self) -> float:
        """Output size / input size of the images converted by this run."""
        return self.output_bytes / self.input_bytes if self.input_bytes else 0.0

    @property
    def megapixels_per_second(self) -> float:
        return self.pixels / 1e6 / self.seconds if self.seconds else 0.0

    def __str__(self) -> str:
        files = ""
        if self.file_kind != "file":
            files = (
                f" in {self.files_written + self.files_skipped} {self.file_kind}s ({self.files_written} written, "
                f"{self.files_skipped} already complete)"
            )
        lines = [
            f"{self.path}: {self.images} images{files}: {self.converted} converted, {self.skipped} already "
            f"converted, {len(self.failures)} failed; {self.seconds:.1f} s"
        ]
        if self.converted and self.input_bytes:
            throughput = f", {self.megapixels_per_second:.1f} Mpx/s" if self.pixels else ""
            lines.append(
                f"  {self.input_bytes / 1e6:.1f} MB -> {self.output_bytes / 1e6:.1f} MB ({self.ratio:.3f}x "
                f"the input){throughput}"
            )
        if self.verified_images:
            kept = f" ({self.lossy_images} of them to what the loss below keeps)" if self.lossy_images else ""
            lines.append(f"  {self.verified_images} verified: they decode to their source pixels exactly{kept}")
        if self.lossy_images:
            lines.append(f"  {self.lossy_images} {self.lossy_reason}")
        lines += [f"  {note}" for note in self.notes]
        if self.failures:
            lines.append("failed:")
            lines += [f"  {source}: {reason}" for source, reason in self.failures[:_MAX_LISTED_FAILURES]]
            if len(self.failures) > _MAX_LISTED_FAILURES:
                lines.append(f"  ... and {len(self.failures) - _MAX_LISTED_FAILURES} more")
        return "\n".join(lines)
