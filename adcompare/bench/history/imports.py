"""Every results file this repository has written, read as runs for the history.

The files, by their ``schema`` field:

- ``adcompare-bench-results`` (version 1, written by ``run``, ``bench`` and
  ``targets``) and pytest-benchmark's JSON (``report``), read by
  :func:`~adcompare.bench.harness.results.load_any`: one run per environment
  the file records, so cells merged from two machines stay apart;
- ``adcompare-memory-results`` (version 1, ``memory``): a cell per problem,
  mode and number of steps T (its size ``{"steps": T}``);
- ``adcompare-sparse/1`` and ``/2`` (``sparse``): one time per cell, no
  samples and no machine record;
- ``adcompare-targets`` (version 1, ``targets.json``): a cell per target and
  entry, ``{library}:{label}`` its mode.

Anything else, and a file that is not JSON, is refused with one sentence.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from adcompare.bench.harness.results import SCHEMA, ResultsError, load_any, read_json
from adcompare.bench.history.store import HistoryError, Run
from adcompare.bench.memory.sweep import SCHEMA as MEMORY_SCHEMA
from adcompare.bench.targets.report import SCHEMA as TARGETS_SCHEMA

__all__ = ["KINDS", "read_runs"]

#: What the history reads, as said in its refusals.
KINDS = (
    "results.json from run, bench, targets or memory, sparse.json, targets.json, or "
    "pytest-benchmark JSON"
)
SPARSE_SCHEMAS = ("adcompare-sparse/1", "adcompare-sparse/2")


def _modified(path: Path) -> str:
    stamp = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def _run(command: str, cells: list, environment: dict, started, path: Path, peers=None) -> Run:
    """A run of ``cells`` from ``path``, its versions those its environment records."""
    versions = {**(environment.get("versions") or {}), **(peers or {})}
    return Run(command, cells, environment, started, str(path), versions=versions)


def _bench_runs(path: Path, command: str) -> tuple[list[Run], list[str]]:
    results = load_any(path)
    data = results.data
    started = data["runs"][-1].get("started") if data["runs"] else data.get("created")
    by_env: dict = {}
    for cell in results.cells:
        by_env.setdefault(cell.get("env"), []).append(cell)
    runs = [
        _run(command, cells, data["environments"].get(key) or {}, started, path)
        for key, cells in by_env.items()
    ]
    return runs, results.rejected


def _memory_run(data: dict, path: Path, command: str) -> Run:
    cells = [
        {**cell, "size": {"steps": cell["steps"]}}
        for cell in data["cells"]
        if isinstance(cell, dict) and {"problem", "mode", "steps", "status"} <= set(cell)
    ]
    return _run(command, cells, data.get("environment") or {}, data.get("created"), path)


def _sparse_run(data: dict, path: Path, command: str) -> Run:
    cells = []
    for cell in data["cells"]:
        if not isinstance(cell, dict) or not {"problem", "mode", "size"} <= set(cell):
            continue
        seconds = cell.get("time")
        measured = isinstance(seconds, (int, float)) and seconds > 0
        cells.append(
            {
                "problem": cell["problem"],
                "mode": cell["mode"],
                "size": {"size": cell["size"]},
                "n": cell.get("n"),
                "m": cell.get("m"),
                "family": cell.get("kind"),
                "status": "ok" if measured else "skipped",
                "reason": cell.get("skipped"),
                **({"time": {"median": seconds}} if measured else {}),
            }
        )
    return _run(command, cells, {}, _modified(path), path)


def _targets_run(data: dict, path: Path, command: str) -> Run:
    cells = []
    for row in data["rows"]:
        for entry in row.get("entries", []):
            seconds = entry.get("seconds")
            measured = entry.get("status") == "ok" and isinstance(seconds, (int, float))
            timing = {"median": seconds, "iqr": entry.get("iqr"), "min": entry.get("fastest")}
            cells.append(
                {
                    "problem": f"target {row['id']}",
                    "mode": f"{entry.get('library')}:{entry.get('label')}",
                    "size": {},
                    "status": "ok" if measured else "skipped",
                    **({"time": timing} if measured else {}),
                }
            )
    environment = data.get("environment") or {}
    return _run(command, cells, environment, data.get("created"), path, data.get("peer_versions"))


_READERS = {
    MEMORY_SCHEMA: (_memory_run, ("cells", list)),
    TARGETS_SCHEMA: (_targets_run, ("rows", list)),
    **{schema: (_sparse_run, ("cells", list)) for schema in SPARSE_SCHEMAS},
}


def read_runs(path: str | os.PathLike, command: str = "import") -> tuple[list[Run], list[str]]:
    """The runs in the results file at ``path``, and a sentence for each cell left out.

    Raises :class:`~adcompare.bench.history.store.HistoryError` with one
    sentence for a file that is missing, corrupt or of another kind.

    >>> runs, rejected = read_runs("reports/sparse/sparse.json")
    >>> runs[0].cells[0]["size"], rejected
    ({'size': 16}, [])
    """
    path = Path(path)
    try:
        data = read_json(path)
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema in _READERS:
            reader, (name, kind) = _READERS[schema]
            if not isinstance(data.get(name), kind):
                raise HistoryError(
                    f"{path}: the field {name!r} is missing or not a {kind.__name__}, so the "
                    "file is corrupt"
                )
            return [reader(data, path, command)], []
        if schema != SCHEMA and not (isinstance(data, dict) and "benchmarks" in data):
            found = schema if isinstance(data, dict) else type(data).__name__
            raise HistoryError(
                f"{path} is not a results file adcompare wrote (its schema is {found!r}); "
                f"the history reads {KINDS}"
            )
        return _bench_runs(path, command)
    except ResultsError as error:
        raise HistoryError(str(error)) from None
