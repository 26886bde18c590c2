"""Progress on stderr: plain lines in a log (a bar on a terminal), counts with their nouns' plurals, a count that
never goes back, and a rate over the work of this run alone (a resumed conversion's skipped images left out)."""

import io
import re
import time

import pytest

import tfliquid
from tfliquid._common.progress import Progress
from tfliquid._common.words import counted, plural


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _rate(line: str) -> float:
    return float(re.search(r", ([\d,.]+) \w+/s", line).group(1).replace(",", ""))


def test_nouns_take_their_plural_unless_one():
    assert [counted(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]
    assert [plural(noun) for noun in ("policy", "worker replay", "batch", "class", "image")] == [
        "policies",
        "worker replays",
        "batches",
        "classes",
        "images",
    ]


def test_log_lines_are_plain_with_the_unit_in_its_number():
    stream = io.StringIO()
    with Progress(3, "policy", stream=stream) as bar:
        for done in (1, 2, 3):
            bar.update(done)
    lines = stream.getvalue().split("\n")
    assert [line.split(" (")[0] for line in lines] == ["1/3 policies", "2/3 policies", "3/3 policies", ""]
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    assert re.fullmatch(r"3/3 policies \(100%\), [\d,.]+ policy/s, 0:00:00 elapsed", lines[2])
    stream = io.StringIO()
    with Progress(1, "image", stream=stream) as bar:
        bar.advance()
    assert stream.getvalue().startswith("1/1 image (100%), ")


def test_the_count_shown_never_goes_back():
    terminal = _Terminal()
    with Progress(7, "measurement", stream=terminal) as bar:
        time.sleep(0.15)  # a redraw interval after the start
        bar.update(2)
        time.sleep(0.15)  # past the redraw interval
        bar.update(1)
        time.sleep(0.15)
        bar.update(3)
    shown = [int(re.match(r"(\d+)/7 measurements", line).group(1)) for line in terminal.getvalue().split("\r")[1:]]
    assert shown == [2, 3, 3]  # the last at close


def test_the_rate_counts_the_work_of_this_run_only():
    stream = io.StringIO()
    start = time.monotonic()
    bar = Progress(1000, "image", stream=stream, initial=900)
    time.sleep(0.2)
    bar.update(1000)
    elapsed = time.monotonic() - start
    (line,) = stream.getvalue().splitlines()
    assert 100 / elapsed <= _rate(line) <= 100 / 0.2
    stream = io.StringIO()
    with Progress(10, "image", stream=stream) as bar:
        bar.skip(5)  # found done: a line, with no rate
        bar.advance()
    first, second = stream.getvalue().splitlines()
    assert first.startswith("5/10 images (50%), 0:00:") and "/s" not in first
    assert _rate(second) > 0


@pytest.mark.slow  # three conversions
def test_a_conversion_shows_progress_as_images_complete_and_a_resumed_one_from_where_it_resumed(
    photo_folder, tmp_path, capsys
):
    tfliquid.pcr.convert(str(photo_folder), str(tmp_path / "one"))  # 16 images, one record
    counts = [int(line.split("/")[0]) for line in capsys.readouterr().err.splitlines()]
    assert len(counts) >= 5 and counts == sorted(counts) and counts[-1] == 16

    dst = tmp_path / "four"
    tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=4, progress=False)
    (dst / "records" / "pcr-00001.pcr").unlink()
    capsys.readouterr()
    start = time.monotonic()
    report = tfliquid.pcr.convert(str(photo_folder), str(dst), images_per_record=4)
    elapsed = time.monotonic() - start
    lines = capsys.readouterr().err.splitlines()
    assert report.skipped == 12 and lines[-1].startswith("16/16 images (100%), ")
    counts = [int(line.split("/")[0]) for line in lines]
    assert counts == sorted(counts) and counts[0] > 12  # no line for the skipped images alone
    # The rate is of the 4 images converted, over at most the run's time: never the skipped ones' in no time.
    assert all(_rate(line) >= (count - 12) / elapsed for line, count in zip(lines, counts))
