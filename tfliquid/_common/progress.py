"""Progress of long jobs on stderr: a bar redrawn in place on a terminal, plain lines when stderr is a file or a
pipe (a log gets no escape codes and no carriage returns), nothing when disabled."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_TERMINAL_INTERVAL = 0.1  # seconds between redraws of the bar
_LOG_INTERVAL = 30.0  # seconds between log lines, besides one at every tenth of the work
_BAR_WIDTH = 30


class Progress:
    """Counts `unit`s done out of `total`: `update(done)` with the running count, `close()` at the end.

    >>> progress = Progress(1000, "image")
    >>> progress.update(500)   # 500/1000 images [===============>              ]  50%  812 image/s  ETA 0:00:01
    """

    def __init__(self, total: int, unit: str, enabled: bool = True, stream: TextIO | None = None):
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = bool(getattr(self._stream, "isatty", lambda: False)())
        self._start = time.monotonic()
        self._last_shown = self._start
        self._last_tenth = 0  # a log line at each tenth done, the first at 10%
        self._done = 0
        self._closed = False

    def update(self, done: int) -> None:
        self._done = done
        if not self.enabled:
            return
        now = time.monotonic()
        finished = done >= self.total
        if self._terminal:
            if finished or now - self._last_shown >= _TERMINAL_INTERVAL:
                self._stream.write("\r" + self._bar_line(now))
                self._stream.flush()
                self._last_shown = now
            return
        tenth = 10 * done // self.total if self.total else 10
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

    def _rate(self, now: float) -> float:
        elapsed = now - self._start
        return self._done / elapsed if elapsed > 0 else 0.0

    def _bar_line(self, now: float) -> str:
        fraction = min(1.0, self._done / self.total) if self.total else 1.0
        filled = int(fraction * _BAR_WIDTH)
        bar = "=" * filled + (">" if filled < _BAR_WIDTH else "") + " " * (_BAR_WIDTH - filled - 1)
        rate = self._rate(now)
        left = (self.total - self._done) / rate if rate > 0 else 0.0
        return (
            f"{self._done}/{self.total} {self.unit}s [{bar}] {fraction:4.0%}  {rate:,.0f} {self.unit}/s  "
            f"ETA {_clock(left)} "
        )

    def _log_line(self, now: float) -> str:
        fraction = self._done / self.total if self.total else 1.0
        return (
            f"{self._done}/{self.total} {self.unit}s ({fraction:.0%}), {self._rate(now):,.1f} {self.unit}/s, "
            f"{_clock(now - self._start)} elapsed"
        )


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
