"""``adcompare bench``: measure a sweep into a results file."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

from adcompare.bench.harness.cluster import ClusterError, ClusterSpec, connect
from adcompare.bench.harness.modes import MODE_GROUPS, MODES
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, ResultsError, open_for_writing
from adcompare.bench.harness.sweep import PRESETS, plan, preset, run_sweep
from adcompare.bench.peers import FAILED_PEERS, PEER_MODES, available_peer_modes
from adcompare.bench.problems import PROBLEMS, ProblemError, available_problems, default_problems
from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import LATEST, OutputPathError, check_not_reference
from adcompare.cli.report import make_report
from adcompare.cli.userfunction import user_problem
from adcompare.durations import format_duration

#: Where ``bench`` writes by default: git-ignored, rewritten by each run.
DEFAULT_OUT = LATEST / "bench" / "results.json"

EXAMPLES = """\
examples:
  adcompare bench --function mymodel.py:f      # your own f(x): cost against n, crossover,
                                               # report.md in reports/latest/f/
  adcompare bench --function mymodel.py:f --inputs mymodel.py:inputs --sizes 16 64 256
  adcompare bench --list                       # every problem (entry points too) and peer
  adcompare bench --quick                      # every problem and mode, about a minute,
                                               # into reports/latest/bench/results.json
  adcompare bench --problems rosenbrock mlp --modes forward reverse --sizes 8 64 512
  adcompare bench --modes reverse hvp --sizes 16 256  # one HVP per composition vs the gradient
  adcompare bench --problems adbench-gmm-1k adbench-lstm --modes f reverse forward
  adcompare bench --problems rosenbrock --modes f reverse forward --peers  # beside JAX, torch
  adcompare bench --full --out full.json       # up to n = 2^20 (hours); Ctrl-C keeps what
  adcompare bench --full --out full.json --resume   # was measured, --resume continues
  adcompare bench --quick --workers 2          # on a local Dask cluster of 2 processes
  adcompare bench --full --out full.json --scheduler tcp://10.0.0.5:8786 # a running cluster
  adcompare report full.json                   # then draw the plots and write the report
  adcompare bench --problems adbench-gmm-1k --out reports/real/results.json --resume \
      --refresh-reference                      # a committed reference only when asked
"""


def _words(values: list[str]) -> list[str]:
    """Accept both ``a b`` and ``a,b``."""
    return [w for v in values for w in v.split(",") if w]


def _sizes(values: list[str]) -> list[int]:
    try:
        sizes = [int(w) for w in _words(values)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be whole numbers, like --sizes 8 64 512; got {' '.join(values)}"
        ) from None
    return sizes


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    """The options ``bench`` and ``run`` share: progress, BLAS threads, peers, cluster."""
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal)"
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also measure the installed peers' modes (JAX, PyTorch, HIPS autograd) on the "
        'same problems; install them with pip install -e ".[peers]"',
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        metavar="N",
        help="threads for numpy's BLAS while measuring (default 1; 0 leaves numpy's setting)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="measure on a local Dask cluster of N single-threaded worker processes, one "
        'size of a problem per task (pip install -e ".[cluster]")',
    )
    where.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="measure on the running Dask cluster whose scheduler is at this address",
    )
    parser.add_argument(
        "--per-host",
        type=int,
        default=1,
        metavar="N",
        help="on a cluster, how many workers of one machine measure at a time (default 1: "
        "they share its cores; 0: all at once, and the report flags cells that overlapped)",
    )


def cluster_spec(args) -> ClusterSpec | None:
    """The cluster ``--workers`` or ``--scheduler`` asks for (``None``: measure here); a
    :class:`~adcompare.bench.harness.cluster.ClusterError` saying how to install Dask
    when it is missing.

    >>> cluster_spec(argparse.Namespace(workers=None, scheduler=None)) is None
    True
    """
    if args.workers is None and args.scheduler is None:
        return None
    return ClusterSpec(workers=args.workers, scheduler=args.scheduler)


def add_parser(subparsers) -> None:
    """Register ``adcompare bench``."""
    parser = subparsers.add_parser(
        "bench",
        help="measure forward, reverse and the other modes over growing sizes",
        description="Measure each problem at geometric sizes by each mode: time (median, "
        "IQR, min), op counts and element work, peak memory, and a check of the derivative. "
        "Cells are written to the results file as they finish, so Ctrl-C keeps what was "
        "measured and --resume continues.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_what_options(parser)
    _add_effort_options(parser)
    _add_output_options(parser)
    parser.add_argument(
        "--no-memory", action="store_true", help="skip the tracemalloc run of each cell"
    )
    add_sweep_options(parser)
    add_history_options(parser)
    parser.set_defaults(run=run)


def _add_what_options(parser) -> None:
    """What to measure: a preset, the problems, the modes, the sizes."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--quick",
        dest="preset",
        action="store_const",
        const="quick",
        help="n and m from 4 to 1024 (HVPs and Hessians at n = 4, 64, 1024), the ADBench and "
        "GradBench instances but LSTM, a 1 s budget per cell: about a minute (the default)",
    )
    which.add_argument(
        "--full",
        dest="preset",
        action="store_const",
        const="full",
        help="n and m up to 2^20 (reverse mode reaches 10^6), HVPs and Hessians at every size, "
        "every problem including LSTM, a 30 s budget per cell: hours",
    )
    parser.add_argument(
        "--function",
        metavar="SPEC",
        help="measure your own function f(x) of a flat vector: mymodel.py:f (a file) or "
        "mypkg.mymodel:f (a module); into reports/latest/<f>/ with its figures and report.md",
    )
    parser.add_argument(
        "--inputs",
        metavar="SPEC",
        help="the function building --function's inputs at size n, inputs(n): an array for "
        "f(x), or a tuple of arguments (arrays, dicts, lists) for f(*args); default a "
        "seeded standard-normal vector of n",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the problems and peer modes, then stop"
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        metavar="NAME",
        help=f"problems to measure: {', '.join(PROBLEMS)} (default all but the opt-in "
        f"{', '.join(sorted(set(PROBLEMS) - set(default_problems())))})",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        metavar="MODE",
        help=f"modes to measure (default all): {', '.join(MODES)}; second-order modes are "
        "hvp:C (one Hessian-vector product) and hessian:C (the full Hessian) for each "
        "composition C, outer mode first, measured on the many-inputs problems; the groups "
        f"{', '.join(MODE_GROUPS)} name several at once",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        metavar="N",
        help="sizes of the swept count (n, or m for one-input problems), and of both n and m "
        "for Jacobian problems, e.g. --sizes 8 64 512; second-order modes use them all",
    )


