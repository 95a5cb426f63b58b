"""The results file: a versioned JSON document, rewritten as each cell finishes.

Layout (schema version 1)::

    {
      "schema": "adcompare-bench-results",
      "schema_version": 1,
      "created": "2025-01-01T12:00:00+00:00", "updated": "...",
      "runs": [{"started": "...", "config": {...}}],
      "environments": {"env-1a2b3c4d5e": {"machine": ..., "versions": ..., ...}},
      "cells": [
        {"problem": "rosenbrock", "family": "many-inputs", "mode": "reverse",
         "size": {"n": 64}, "n": 64, "m": 1, "status": "ok",
         "time": {"median": ..., "iqr": ..., "min": ..., "samples": [...], ...},
         "counts": {...}, "memory": {"peak_bytes": ...}, "check": {...},
         "env": "env-1a2b3c4d5e", "finished": "..."},
        {"status": "skipped", "reason": "...", ...},
        {"status": "error", "error": {"type": ..., "message": ..., "traceback": ...}, ...}
      ]
    }

A cell is identified by problem, mode and size; adding a cell with the same
identity replaces the old one. Each save writes a temporary file and renames
it over the old one, so the file on disk is always complete: an interrupted
run keeps every cell that finished.

:func:`load_any` also reads pytest-benchmark's JSON, whose benchmarks carry
the same fields in ``extra_info``.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Results",
    "ResultsError",
    "cell_key",
    "load_any",
    "load_results",
    "merge",
]

SCHEMA = "adcompare-bench-results"
SCHEMA_VERSION = 1
STATUSES = ("ok", "skipped", "error")
_REQUIRED = ("problem", "mode", "size", "status")


class ResultsError(ValueError):
    """A results file that cannot be read: corrupt, foreign, or too new."""


def now() -> str:
    """The current time as an ISO 8601 string with its time zone."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def cell_key(cell: dict) -> tuple:
    """What identifies a cell: problem, mode and size.

    >>> cell_key({"problem": "mlp", "mode": "f", "size": {"n": 8}})
    ('mlp', 'f', (('n', 8),))
    """
    return cell["problem"], cell["mode"], tuple(sorted(cell["size"].items()))


class Results:
    """The cells measured so far, with the environments and runs that made them.

    ``path`` set, every :meth:`add` saves the whole document at once.

    >>> results = Results()
    >>> results.add({"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok"})
    >>> len(results.cells), results.data["schema_version"]
    (1, 1)
    """

    def __init__(self, data: dict | None = None, path: str | os.PathLike | None = None):
        if data is None:
            stamp = now()
            data = {
                "schema": SCHEMA,
                "schema_version": SCHEMA_VERSION,
                "created": stamp,
                "updated": stamp,
                "runs": [],
                "environments": {},
                "cells": [],
            }
        self.data = data
        self.path = Path(path) if path is not None else None
        self._index = {cell_key(c): i for i, c in enumerate(data["cells"])}

    @property
    def cells(self) -> list[dict]:
        """The cells, in the order they were first added."""
        return self.data["cells"]

    def get(self, key: tuple) -> dict | None:
        """The cell with identity ``key``, or ``None``."""
        i = self._index.get(key)
        return None if i is None else self.cells[i]

    def add(self, cell: dict) -> None:
        """Add a cell (replacing one with the same identity), then save."""
        key = cell_key(cell)
        if key in self._index:
            self.cells[self._index[key]] = cell
        else:
            self._index[key] = len(self.cells)
            self.cells.append(cell)
        self.save()

    def add_environment(self, key: str, description: dict) -> None:
        """Record the environment ``key`` stands for."""
        self.data["environments"][key] = description

    def start_run(self, config: dict) -> None:
        """Record that a run with ``config`` started, then save."""
        self.data["runs"].append({"started": now(), "config": config})
        self.save()

    def save(self) -> None:
        """Write the document to ``path`` atomically (nothing to do without one)."""
        if self.path is None:
            return
        self.data["updated"] = now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp"
        )
        try:
            os.chmod(temporary, 0o644)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.data, out, indent=1, allow_nan=True)
                out.write("\n")
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _read_json(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a text file, so not a results file") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsError(
            f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            "the file is corrupt: delete it or measure into another file with --out"
        ) from None


