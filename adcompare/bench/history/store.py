"""The history database: one SQLite file of runs and their cells, samples included.

A *run* is one measurement on one machine: when it started, the command and
file it came from, the machine (the harness's environment record, and a key
of the machine's name, CPU and core count), adcompare's version and git
commit, and the libraries' versions (numpy's and the peers'). Its *cells*
are keyed by problem, mode and size, and keep the status, the median, every
timing sample and the cell's other figures (family, counts, memory).

The schema is versioned by SQLite's ``user_version``: opening a file runs
the :data:`MIGRATIONS` it lacks in one transaction, and a file of a newer
version, or another program's database, is refused with a sentence. Every
write is one ``BEGIN IMMEDIATE`` transaction, and a writer waits up to
:data:`WAIT` seconds for another to finish, so two processes recording at
once both keep their runs. A run already recorded (the same machine,
environment and cells: its *fingerprint*) is not recorded twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "HistoryError",
    "Run",
    "choose_runs",
    "list_runs",
    "machine_key",
    "record_runs",
    "run_cells",
]

#: Marks the file as adcompare's history (SQLite's ``application_id``: "adCH").
APPLICATION_ID = 0x61644348
#: Seconds a writer waits for another to finish its transaction.
WAIT = 60.0

#: Each entry upgrades the schema by one version; the list's length is the current version.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE runs ("
        " id INTEGER PRIMARY KEY,"
        " recorded TEXT NOT NULL,"
        " started TEXT,"
        " command TEXT NOT NULL,"
        " source TEXT,"
        " machine TEXT,"
        " machine_key TEXT NOT NULL,"
        " environment TEXT NOT NULL,"
        " version TEXT,"
        " git_commit TEXT,"
        " versions TEXT NOT NULL,"
        " fingerprint TEXT NOT NULL UNIQUE)",
        "CREATE TABLE cells ("
        " run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        " problem TEXT NOT NULL,"
        " mode TEXT NOT NULL,"
        " size TEXT NOT NULL,"
        " status TEXT NOT NULL,"
        " median REAL,"
        " samples TEXT,"
        " cell TEXT NOT NULL,"
        " PRIMARY KEY (run, problem, mode, size))",
        "CREATE INDEX runs_by_commit ON runs (git_commit)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

#: A cell's fields kept in the history (the samples are kept in a column of their own).
CELL_FIELDS = ("family", "n", "m", "status", "reason", "flags", "label")
#: The counts kept: what the report's element-work and tape figures read.
COUNT_FIELDS = ("elements", "tape_bytes")
TIME_FIELDS = ("median", "iqr", "min", "max", "repeats", "loops")


class HistoryError(ValueError):
    """A history database that cannot be used: not a database, another program's, too new."""


@dataclass
class Run:
    """One run to record: its provenance and its cells (dicts as the harness writes them,
    each with ``problem``, ``mode``, ``size`` (a dict) and ``status``)."""

    command: str
    cells: list[dict]
    environment: dict = field(default_factory=dict)
    started: str | None = None
    source: str | None = None
    commit: str | None = None
    versions: dict = field(default_factory=dict)

    @property
    def machine(self) -> str | None:
        """The machine's name as the environment records it."""
        return self.environment.get("machine")

    def fingerprint(self) -> str:
        """Equal for the same machine, environment and cells: a run recorded once."""
        text = json.dumps([self.environment, self.cells], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def machine_key(environment: dict) -> str:
    """The machine a run was measured on: its name, CPU and core count, hashed; runs
    with equal keys may be compared by time. An unrecorded machine gets a key of its own
    run (``unknown``), never equal to another's.

    >>> machine_key({"machine": "vm", "cpu": "EPYC", "cpus_total": 2, "python": "3.11"}) == (
    ...     machine_key({"machine": "vm", "cpu": "EPYC", "cpus_total": 2, "python": "3.12"}))
    True
    >>> machine_key({})
    'unknown'
    """
    parts = [environment.get(name) for name in ("machine", "cpu", "cpus_total")]
    if not any(parts):
        return "unknown"
    return "machine-" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:10]


