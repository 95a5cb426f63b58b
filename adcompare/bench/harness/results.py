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
the same fields in ``extra_info``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: the lock is the lock file's exclusive creation
    fcntl = None

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
    "open_for_writing",
]

SCHEMA = "adcompare-bench-results"
SCHEMA_VERSION = 1
STATUSES = ("ok", "skipped", "error")
_REQUIRED = ("problem", "mode", "size", "status")
#: How long a second writer waits for the first to finish before refusing, in seconds.
LOCK_WAIT = 5.0


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


# --- what a cell may hold ------------------------------------------------------------------


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    return _number(value) and math.isfinite(value)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TEXT_FIELDS = ("family", "env", "finished", "source", "reason")
_TIME_FIELDS = ("iqr", "min", "max", "warmup")


def _text_problem(name: str, value) -> str | None:
    if not isinstance(value, str):
        return f"has {name} {value!r}, not text"
    if _CONTROL.search(value):
        return f"has control characters in its {name} {value!r}"
    return None


def _time_problem(timing) -> str | None:
    if not isinstance(timing, dict):
        return f"has time {timing!r}, not an object with a median"
    median = timing.get("median")
    if not _finite(median) or median <= 0:
        return f"has median time {median!r}; expected a positive number of seconds"
    for name in _TIME_FIELDS:
        value = timing.get(name)
        if value is not None and (not _finite(value) or value < 0):
            return f"has time.{name} {value!r}; expected seconds (a number, 0 or more)"
    samples = timing.get("samples")
    if samples is not None and not (
        isinstance(samples, list) and all(_finite(v) and v >= 0 for v in samples)
    ):
        return "has time.samples that are not a list of seconds"
    for name in ("repeats", "loops"):
        value = timing.get(name)
        if value is not None and not _count(value):
            return f"has time.{name} {value!r}; expected a positive whole number"
    return None


def _counts_problem(counts) -> str | None:
    if counts is None:
        return None
    if not isinstance(counts, dict):
        return f"has counts {counts!r}, not an object"
    for name, value in counts.items():
        numbers = value.values() if isinstance(value, dict) else [value]
        if not all(_finite(v) and v >= 0 for v in numbers):
            return f"has counts.{name} {value!r}; expected counts (numbers, 0 or more)"
    return None


def _check_problem(check) -> str | None:
    if check is None:
        return None
    fits = (
        isinstance(check, dict)
        and isinstance(check.get("ok"), bool)
        and _number(check.get("error"))
        and _finite(check.get("tolerance"))
        and isinstance(check.get("against"), str)
    )
    return None if fits else f"has check {check!r}; expected ok, error, tolerance and against"


def _measured_problem(cell: dict) -> str | None:
    memory = cell.get("memory")
    peak = memory.get("peak_bytes") if isinstance(memory, dict) else None
    if memory is not None and (
        not isinstance(memory, dict) or (peak is not None and not (_finite(peak) and peak >= 0))
    ):
        return f"has memory {memory!r}; expected {{'peak_bytes': a number of bytes or null}}"
    return (
        _time_problem(cell.get("time"))
        or _counts_problem(cell.get("counts"))
        or _check_problem(cell.get("check"))
    )