def _validate(data, path: Path) -> dict:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ResultsError(
            f"{path} is not an adcompare results file (its schema is {found!r}, expected "
            f"{SCHEMA!r}); give a file written by 'adcompare bench', or pytest-benchmark JSON "
            "from the benchmarks/ suite"
        )
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ResultsError(f"{path}: the schema_version is {version!r}, not a whole number")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{path} has schema version {version}, newer than this adcompare reads "
            f"({SCHEMA_VERSION}); upgrade adcompare to read it"
        )
    for name, kind in (("cells", list), ("environments", dict), ("runs", list)):
        if not isinstance(data.get(name), kind):
            raise ResultsError(f"{path}: the field {name!r} is missing or not a {kind.__name__}")
    for i, cell in enumerate(data["cells"]):
        missing = [k for k in _REQUIRED if not isinstance(cell, dict) or k not in cell]
        if missing:
            raise ResultsError(f"{path}: cell {i} lacks {', '.join(map(repr, missing))}")
        if cell["status"] not in STATUSES:
            raise ResultsError(
                f"{path}: cell {i} has status {cell['status']!r}; expected one of {STATUSES}"
            )
    return data


def load_results(path: str | os.PathLike) -> Results:
    """Read a results file written by ``adcompare bench``, checking its schema.

    Raises :class:`ResultsError`, saying what is wrong, for a corrupt or
    foreign file.
    """
    path = Path(path)
    return Results(_validate(_read_json(path), path), path)


def _is_pytest_benchmark(data) -> bool:
    return isinstance(data, dict) and "benchmarks" in data and "machine_info" in data


def _from_pytest_benchmark(data: dict, path: Path) -> Results:
    """Cells from pytest-benchmark JSON whose benchmarks carry adcompare's extra_info."""
    from adcompare.bench.env import environment_key

    machine = data.get("machine_info", {})
    description = {
        "machine": machine.get("node"),
        "platform": machine.get("platform") or machine.get("system"),
        "cpu": (machine.get("cpu") or {}).get("brand_raw"),
        "cpus_total": (machine.get("cpu") or {}).get("count"),
        "python": machine.get("python_version"),
        "source": "pytest-benchmark " + str(data.get("version", "")),
    }
    results = Results()
    key = environment_key(description)
    results.add_environment(key, description)
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") or {}
        stats = bench.get("stats") or {}
        if not all(k in info for k in ("problem", "mode", "size", "n", "m")) or not stats:
            continue
        cell = {
            "problem": info["problem"],
            "family": info.get("family"),
            "mode": info["mode"],
            "size": info["size"],
            "n": info["n"],
            "m": info["m"],
            "status": "ok",
            "time": {
                "median": stats["median"],
                "iqr": stats.get("iqr"),
                "min": stats.get("min"),
                "max": stats.get("max"),
                "repeats": stats.get("rounds"),
                "loops": stats.get("iterations", 1),
            },
            "counts": info.get("counts"),
            "memory": {"peak_bytes": info.get("peak_bytes")},
            "check": info.get("check"),
            "env": key,
            "source": f"pytest-benchmark: {bench.get('fullname', bench.get('name'))}",
            "finished": data.get("datetime"),
        }
        results.add(cell)
    if not results.cells:
        raise ResultsError(
            f"{path} is pytest-benchmark JSON, but none of its benchmarks has timings and "
            "adcompare's extra_info (problem, mode, size, n, m); produce it with "
            "'pytest benchmarks --benchmark-enable --benchmark-json FILE'"
        )
    results.data["runs"].append({"started": data.get("datetime"), "config": {"source": str(path)}})
    return results


def load_any(path: str | os.PathLike) -> Results:
    """Read ``adcompare bench`` results or pytest-benchmark JSON.

    The returned results are detached from ``path``: adding to them does not
    write back to a pytest-benchmark file.
    """
    path = Path(path)
    data = _read_json(path)
    if _is_pytest_benchmark(data):
        return _from_pytest_benchmark(data, path)
    results = Results(_validate(data, path))
    return results


def merge(many: Iterable[Results]) -> Results:
    """One set of results from several; a later cell replaces an earlier one.

    >>> a, b = Results(), Results()
    >>> a.add({"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "error"})
    >>> b.add({"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok"})
    >>> [c["status"] for c in merge([a, b]).cells]
    ['ok']
    """
    merged = Results()
    for results in many:
        merged.data["environments"].update(results.data["environments"])
        merged.data["runs"].extend(results.data["runs"])
        for cell in results.cells:
            merged.add(cell)
    return merged