def _add_effort_options(parser) -> None:
    """How hard to measure each cell."""
    parser.add_argument("--repeats", type=int, metavar="N", help="timed repeats per cell")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="time allowed per cell; a mode that exceeds it, or is predicted to, skips larger "
        "sizes (quick 1, full 30)",
    )


def _add_output_options(parser) -> None:
    """Where the cells go, and what happens to a results file already there."""
    parser.add_argument(
        "--out",
        type=Path,
        help=f"the results file (default {DEFAULT_OUT}, git-ignored and rewritten by each "
        "run; another file is kept unless --resume or --overwrite is given)",
    )
    parser.add_argument(
        "--refresh-reference",
        action="store_true",
        help="let --out name a results file in a committed reference folder (reports/real/, "
        "reports/peers/, ...), which is refused otherwise",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the results in --out: cells already measured or skipped are kept",
    )
    again.add_argument("--overwrite", action="store_true", help="start afresh even if --out exists")


def with_peers(modes: list[str] | None, peers: bool) -> list[str] | None:
    """``modes`` (``None``: every adcompare mode) plus, if ``peers``, the installed
    peers' modes; prints one line naming the missing peer libraries.

    >>> with_peers(["reverse"], False)
    ['reverse']
    """
    if not peers:
        return modes
    names, note = available_peer_modes()
    if note:
        print(note, file=sys.stderr)
    return [*(modes or MODES), *names]