def size_text(size: dict) -> str:
    """A cell's size as the key the history stores.

    >>> size_text({"n": 8, "m": 2})
    '{"m": 2, "n": 8}'
    """
    return json.dumps(size, sort_keys=True)


def _stored_cell(cell: dict) -> dict:
    kept = {name: cell[name] for name in CELL_FIELDS if name in cell}
    timing = cell.get("time")
    if isinstance(timing, dict):
        kept["time"] = {name: timing[name] for name in TIME_FIELDS if name in timing}
    counts = cell.get("counts")
    if isinstance(counts, dict):
        kept["counts"] = {name: counts[name] for name in COUNT_FIELDS if name in counts}
    memory = cell.get("memory")
    if isinstance(memory, dict) and "peak_bytes" in memory:
        kept["memory"] = {"peak_bytes": memory["peak_bytes"]}
    return kept


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise HistoryError(f"{path} is a folder; give the history file inside it with --history")
    if path.exists() and path.stat().st_size:
        with path.open("rb") as head:
            if head.read(16) != b"SQLite format 3\x00":
                raise HistoryError(
                    f"{path} is not an SQLite database, so not an adcompare history; "
                    "give another file with --history"
                )


def _migrate(connection: sqlite3.Connection, path: Path) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        owner = connection.execute("PRAGMA application_id").fetchone()[0]
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if owner != APPLICATION_ID and (tables or version):
            raise HistoryError(
                f"{path} is another program's SQLite database, not an adcompare history; "
                "give another file with --history"
            )
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{path} has history schema version {version}, newer than this adcompare "
                f"reads ({SCHEMA_VERSION}); upgrade adcompare to use it"
            )
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                connection.execute(statement)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def connect(path: str | os.PathLike, *, create: bool = False):
    """An open, migrated history at ``path`` (created only with ``create``).

    Raises :class:`HistoryError` with a sentence for a file that is not a
    history, and for a missing one unless ``create``.
    """
    path = Path(path)
    _check_file(path)
    if not path.exists() and not create:
        raise HistoryError(
            f"there is no history at {path} yet; record runs into it with 'adcompare run' "
            "(or bench, sparse, memory, targets) or 'adcompare history import RESULTS.json'"
        )
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = sqlite3.connect(path, timeout=WAIT, isolation_level=None)
    except sqlite3.Error as error:
        raise HistoryError(f"cannot open the history {path}: {error}") from None
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        _migrate(connection, path)
        yield connection
    except sqlite3.DatabaseError as error:
        raise HistoryError(f"{path} cannot be read as a history: {error}") from None
    finally:
        connection.close()


def record_runs(path: str | os.PathLike, runs: list[Run], recorded: str) -> list[int | None]:
    """Record ``runs`` into the history at ``path`` in one transaction (creating the file);
    returns each run's id, ``None`` for a run recorded before.

    >>> import tempfile, pathlib
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "history.sqlite"
    >>> cell = {"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok",
    ...         "time": {"median": 2e-5, "samples": [2e-5, 3e-5]}}
    >>> record_runs(db, [Run("bench", [cell])], "2025-01-01T00:00:00+00:00")
    [1]
    >>> record_runs(db, [Run("bench", [cell])], "2025-01-02T00:00:00+00:00")
    [None]
    """
    with connect(path, create=True) as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            ids = [_insert(connection, run, recorded) for run in runs]
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    return ids


