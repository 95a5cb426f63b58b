"""Progress: a one-line bar with the time left on a terminal, one line per group elsewhere."""

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

    When ``stream`` is not a terminal (a log, a pipe, CI), it writes one
    line each time every cell of a group (a problem) has finished, so a
    long run is never a silent wait. ``quiet`` silences both. The time
    left assumes the remaining cells take as long on average as the
    finished ones did (cells skipped or resumed without measuring do not
    count).

    >>> import io
    >>> log = io.StringIO()
    >>> bar = Progress(3, stream=log, groups={"mlp": 1, "fourier": 2})
    >>> bar.advance("mlp f n=4", measured=False, group="mlp"); bar.done, bar.active
    (1, False)
    >>> print(log.getvalue().strip())
    mlp: 1 cells done (1/3 cells, 0s elapsed)
    """

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        quiet: bool = False,
        groups: dict[str, int] | None = None,
    ):
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.active = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.lines = not quiet and not self.active
        self._left_in_group = dict(groups or {})
        self._measured = 0
        self._measuring_time = 0.0
        self._group_sizes = dict(groups or {})
        self._start = time.perf_counter()
        self._cell_start = self._start

    def start(self, label: str) -> None:
        """A cell labelled ``label`` begins."""
        self._cell_start = time.perf_counter()
        self._draw(label)

    def advance(self, label: str, *, measured: bool = True, group: str | None = None) -> None:
        """A cell of ``group`` finished; ``measured`` is false for skipped and resumed cells."""
        self.done += 1
        if measured:
            self._measured += 1
            self._measuring_time += time.perf_counter() - self._cell_start
        self._draw(label)
        if group in self._left_in_group:
            self._left_in_group[group] -= 1
            if self._left_in_group[group] == 0:
                self._line(group)

    def _line(self, group: str) -> None:
        if not self.lines:
            return
        elapsed = format_seconds(time.perf_counter() - self._start)
        eta = self.eta()
        left = f", about {format_seconds(eta)} left" if eta and self.done < self.total else ""
        self.stream.write(
            f"{group}: {self._group_sizes[group]} cells done "
            f"({self.done}/{self.total} cells, {elapsed} elapsed{left})\n"
        )
        self.stream.flush()

    def note(self, message: str) -> None:
        """A sentence the user should see (an adjusted size), above the bar on a terminal."""
        if self.active:
            self.stream.write("\r" + " " * 110 + "\r")
        if self.active or self.lines:
            self.stream.write(message + "\n")
            self.stream.flush()

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
