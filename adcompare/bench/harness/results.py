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
run keeps every cell that finished. The temporary file's name carries the
writer's process id, so a later save removes those a killed writer left.

One process writes a results file at a time: a writer holds an exclusive
lock (``fcntl.flock`` on ``RESULTS.json.lock``, or where there is no
``fcntl`` the lock file's exclusive creation) from before it reads the file
until it exits, and a second writer waits a bounded time, then refuses with
a :class:`ResultsError`. Two runs into one file therefore never lose each
other's cells.

Reading checks every cell against the schema (:func:`cell_problem`); a cell
that does not fit is left out, and :attr:`Results.rejected` says which and
why, so one corrupt cell never costs the good ones.

:func:`load_any` also reads pytest-benchmark's JSON, whose benchmarks carry
the same fields in ``extra_info``
(:mod:`~adcompare.bench.harness.from_pytest`).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from adcompare.bench.harness.cells import ResultsError, cell_key, cell_problem, describe_cell
from adcompare.bench.harness.lock import (
    LOCK_WAIT,
    WriterLock,
    cannot_write,
    file_stamp,
    remove_stale_temporaries,
)

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Results",
    "ResultsError",
    "WriterLock",
    "cell_key",
    "cell_problem",
    "load_any",
    "load_results",
    "merge",
    "now",
    "open_for_writing",
    "read_json",
    "remove_stale_temporaries",
]

SCHEMA = "adcompare-bench-results"
SCHEMA_VERSION = 1


