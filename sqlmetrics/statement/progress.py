"""A small progress bar on stderr: one step per period of a report, or per partition of users.

On a terminal it redraws one line (`[#####.....] 3/7 2026-11-03`); otherwise (a log file, cron,
CI) it prints one plain line per finished step, which reads well in a log."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Call start(label) before a step and finish(label, note) after it; close() at the end.

    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progress(2, "daily", stream=out)
    >>> bar.start("2026-11-01"); bar.finish("2026-11-01", "14 rows")
    >>> bar.close()
    >>> print(out.getvalue().strip())
    daily [1/2] 2026-11-01: 14 rows
    """

    width = 24

    def __init__(self, total: int, title: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.animated = bool(getattr(self.stream, "isatty", lambda: False)())
        self._started = time.monotonic()

    def _bar(self, label: str) -> str:
        filled = self.width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self._started
        return (
            f"{self.title} [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{self.done}/{self.total} {label} ({elapsed:.0f} s)"
        )

    def start(self, label: str) -> None:
        if self.animated:
            self.stream.write("\r\x1b[K" + self._bar(label))
            self.stream.flush()

    def finish(self, label: str, note: str) -> None:
        self.done += 1
        if self.animated:
            self.stream.write("\r\x1b[K" + self._bar(f"{label}: {note}"))
        else:
            self.stream.write(f"{self.title} [{self.done}/{self.total}] {label}: {note}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.animated and self.done:
            self.stream.write("\n")
            self.stream.flush()
