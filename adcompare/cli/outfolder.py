"""Where a command writes: check an output folder before the work that fills it, not after.

Every command writes into the git-ignored ``reports/latest/`` unless told
otherwise; the committed reference folders (``reports/quick``,
``reports/sparse``, ...) are rewritten only with ``--refresh-reference``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = [
    "LATEST",
    "REFERENCES",
    "OutputPathError",
    "check_not_reference",
    "check_output_folder",
    "output_folder",
]

#: Where commands write by default: git-ignored, rewritten by each run.
LATEST = Path("reports") / "latest"
#: The committed reference folders under ``reports/``, written only with ``--refresh-reference``.
REFERENCES = ("quick", "sparse", "memory", "targets", "train", "peers", "real")


class OutputPathError(ValueError):
    """An output folder that cannot be created or written to, or must not be."""


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


def check_not_reference(path: str | os.PathLike, *, refresh: bool = False) -> Path:
    """``path``, unless it lies in a committed reference folder and ``refresh`` is false.

    >>> check_not_reference("reports/latest/sparse")
    PosixPath('reports/latest/sparse')
    >>> check_not_reference("reports/sparse/sparse.json")
    Traceback (most recent call last):
    ...
    adcompare.cli.outfolder.OutputPathError: reports/sparse is a committed reference; ...
    >>> check_not_reference("reports/sparse", refresh=True)
    PosixPath('reports/sparse')
    """
    path = Path(path)
    reports = Path("reports").resolve()
    inside = (
        path.resolve().relative_to(reports).parts if path.resolve().is_relative_to(reports) else ()
    )
    if inside and inside[0] in REFERENCES and not refresh:
        raise OutputPathError(
            f"{Path('reports') / inside[0]} is a committed reference; pass --refresh-reference "
            f"to rewrite it, or write elsewhere (the default is {LATEST})"
        )
    return path


def output_folder(out: Path | None, name: str, *, refresh: bool = False) -> Path:
    """The folder a command writes: ``--out``, else ``reports/latest/<name>``, or with
    ``refresh`` the committed reference ``reports/<name>``; a reference only when asked.

    >>> output_folder(None, "sparse"), output_folder(None, "sparse", refresh=True)
    (PosixPath('reports/latest/sparse'), PosixPath('reports/sparse'))
    """
    if refresh:
        return Path("reports") / name
    return check_not_reference(LATEST / name if out is None else out)
