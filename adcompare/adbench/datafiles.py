"""The data files shipped with the package (see ``data/PROVENANCE.md``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "data_path"]

#: Where the bundled ADBench and GradBench files live.
DATA_DIR = Path(__file__).parent / "data"


def data_path(name: str) -> Path:
    """The path of a bundled data file, e.g. ``"adbench/gmm/test.txt"``.

    >>> data_path("adbench/ba/test.txt").name
    'test.txt'
    """
    path = DATA_DIR / name
    if not path.is_file():
        shipped = sorted(
            str(p.relative_to(DATA_DIR))
            for p in DATA_DIR.rglob("*")
            if p.is_file() and p.suffix != ".md"
        )
        raise FileNotFoundError(f"no bundled data file {name!r}; the package ships {shipped}")
    return path
