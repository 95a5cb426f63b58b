"""Reading whitespace-separated numbers with the file and line of each one.

ADBench's text formats are plain streams of numbers; a reader that only
splits on whitespace cannot say where a file went wrong. ``NumberStream``
remembers the line of every token, so a malformed file gets an error naming
the file, the line and what was expected there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["FormatError", "NumberStream"]


class FormatError(ValueError):
    """A data file does not have the layout its reader expects."""


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class NumberStream:
    """The numbers of a text file, read in order, with their line numbers.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("2 3\\n1.5 x\\n")
    >>> stream = NumberStream(f.name)
    >>> stream.ints(2, "the sizes")
    array([2, 3])
    >>> stream.floats(2, "the values")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    adcompare.adbench.tokens.FormatError: ...:2: expected the values (2 numbers), found 'x'
    >>> os.remove(f.name)
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            text = self.path.read_text()
        except OSError as error:
            raise FormatError(f"{self.path}: cannot read the file ({error.strerror})") from None
        self._tokens: list[tuple[str, int]] = [
            (token, number)
            for number, line in enumerate(text.splitlines(), start=1)
            for token in line.split()
        ]
        self._next = 0

    def _take(self, count: int, what: str) -> list[tuple[str, int]]:
        available = len(self._tokens) - self._next
        if available < count:
            last_line = self._tokens[-1][1] if self._tokens else 0
            raise FormatError(
                f"{self.path}:{last_line}: the file ends early: expected {what} "
                f"({_count(count, 'number')}) but only {available} remain"
            )
        taken = self._tokens[self._next : self._next + count]
        self._next += count
        return taken

    def floats(self, count: int, what: str) -> np.ndarray:
        """The next ``count`` numbers as floats; ``what`` names them in errors."""
        values = []
        for token, line in self._take(count, what):
            try:
                values.append(float(token))
            except ValueError:
                raise FormatError(
                    f"{self.path}:{line}: expected {what} ({_count(count, 'number')}), "
                    f"found {token!r}"
                ) from None
        return np.array(values, dtype=np.float64)

    def ints(self, count: int, what: str, minimum: int = 0) -> np.ndarray:
        """The next ``count`` numbers as integers of at least ``minimum``."""
        values = []
        for token, line in self._take(count, what):
            try:
                value = int(token)
            except ValueError:
                raise FormatError(
                    f"{self.path}:{line}: expected {what} ({_count(count, 'integer')}), "
                    f"found {token!r}"
                ) from None
            if value < minimum:
                raise FormatError(
                    f"{self.path}:{line}: expected {what} to be at least {minimum}, found {value}"
                )
            values.append(value)
        return np.array(values, dtype=np.int64)

    def expect_end(self) -> None:
        """Raise if numbers remain: the header promised fewer than the file holds."""
        if self._next < len(self._tokens):
            token, line = self._tokens[self._next]
            raise FormatError(
                f"{self.path}:{line}: expected the end of the file, found {token!r} and "
                f"{len(self._tokens) - self._next - 1} more; check the sizes in the header"
            )