def cell_problem(cell) -> str | None:
    """What makes ``cell`` unfit for the schema, as a phrase; ``None`` when it fits.

    A measured cell needs positive whole ``n`` and ``m`` and a positive finite
    median time; every optional field present has its documented type.

    >>> cell = {"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok", "n": 8, "m": 1}
    >>> cell_problem(cell | {"time": {"median": 1e-5}}) is None
    True
    >>> cell_problem(cell | {"time": {"median": "fast"}})
    "has median time 'fast'; expected a positive number of seconds"
    """
    if not isinstance(cell, dict):
        return f"is a {type(cell).__name__}, not an object"
    missing = [k for k in _REQUIRED if k not in cell]
    if missing:
        return f"lacks {', '.join(map(repr, missing))}"
    if cell["status"] not in STATUSES:
        return f"has status {cell['status']!r}; expected one of {STATUSES}"
    for name in ("problem", "mode"):
        problem = _text_problem(name, cell[name]) or (
            None if cell[name] else f"has an empty {name}"
        )
        if problem:
            return problem
    size = cell["size"]
    if not isinstance(size, dict) or not all(
        isinstance(k, str) and _count(v) for k, v in size.items()
    ):
        return f"has size {size!r}; expected positive whole numbers by name, like {{'n': 64}}"
    for name in _TEXT_FIELDS:
        if cell.get(name) is not None and (problem := _text_problem(name, cell[name])):
            return problem
    for name in ("n", "m"):
        value = cell.get(name)
        if (cell["status"] == "ok" or value is not None) and not _count(value):
            return f"has {name} = {value!r}; expected a positive whole number"
    for name in ("load", "seconds"):
        value = cell.get(name)
        if value is not None and (not _finite(value) or value < 0):
            return f"has {name} {value!r}; expected a number, 0 or more"
    if cell["status"] == "ok":
        return _measured_problem(cell)
    if cell["status"] == "error":
        error = cell.get("error")
        if not isinstance(error, dict) or not all(
            isinstance(error.get(k), str) for k in ("type", "message")
        ):
            return f"has error {error!r}; expected its type and message"
    return None


def _describe_cell(i: int, cell) -> str:
    if isinstance(cell, dict) and isinstance(cell.get("problem"), str):
        name = " ".join(
            repr(cell[k])[:60] for k in ("problem", "mode") if isinstance(cell.get(k), str)
        )
        return f"cell {i} ({name})"
    return f"cell {i}"


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
        #: What was left out when reading: one sentence per cell that did not fit the schema.
        self.rejected: list[str] = []
        self._lock: WriterLock | None = None

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

    def save(self) -> None:
        """Write the document to ``path`` atomically (nothing to do without one).

        Refuses with a :class:`ResultsError`, writing nothing, when another
        writer rewrote the file since this one read or last wrote it: saving
        then would drop that writer's cells.
        """
        if self.path is None:
            return
        if self._lock is not None:
            self._write()
            return
        lock = WriterLock(self.path)
        lock.acquire()
        try:
            if self._stamp is not None and _stamp(self.path) != self._stamp:
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
            raise ResultsError(_cannot_write(self.path, error)) from None
        try:
            os.chmod(temporary, 0o644)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(self.data, out, indent=1, allow_nan=True)
                out.write("\n")
            os.replace(temporary, self.path)
        except BaseException as error:
            Path(temporary).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise ResultsError(_cannot_write(self.path, error)) from None
            raise
        self._stamp = _stamp(self.path)

    #: The file's identity when this object last read or wrote it (``None``: never).
    _stamp: tuple | None = None


def _stamp(path: Path) -> tuple | None:
    """What changes when ``path`` is rewritten (``None``: no such file)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def _cannot_write(path: Path, error: OSError) -> str:
    if path.is_dir():
        return (
            f"cannot write the results file {path}: it is a folder; give a file name, "
            f"like {path / 'results.json'}"
        )
    return (
        f"cannot write the results file {path}: {error.strerror or error}; "
        "choose a writable place with --out"
    )


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (on POSIX; elsewhere assume it does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, AttributeError):
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporary files a killed writer of ``path`` left; returns what went.

    A temporary is ``RESULTS.json.<pid>.<random>.tmp``: it is stale when
    process ``pid`` no longer runs. Other files are never touched.
    """
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.(\d+)\.[^.]+\.tmp")
    removed = []
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return removed
    for candidate in candidates:
        found = pattern.fullmatch(candidate.name)
        if found and not _running(int(found.group(1))):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