def open_results(
    path: Path, *, resume: bool, overwrite: bool, wait: float | None = None
) -> Results:
    """The results to measure into, holding the file's writer lock, or a
    :class:`ResultsError` saying what to do (see
    :func:`~adcompare.bench.harness.results.open_for_writing`); prints a warning for
    each cell left out because it does not fit the schema.
    """
    results = open_for_writing(path, resume=resume, overwrite=overwrite, wait=wait)
    for sentence in results.rejected:
        print(f"warning: {sentence}", file=sys.stderr)
    return results


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is so it unwinds like Ctrl-C (temporary files go)."""


@contextlib.contextmanager
def terminate_like_interrupt():
    """Inside the block, SIGTERM raises :class:`Terminated` (in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sweep_into(results: Results, config, *, quiet: bool, cluster: ClusterSpec | None = None) -> int:
    """Run ``config`` into ``results`` (on ``cluster``'s workers, when given); returns the
    exit status (130 when interrupted)."""
    cells = plan(config)
    groups = Counter(problem.name for problem, _, _ in cells)
    progress = Progress(len(cells), quiet=quiet, groups=groups)
    start = time.perf_counter()
    try:
        # numpy's warnings (a division by zero in a user's function) would print lines of
        # their own; every cell's derivative is checked for NaN and inf instead.
        with (
            terminate_like_interrupt(),
            np.errstate(all="ignore"),
            connect(cluster) as client,
        ):
            run_sweep(config, results, progress=progress, client=client)
    except KeyboardInterrupt as interruption:
        measured = sum(c["status"] == "ok" for c in results.cells)
        print(
            f"\n{'terminated' if isinstance(interruption, Terminated) else 'interrupted'}: "
            f"the {measured} cells measured so far are in {results.path}; "
            "run the same command with --resume to continue",
            file=sys.stderr,
        )
        return 143 if isinstance(interruption, Terminated) else 130
    finally:
        results.close()
    statuses = [c["status"] for c in results.cells]
    print(
        f"{statuses.count('ok')} cells measured, {statuses.count('skipped')} skipped, "
        f"{statuses.count('error')} failed in {format_duration(time.perf_counter() - start)}: "
        f"{results.path}",
        file=sys.stderr,
    )
    for cell in results.cells:
        if cell["status"] == "error":
            error = cell["error"]
            print(
                f"  failed: {cell['problem']} {cell['mode']} {cell['size']}: "
                f"{error['type']}: {error['message']}",
                file=sys.stderr,
            )
        elif cell["status"] == "ok" and cell.get("check") and not cell["check"]["ok"]:
            print(
                f"  wrong derivative: {cell['problem']} {cell['mode']} {cell['size']}: "
                f"error {cell['check']['error']:.2e}",
                file=sys.stderr,
            )
    return 0


def _config(args, functions: list):
    """The sweep ``args`` ask for; ``functions``: the user's problems, measured first."""
    sizes = _sizes(args.sizes) if args.sizes else None
    named = _words(args.problems) if args.problems else []
    return preset(
        args.preset or "quick",
        problems=[*functions, *named] or None,
        modes=with_peers(_words(args.modes) if args.modes else None, args.peers),
        sizes=sizes,
        grid=sizes,
        second_order_sizes=sizes,
        repeats=args.repeats,
        budget=args.budget,
        memory=False if args.no_memory else None,
        blas_threads=args.blas_threads,
        per_host=args.per_host,
    )


def _results_path(args, functions: list) -> Path:
    """``--out``, else the git-ignored default (a user's function: its own folder)."""
    if args.refresh_reference and args.out is None:
        raise OutputPathError(
            "--refresh-reference rewrites the reference --out names; add --out, e.g. "
            "--out reports/real/results.json"
        )
    default = LATEST / functions[0].name / "results.json" if functions else DEFAULT_OUT
    out = check_not_reference(args.out or default, refresh=args.refresh_reference)
    if args.out is None:  # a folder given with --out is checked where the results are opened
        out.parent.mkdir(parents=True, exist_ok=True)
    return out


def run(args) -> int:
    """Carry out ``adcompare bench``."""
    if args.list:
        print("\n".join(listing()))
        return 0
    try:
        cluster = cluster_spec(args)
        functions = [user_problem(args.function, args.inputs)] if args.function else []
        config = _config(args, functions)
        out = _results_path(args, functions)
        history = history_path(args)
        # The default file is rewritten on purpose, as ``run`` rewrites its folder.
        overwrite = args.overwrite or (args.out is None and not args.resume)
        results = open_results(out, resume=args.resume, overwrite=overwrite)
    except (ValueError, argparse.ArgumentTypeError) as error:
        print(f"adcompare bench: {error}", file=sys.stderr)
        return 2
    try:
        status = sweep_into(results, config, quiet=args.quiet, cluster=cluster)
    except (ResultsError, ClusterError) as error:
        print(f"adcompare bench: {error}", file=sys.stderr)
        return 2
    except ProblemError as error:
        kept = sum(c["status"] == "ok" for c in results.cells)
        cells = "1 cell measured before is" if kept == 1 else f"{kept} cells measured before are"
        print(f"adcompare bench: {error} ({cells} kept in {out})", file=sys.stderr)
        return 2
    if status == 0:
        record(history, out, "bench")
    if status == 0 and functions:
        report = make_report([out], out.parent)
        print("\n".join(conclusions(report)))
        print(f"\nreport: {report}")
    elif status == 0:
        print(f"next: adcompare report {out}", file=sys.stderr)
    return status


def conclusions(report: Path) -> list[str]:
    """The lines of ``report``'s Conclusions section, without Markdown's bold."""
    lines = report.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Conclusions") + 1 if "## Conclusions" in lines else len(lines)
    found = []
    for line in lines[start:]:
        if line.startswith("## "):
            break
        if line.strip():
            found.append(line.replace("**", ""))
    return found


def listing() -> list[str]:
    """What ``bench --list`` prints: every problem (built-in and entry points) and peer mode.

    >>> any(line.split()[0] == "rosenbrock" for line in listing()[1:])
    True
    """
    lines = ["problems (--problems NAME; your own: --function mymodel.py:f):"]
    lines += [f"  {name:<22} {text}" for name, text in available_problems().items()]
    names, note = available_peer_modes()
    lines.append("peer modes (--peers, or --modes NAME):")
    lines += [f"  {name:<22} {PEER_MODES[name].library}" for name in names] or ["  none installed"]
    lines += [f"  {name:<22} {why}" for name, why in FAILED_PEERS.items()]
    if note:
        lines.append(f"  ({note})")
    return lines


__all__ = [
    "PRESETS",
    "Terminated",
    "add_parser",
    "add_sweep_options",
    "cluster_spec",
    "conclusions",
    "listing",
    "open_results",
    "run",
    "sweep_into",
    "terminate_like_interrupt",
    "with_peers",
]