def now() -> str:
    """The current time as an ISO 8601 string with its time zone."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Results:
    """The cells measured so far, with the environments and runs that made them.

    ``path`` set, every :meth:`add` saves the whole document at once.

    Iterating gives the cells.

    >>> results = Results()
    >>> results.add({"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok"})
    >>> len(results), [cell["mode"] for cell in results], results.data["schema_version"]
    (1, ['f'], 1)
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
        #: What was left out when reading: one sentence per cell that did not fit the schema.
        self.rejected: list[str] = []
        self._lock: WriterLock | None = None

    @property
    def cells(self) -> list[dict]:
        """The cells, in the order they were first added."""
        return self.data["cells"]

    def __iter__(self):
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

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

    def lock(self, wait: float = LOCK_WAIT) -> None:
        """Hold the writer's lock on ``path`` until :meth:`close` (see :class:`WriterLock`).

        Take it before reading the file you will write, as ``adcompare bench``
        does, so a second run waits or refuses before it measures anything.
        Without it each :meth:`save` takes the lock for the write alone.
        """
        if self.path is not None and self._lock is None:
            lock = WriterLock(self.path)
            lock.acquire(wait)
            self._lock = lock

    def close(self) -> None:
        """Let another writer have ``path``."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def save(self, path: str | os.PathLike | None = None) -> None:
        """Write the document to ``path`` atomically (nothing to do without one); given
        another ``path``, write a copy there, which :func:`load_results` reads back.

        Refuses with a :class:`ResultsError`, writing nothing, when another
        writer rewrote the file since this one read or last wrote it: saving
        then would drop that writer's cells.
        """
        if path is not None and Path(path) != self.path:
            Results(self.data, path).save()
            return
        if self.path is None:
            return
        if self._lock is not None:
            self._write()
            return
        lock = WriterLock(self.path)
        lock.acquire()
        try:
            if self._stamp is not None and file_stamp(self.path) != self._stamp:
                raise ResultsError(
                    f"{self.path} was rewritten by another process since this one read it; "
                    "saving would drop that process's cells, so nothing was written: run "
                    "again with --resume to continue from what the file holds"
                )
            self._write()
        finally:
            lock.release()

    def _write(self) -> None:
        self.data["updated"] = now()
        remove_stale_temporaries(self.path)
        try:
            handle, temporary = tempfile.mkstemp(
                dir=self.path.parent, prefix=f"{self.path.name}.{os.getpid()}.", suffix=".tmp"
            )
        except OSError as error:
            raise ResultsError(cannot_write(self.path, error)) from None
        try:
            os.chmod(temporary, 0o644)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.data, out, indent=1, allow_nan=True)
                out.write("\n")
            os.replace(temporary, self.path)
        except BaseException as error:
            Path(temporary).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise ResultsError(cannot_write(self.path, error)) from None
            raise
        self._stamp = file_stamp(self.path)

    #: The file's identity when this object last read or wrote it (``None``: never).
    _stamp: tuple | None = None


def read_json(path: Path):
    """The JSON in ``path``, or a :class:`ResultsError` saying why it cannot be read."""
    if path.exists() and not path.is_file() and not path.is_dir():
        # A pipe waits for a writer and a device may never end: reading would not return.
        raise ResultsError(
            f"{path} is not a regular file (a pipe or a device); give a results file"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a text file, so not a results file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path} is a folder; give the results file inside it") from None
    except OSError as error:
        raise ResultsError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ResultsError(f"{path} is nested too deeply to be a results file") from None
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
            "from the benchmarks/ suite or the pytest plugin (adcompare_bench)"
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
    return data


def _keep_fitting(data: dict, path: Path) -> list[str]:
    """Leave out the cells, environments and runs that do not fit the schema; returns
    one sentence for each thing left out."""
    rejected = []
    cells = []
    for i, cell in enumerate(data["cells"]):
        problem = cell_problem(cell)
        if problem is None:
            cells.append(cell)
        else:
            rejected.append(f"{path}: {describe_cell(i, cell)} {problem}; left out")
    data["cells"] = cells
    for key, description in list(data["environments"].items()):
        if not isinstance(description, dict):
            del data["environments"][key]
            rejected.append(f"{path}: environment {key!r} is not an object; left out")
    runs = [run for run in data["runs"] if isinstance(run, dict) and "started" in run]
    if len(runs) < len(data["runs"]):
        rejected.append(
            f"{path}: {len(data['runs']) - len(runs)} run record(s) without a start; left out"
        )
    data["runs"] = runs
    return rejected


def _fitting_results(data, path: Path, *, write: bool) -> Results:
    data = _validate(data, path)
    rejected = _keep_fitting(data, path)
    results = Results(data, path if write else None)
    # A later cell with the same identity replaced an earlier one when the file was written.
    results.data["cells"] = list({cell_key(c): c for c in data["cells"]}.values())
    results._index = {cell_key(c): i for i, c in enumerate(results.cells)}
    results.rejected = rejected
    return results


def load_results(path: str | os.PathLike) -> Results:
    """Read a results file written by ``adcompare bench``, checking its schema.

    Raises :class:`ResultsError`, saying what is wrong, for a corrupt or
    foreign file; cells that do not fit the schema are left out and named in
    :attr:`Results.rejected`.
    """
    path = Path(path)
    stamp = file_stamp(path)
    results = _fitting_results(read_json(path), path, write=True)
    results._stamp = stamp
    return results


def open_for_writing(
    path: str | os.PathLike, *, resume: bool, overwrite: bool, wait: float | None = None
) -> Results:
    """The results to measure into, holding ``path``'s writer lock until :meth:`Results.close`.

    The lock comes first (a second writer waits up to ``wait`` seconds,
    default :data:`LOCK_WAIT`, then refuses), and only then is the file read
    (``resume``) or started afresh (``overwrite``, or no file yet), so what
    another writer saved is never overwritten by a stale copy.
    """
    path = Path(path)
    lock = WriterLock(path)
    lock.acquire(LOCK_WAIT if wait is None else wait)
    try:
        if path.exists() and resume:
            results = load_results(path)
        elif path.exists() and not overwrite:
            raise ResultsError(
                f"{path} already exists; pass --resume to continue it, --overwrite to start "
                "afresh, or --out to measure into another file"
            )
        else:
            results = Results(path=path)
    except BaseException:
        lock.release()
        raise
    results._lock = lock
    return results


def load_any(path: str | os.PathLike) -> Results:
    """Read ``adcompare bench`` results or pytest-benchmark JSON.

    The returned results are detached from ``path``: adding to them does not
    write back to a pytest-benchmark file.
    """
    from adcompare.bench.harness.from_pytest import from_pytest_benchmark, is_pytest_benchmark

    path = Path(path)
    data = read_json(path)
    if is_pytest_benchmark(data):
        return from_pytest_benchmark(data, path)
    return _fitting_results(data, path, write=False)


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