class WriterLock:
    """The exclusive right to write one results file, held until :meth:`release` or exit.

    On POSIX it is ``fcntl.flock`` on ``RESULTS.json.lock`` (the kernel drops
    it when the process ends, however it ends); elsewhere it is the lock
    file itself, created exclusively and holding the writer's process id, and
    a lock file whose process no longer runs is taken over.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"
    >>> first, second = WriterLock(path), WriterLock(path)
    >>> first.acquire()
    >>> second.acquire(wait=0)
    Traceback (most recent call last):
    ...
    adcompare.bench.harness.results.ResultsError: ... is being written by another adcompare ...
    >>> first.release(); second.acquire(wait=0); second.release()
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._handle: int | None = None

    def acquire(self, wait: float = LOCK_WAIT) -> None:
        """Take the lock, waiting up to ``wait`` seconds for another writer to finish."""
        deadline = time.monotonic() + wait
        while not self._try():
            if time.monotonic() >= deadline:
                raise ResultsError(
                    f"{self.path} is being written by another adcompare process"
                    f"{self._holder()}; wait for it to finish (then --resume), or measure into "
                    "another file with --out"
                )
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def _holder_pid(self) -> int | None:
        try:
            pid = self.lock_path.read_text().strip()
        except OSError:
            return None
        return int(pid) if pid.isdigit() else None

    def _holder(self) -> str:
        pid = self._holder_pid()
        return "" if pid is None else f" (process {pid})"

    def _open(self, flags: int) -> int:
        if self.path.is_dir():
            raise ResultsError(_cannot_write(self.path, IsADirectoryError(21, "is a folder")))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ResultsError(_cannot_write(self.path, error)) from None
        try:
            return os.open(self.lock_path, flags, 0o644)
        except FileExistsError:
            raise
        except OSError as error:
            raise ResultsError(_cannot_write(self.path, error)) from None

    def _try(self) -> bool:
        if fcntl is None:
            return self._try_exclusive_file()
        handle = self._open(os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            return False
        # The lock file may have been removed and recreated while we waited: retry on the new one.
        if (
            _stamp(self.lock_path) is None
            or os.fstat(handle).st_ino != self.lock_path.stat().st_ino
        ):
            os.close(handle)
            return False
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle
        return True

    def _try_exclusive_file(self) -> bool:
        try:
            handle = self._open(os.O_RDWR | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            pid = self._holder_pid()
            if pid is not None and not _running(pid):
                self.lock_path.unlink(missing_ok=True)
            return False
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle
        return True

    def release(self) -> None:
        """Give the lock up (and remove the lock file)."""
        if self._handle is None:
            return
        self.lock_path.unlink(missing_ok=True)
        os.close(self._handle)
        self._handle = None

    def __del__(self):
        with contextlib.suppress(Exception):
            self.release()


def _read_json(path: Path):
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
            rejected.append(f"{path}: {_describe_cell(i, cell)} {problem}; left out")
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
    stamp = _stamp(path)
    results = _fitting_results(_read_json(path), path, write=True)
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


def _is_pytest_benchmark(data) -> bool:
    return isinstance(data, dict) and "benchmarks" in data and "machine_info" in data


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def _from_pytest_benchmark(data: dict, path: Path) -> Results:
    """Cells from pytest-benchmark JSON whose benchmarks carry adcompare's extra_info."""
    from adcompare.bench.harness.env import environment_key

    machine = _object(data.get("machine_info"))
    cpu = _object(machine.get("cpu"))
    description = {
        "machine": machine.get("node"),
        "platform": machine.get("platform") or machine.get("system"),
        "cpu": cpu.get("brand_raw"),
        "cpus_total": cpu.get("count"),
        "python": machine.get("python_version"),
        "source": "pytest-benchmark " + str(data.get("version", "")),
    }
    results = Results()
    key = environment_key(description)
    results.add_environment(key, description)
    benchmarks = data["benchmarks"] if isinstance(data["benchmarks"], list) else []
    for bench in map(_object, benchmarks):
        info = _object(bench.get("extra_info"))
        stats = _object(bench.get("stats"))
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
                "median": stats.get("median"),
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
        problem = cell_problem(cell)
        if problem is None:
            results.add(cell)
        else:
            results.rejected.append(f"{path}: benchmark {bench.get('name')!r} {problem}; left out")
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
