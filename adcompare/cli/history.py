"""``adcompare history``: the runs kept in the history database, and two of them compared.

``run``, ``bench``, ``sparse``, ``memory`` and ``targets`` record every run
into the history (``--history PATH``; ``--no-history`` records nothing), and
``report`` records the pytest-benchmark JSON it reads. ``history compare``
exits with 1 when it flags a regression, so a script or CI job can stop on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from adcompare.bench.harness.env import describe
from adcompare.bench.harness.results import now
from adcompare.bench.history.compare import ALPHA, THRESHOLD, compare_cells
from adcompare.bench.history.imports import read_runs
from adcompare.bench.history.page import comparison_lines, run_label, write_comparison_page
from adcompare.bench.history.store import (
    HistoryError,
    choose_runs,
    connect,
    list_runs,
    record_runs,
    run_cells,
)
from adcompare.cli.outfolder import LATEST

#: The environment variable naming the history file every command records into.
VARIABLE = "ADCOMPARE_HISTORY"
#: Where the history lives when neither --history nor the variable says: git-ignored,
#: beside the results, kept from run to run (no command rewrites it).
DEFAULT = LATEST / "history.sqlite"
#: The peers whose versions a run records.
PEERS = ("jax", "torch", "autograd", "asdex")

EXAMPLES = f"""\
examples:
  adcompare run                          # each run is recorded into {DEFAULT}
  adcompare history                      # the runs recorded
  adcompare history compare              # the last two runs: regressions flagged (exit 1)
  adcompare history compare 3 7          # run 3 against run 7
  adcompare history compare 8869afe last # the newest run at a commit against the last
  adcompare history import reports/quick/results.json   # an earlier results file
"""


def default_history() -> Path:
    """The history file: ``$ADCOMPARE_HISTORY``, else ``reports/latest/history.sqlite``."""
    return Path(os.environ.get(VARIABLE) or DEFAULT)


def add_history_options(parser: argparse.ArgumentParser) -> None:
    """``--history PATH`` and ``--no-history``, for every command that measures."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help=f"record this run into the history database PATH (default ${VARIABLE}, else "
        f"{DEFAULT}); compare runs with 'adcompare history compare'",
    )
    where.add_argument("--no-history", action="store_true", help="record nothing in the history")


def history_path(args) -> Path | None:
    """The history ``args`` record into (``None``: ``--no-history``), checked to open, so a
    bad path is refused before anything is measured."""
    if getattr(args, "no_history", False):
        return None
    path = args.history or default_history()
    with connect(path, create=True):
        pass
    return path


def _commit() -> str | None:
    """adcompare's git commit where it runs from a checkout (``+dirty`` with edits), else
    ``None``."""
    source = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if commit.returncode:
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _peer_versions() -> dict:
    found = {}
    for name in PEERS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def record(history: Path | None, results: Path, command: str) -> None:
    """Record the run just written to ``results`` into ``history`` (nothing for ``None``),
    with this checkout's commit and the installed peers' versions; says so on stderr."""
    if history is None:
        return
    runs, _ = read_runs(results, command)
    commit, peers = _commit(), _peer_versions()
    for run in runs:
        run.environment = run.environment or describe()
        run.versions = {**run.environment.get("versions", {}), **peers, **run.versions}
        run.commit = commit
    try:
        ids = [i for i in record_runs(history, runs, now()) if i is not None]
    except HistoryError as error:
        print(f"adcompare {command}: not recorded in the history: {error}", file=sys.stderr)
        return
    said = f"run {', '.join(map(str, ids))}" if ids else "nothing new (recorded before)"
    print(f"history: recorded {said} into {history}", file=sys.stderr)


def add_parser(subparsers) -> None:
    """Register ``adcompare history``."""
    parser = subparsers.add_parser(
        "history",
        help="the runs kept in the history database; compare two, regressions flagged",
        description="List the runs recorded in the history database (SQLite: every cell's "
        "samples, keyed by problem, mode, size, machine, commit, versions and time), or "
        "compare two: per cell the ratio of medians and a Mann-Whitney U test on the "
        "samples, regressions and improvements beyond the threshold flagged, and the "
        "crossovers that moved. Runs from different machines are compared only by each "
        "cell's ratio to plain f within its run. Exit status: 0, or 1 when compare flags a "
        "regression, 2 for bad input.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "action",
        nargs="?",
        choices=("list", "compare", "import"),
        default="list",
        help="list (the default), compare [BEFORE AFTER], or import RESULTS...",
    )
    parser.add_argument(
        "what",
        nargs="*",
        metavar="RUN",
        help="for compare: two runs, each a number, a commit's first characters, or 'last' "
        "(none: the last two); for import: results files",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help=f"the history database (default ${VARIABLE}, else {DEFAULT})",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help=f"the factor a median must move by to be flagged (default {THRESHOLD})",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=ALPHA,
        help=f"the significance level of the Mann-Whitney U test (default {ALPHA})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"compare's HTML page (default {LATEST / 'history' / 'compare.html'})",
    )
    parser.set_defaults(run=run)


def _listing(path: Path) -> list[str]:
    runs = list_runs(path)
    if not runs:
        return [f"no runs in {path} yet"]
    lines = [f"{len(runs)} runs in {path}:"]
    for run in runs:
        lines.append(
            f"  {run_label(run)}: {run['measured']} of {run['cells']} cells measured"
            + (f", from {run['source']}" if run["source"] else "")
        )
    return lines


def _compare(args, path: Path) -> int:
    if len(args.what) not in (0, 2):
        raise HistoryError("compare takes two runs, or none for the last two")
    if args.threshold <= 1 or not 0 < args.alpha < 1:
        raise HistoryError("--threshold must exceed 1 and --alpha lie between 0 and 1")
    before, after = choose_runs(path, *(args.what or [None, None]))
    comparison = compare_cells(
        run_cells(path, before["id"]),
        run_cells(path, after["id"]),
        same_machine=before["machine_key"] == after["machine_key"] != "unknown",
        threshold=args.threshold,
        alpha=args.alpha,
    )
    print("\n".join(comparison_lines(comparison, before, after)))
    out = args.out or LATEST / "history" / "compare.html"
    print(f"\npage: {write_comparison_page(comparison, before, after, out)}")
    return 1 if comparison.flagged("slower") else 0


def run(args) -> int:
    """Carry out ``adcompare history``."""
    path = args.history or default_history()
    try:
        if args.action == "import":
            if not args.what:
                raise HistoryError("import takes one or more results files")
            for name in args.what:
                runs, rejected = read_runs(name)
                for sentence in rejected:
                    print(f"warning: {sentence}", file=sys.stderr)
                ids = record_runs(path, runs, now())
                print(f"{name}: {sum(i is not None for i in ids)} new run(s) into {path}")
            return 0
        if args.action == "compare":
            return _compare(args, path)
        if args.what:
            raise HistoryError(
                f"list takes no runs; did you mean 'history compare {' '.join(args.what)}'?"
            )
        print("\n".join(_listing(path)))
        return 0
    except HistoryError as error:
        print(f"adcompare history: {error}", file=sys.stderr)
        return 2


__all__ = [
    "DEFAULT",
    "VARIABLE",
    "add_history_options",
    "add_parser",
    "default_history",
    "history_path",
    "record",
    "run",
]
