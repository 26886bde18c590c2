"""Progress of long jobs on stderr: a bar redrawn in place on a terminal, plain lines when stderr is a file or a
pipe (a log gets no escape codes and no carriage returns), nothing when disabled.

Written here rather than taken from a progress-bar library, which would be one more dependency of every install
for what is a count, a rate over this run's work and a log line per tenth."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tfliquid._common.words import plural

_TERMINAL_INTERVAL = 0.1  # seconds between redraws of the bar
_LOG_INTERVAL = 30.0  # seconds between log lines, besides one at every tenth of the work
_BAR_WIDTH = 30


class Progress:
    """Counts `unit`s done out of `total`: `update(done)` with the running count or `advance(n)` by n, `close()` at
    the end. `initial` units, and those of `skip(n)`, were done before (a resumed job): they count towards the
    total, not the rate. The count shown never goes backwards.

    >>> progress = Progress(1000, "image", initial=200)
    >>> progress.update(500)   # 500/1000 images [===============>              ]  50%  812 image/s  ETA 0:00:01
    """

    def __init__(self, total: int, unit: str, enabled: bool = True, stream: TextIO | None = None, initial: int = 0):
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self._units = unit if total == 1 else plural(unit)
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = bool(getattr(self._stream, "isatty", lambda: False)())
        self._start = time.monotonic()
        self._last_shown = self._start
        self._skipped = self._done = initial
        self._last_tenth = self._tenth(initial)  # a log line at each tenth done beyond the initial count
        self._closed = False

    def advance(self, count: int = 1) -> None:
        """`count` more units done."""
        self.update(self._done + count)

    def skip(self, count: int = 1) -> None:
        """`count` more units found done before this run: counted, but not in the rate."""
        self._skipped += count
        self.update(self._done + count)

    def update(self, done: int) -> None:
        """`done` units done in all (the initial ones included); a count below the one shown is ignored."""
        if done <= self._done and done < self.total:
            return
        self._done = max(done, self._done)
        if not self.enabled:
            return
        now = time.monotonic()
        if self._terminal:
            if self._done >= self.total or now - self._last_shown >= _TERMINAL_INTERVAL:
                self._stream.write("\r" + self._bar_line(now))
                self._stream.flush()
                self._last_shown = now
            return
        tenth = self._tenth(self._done)
        if tenth > self._last_tenth or now - self._last_shown >= _LOG_INTERVAL:
            self._stream.write(self._log_line(now) + "\n")
            self._stream.flush()
            self._last_shown, self._last_tenth = now, tenth

    def close(self) -> None:
        """Ends the bar's line on a terminal (the count so far stays shown)."""
        if self.enabled and self._terminal and not self._closed:
            self._stream.write("\r" + self._bar_line(time.monotonic()) + "\n")
            self._stream.flush()
        self._closed = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _tenth(self, done: int) -> int:
        return 10 * done // self.total if self.total else 10

    def _rate(self, now: float) -> float | None:
        """Units per second done by this run (the skipped ones left out); None before any."""
        elapsed, done = now - self._start, self._done - self._skipped
        return done / elapsed if done > 0 and elapsed > 0 else None

    def _bar_line(self, now: float) -> str:
        fraction = min(1.0, self._done / self.total) if self.total else 1.0
        filled = int(fraction * _BAR_WIDTH)
        bar = "=" * filled + (">" if filled < _BAR_WIDTH else "") + " " * (_BAR_WIDTH - filled - 1)
        rate = self._rate(now)
        speed = "" if rate is None else f"  {rate:,.0f} {self.unit}/s  ETA {_clock((self.total - self._done) / rate)}"
        return f"{self._done}/{self.total} {self._units} [{bar}] {fraction:4.0%}{speed} "

    def _log_line(self, now: float) -> str:
        fraction = self._done / self.total if self.total else 1.0
        rate = self._rate(now)
        speed = "" if rate is None else f", {rate:,.1f} {self.unit}/s"
        return f"{self._done}/{self.total} {self._units} ({fraction:.0%}){speed}, {_clock(now - self._start)} elapsed"


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
