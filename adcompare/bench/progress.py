"""A one-line progress bar with an ETA, drawn only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """A duration for people: ``42s``, ``3m05s``, ``1h02m``.

    >>> format_seconds(42.3), format_seconds(185), format_seconds(3720)
    ('42s', '3m05s', '1h02m')
    """
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """Counts finished cells; on a terminal redraws ``[####....] 12/80 ...``.

    Quiet when ``stream`` is not a terminal or ``quiet`` is set. The ETA
    assumes the remaining cells take as long on average as the finished
    ones did (cells skipped or resumed without measuring do not count).

    >>> import io
    >>> bar = Progress(3, stream=io.StringIO())
    >>> bar.advance("x", measured=False); bar.done, bar.active
    (1, False)
    """

    def __init__(self, total: int, *, stream: TextIO | None = None, quiet: bool = False):
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.active = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self._measured = 0
        self._measuring_time = 0.0
        self._start = time.perf_counter()
        self._cell_start = self._start

    def start(self, label: str) -> None:
        """A cell labelled ``label`` begins."""
        self._cell_start = time.perf_counter()
        self._draw(label)

    def advance(self, label: str, *, measured: bool = True) -> None:
        """A cell finished; ``measured`` is false for skipped and resumed cells."""
        self.done += 1
        if measured:
            self._measured += 1
            self._measuring_time += time.perf_counter() - self._cell_start
        self._draw(label)

    def eta(self) -> float | None:
        """Seconds still to go, or ``None`` before the first measured cell."""
        if not self._measured:
            return None
        return self._measuring_time / self._measured * (self.total - self.done)

    def _draw(self, label: str) -> None:
        if not self.active:
            return
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        elapsed = format_seconds(time.perf_counter() - self._start)
        eta = self.eta()
        remaining = f"ETA {format_seconds(eta)}" if eta is not None else "ETA ?"
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} cells "
            f"{elapsed} elapsed, {remaining}  {label}"
        )
        self.stream.write("\r" + line[:110].ljust(110))
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.active:
            self.stream.write("\n")
            self.stream.flush()
