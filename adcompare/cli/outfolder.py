"""Check an output folder before the work that fills it, not after."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["OutputPathError", "check_output_folder"]


class OutputPathError(ValueError):
    """An output folder that cannot be created or written to."""


def check_output_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` if needed and prove a file can be written there.

    Raises :class:`OutputPathError` with a sentence saying what to do.

    >>> import tempfile, pathlib
    >>> check_output_folder(pathlib.Path(tempfile.mkdtemp()) / "new").is_dir()
    True
    >>> check_output_folder("/dev/null/report")
    Traceback (most recent call last):
    ...
    adcompare.cli.outfolder.OutputPathError: cannot write into /dev/null/report: ...
    """
    folder = Path(folder)
    try:
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"{folder} is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise OutputPathError(
            f"cannot write into {folder}: {reason}; pass --out with a folder you can write to"
        ) from None
    return folder
