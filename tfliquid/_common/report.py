"""ConversionReport: what one run of a conversion job did, the same for every format; and the list of the sources
a conversion rejects, kept in its destination (REJECTED_FILENAME, docs/cli.md "Rejected sources")."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Collection, Iterator

from tfliquid._common.errors import ConversionError
from tfliquid._common.files import write_atomically
from tfliquid._common.words import counted

_MAX_LISTED_FAILURES = 20
REJECTED_FILENAME = "rejected.tsv"
_REJECTED_HEADER = "source\treason"
# Characters a field of the list cannot hold as they are (the separators), written as these escapes.
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {escape[1]: character for character, escape in _ESCAPES.items()}


@dataclasses.dataclass
class ConversionReport:
    """Counts of one run. `converted` and the byte and pixel counts are those of the images this run converted;
    `skipped` counts the images found already converted (a rerun resumes). Output files are records (PCR, several
    images each) or one file per image (L3): `files_written` and `files_skipped` count them. `failures` are the
    sources rejected, with why; `rejected_list` the file that lists them all (None when there are none)."""

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
    rejected_list: str | None = None

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
                f" in {counted(self.files_written + self.files_skipped, self.file_kind)} ({self.files_written} "
                f"written, {self.files_skipped} already complete)"
            )
        lines = [
            f"{self.path}: {counted(self.images, 'image')}{files}: {self.converted} converted, {self.skipped} "
            f"already converted, {len(self.failures)} failed; {self.seconds:.1f} s"
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
            unlisted = len(self.failures) - _MAX_LISTED_FAILURES
            if unlisted > 0:
                where = f": all {len(self.failures)} in {self.rejected_list}" if self.rejected_list else ""
                lines.append(f"  ... and {unlisted} more{where}")
            elif self.rejected_list:
                lines.append(f"  (listed in {self.rejected_list} too)")
        return "\n".join(lines)


@contextlib.contextmanager
def rejects_listed(
    folder: str, report: ConversionReport, untried: Callable[[], Collection[str]], keep_previous: bool = True
) -> Iterator[None]:
    """Keeps FOLDER/REJECTED_FILENAME the list of every source the conversion into `folder` rejects, however the
    run in this block ends: what it rejected (`report.failures`) and, of the list an earlier run left (unless not
    `keep_previous`: a conversion replaced by another), the sources this run did not try again
    (`untried()`, called as the run ends). A source the run converted or found converted is listed no more. The
    file is replaced atomically, removed when nothing is rejected, and named in the report.

    Written once, as the run ends: a run killed outright (SIGKILL) leaves the previous list, which its rerun
    brings up to date."""
    path = os.path.join(folder, REJECTED_FILENAME)
    previous = read_rejected(path) if keep_previous else []
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):  # the run's own error is the one to tell
            _save(path, previous, report, untried())
        raise
    try:
        _save(path, previous, report, untried())
    except OSError as e:
        raise ConversionError(
            f"cannot write {path}: {e.strerror or e}; what was converted is kept, and rerunning the same command "
            "lists the rejected sources"
        ) from None


def _save(path: str, previous: list[tuple[str, str]], report: ConversionReport, untried: Collection[str]) -> None:
    rejected = {source: reason for source, reason in previous if source in untried}
    rejected.update(report.failures)
    if rejected:
        write_rejected(path, sorted(rejected.items()))
        report.rejected_list = path
    elif os.path.exists(path):
        os.remove(path)


def write_rejected(path: str, rejected: list[tuple[str, str]]) -> None:
    """Writes the list of (source, reason) at `path`, atomically: a header line, then a line per source, its two
    fields separated by a tab; tabs, newlines, carriage returns and backslashes in them are written as \\t, \\n,
    \\r and \\\\."""
    lines = [_REJECTED_HEADER] + ["\t".join(_escaped(field) for field in entry) for entry in rejected]
    write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))


def read_rejected(path: str) -> list[tuple[str, str]]:
    """The (source, reason) pairs of the list at `path` (write_rejected's); [] if there is none, or if it is not
    such a list (the next run writes it again)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            lines = f.read().split("\n")
    except (FileNotFoundError, IsADirectoryError):
        return []
    if lines[0] != _REJECTED_HEADER:
        return []
    fields = [line.split("\t") for line in lines[1:] if line]
    return [(_unescaped(f[0]), _unescaped(f[1])) for f in fields if len(f) == 2]


def _escaped(field: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in field)


def _unescaped(field: str) -> str:
    out, characters = [], iter(field)
    for c in characters:
        out.append(_UNESCAPES.get(next(characters, ""), "") if c == "\\" else c)
    return "".join(out)