def _insert(connection: sqlite3.Connection, run: Run, recorded: str) -> int | None:
    fingerprint = run.fingerprint()
    if connection.execute("SELECT 1 FROM runs WHERE fingerprint = ?", (fingerprint,)).fetchone():
        return None
    environment = json.dumps(run.environment, sort_keys=True, default=str)
    versions = json.dumps(run.versions, sort_keys=True)
    run_id = connection.execute(
        "INSERT INTO runs (recorded, started, command, source, machine, machine_key, "
        "environment, version, git_commit, versions, fingerprint) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            recorded,
            run.started,
            run.command,
            run.source,
            run.machine,
            machine_key(run.environment),
            environment,
            run.versions.get("adcompare"),
            run.commit,
            versions,
            fingerprint,
        ),
    ).lastrowid
    rows = {}
    for cell in run.cells:
        timing = cell.get("time") if isinstance(cell.get("time"), dict) else {}
        samples = timing.get("samples")
        # A later cell with the same identity replaced an earlier one, as in a results file.
        rows[(cell["problem"], cell["mode"], size_text(cell["size"]))] = (
            cell["status"],
            timing.get("median"),
            json.dumps(samples) if samples else None,
            json.dumps(_stored_cell(cell), sort_keys=True, default=str),
        )
    connection.executemany(
        "INSERT INTO cells (run, problem, mode, size, status, median, samples, cell) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(run_id, *key, *values) for key, values in rows.items()],
    )
    return run_id


_RUN_COLUMNS = (
    "id",
    "recorded",
    "started",
    "command",
    "source",
    "machine",
    "machine_key",
    "version",
    "git_commit",
    "versions",
)


def list_runs(path: str | os.PathLike) -> list[dict]:
    """Every run in the history, oldest first, each with its number of cells and of
    measured cells (``cells``, ``measured``)."""
    with connect(path) as connection:
        rows = connection.execute(
            f"SELECT {', '.join('r.' + c for c in _RUN_COLUMNS)}, count(c.run), "
            "sum(c.status = 'ok') FROM runs r LEFT JOIN cells c ON c.run = r.id "
            "GROUP BY r.id ORDER BY r.id"
        ).fetchall()
    runs = []
    for row in rows:
        run = dict(zip(_RUN_COLUMNS, row[: len(_RUN_COLUMNS)], strict=True))
        run["versions"] = json.loads(run["versions"])
        run["cells"], run["measured"] = row[-2], row[-1] or 0
        runs.append(run)
    return runs


def run_cells(path: str | os.PathLike, run_id: int) -> list[dict]:
    """The cells of run ``run_id`` as the harness writes them, samples included."""
    with connect(path) as connection:
        rows = connection.execute(
            "SELECT problem, mode, size, samples, cell FROM cells WHERE run = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
    cells = []
    for problem, mode, size, samples, stored in rows:
        cell = {"problem": problem, "mode": mode, "size": json.loads(size), **json.loads(stored)}
        if samples is not None:
            cell.setdefault("time", {})["samples"] = json.loads(samples)
        cells.append(cell)
    return cells


def _find(runs: list[dict], which: str, path) -> dict:
    if which == "last" and runs:
        return runs[-1]
    if which.isdigit():
        found = [run for run in runs if run["id"] == int(which)]
    else:
        found = [run for run in runs if (run["git_commit"] or "").startswith(which.lower())]
    if not found:
        raise HistoryError(
            f"no run numbered or committed as {which!r} in {path}; list the runs with "
            "'adcompare history', and name one by its number, its commit's first "
            "characters, or 'last'"
        )
    return found[-1]


def _keys(path, run: dict) -> set:
    with connect(path) as connection:
        rows = connection.execute(
            "SELECT problem, mode, size FROM cells WHERE run = ?", (run["id"],)
        ).fetchall()
    return set(rows)


def choose_runs(path: str | os.PathLike, first: str | None, second: str | None) -> tuple:
    """The runs to compare, ``(before, after)``: named by number, by commit (its newest
    run) or ``last``; with neither named, the last run and the newest earlier one that
    measured a cell in common with it (on the same machine if there is one).

    Raises :class:`HistoryError` with a sentence when no such run exists.
    """
    runs = list_runs(path)
    if first is not None and second is not None:
        return _find(runs, first, path), _find(runs, second, path)
    after = _find(runs, second or first or "last", path) if runs else None
    earlier = [run for run in runs if after and run["id"] < after["id"]]
    if after is not None:
        mine = _keys(path, after)
        shared = [run for run in earlier if _keys(path, run) & mine]
        same = [run for run in shared if run["machine_key"] == after["machine_key"]]
        if same or shared:
            return (same or shared)[-1], after
    raise HistoryError(
        f"{path} has no two runs with a cell in common to compare; record another run of "
        "the same sweep first"
    )
