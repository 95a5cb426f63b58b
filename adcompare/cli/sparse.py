"""``adcompare sparse``: dense against sparse Jacobians and Hessians, into
``reports/latest/sparse/``; ``--refresh-reference`` rewrites the committed ``reports/sparse/``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import LATEST, OutputPathError, output_folder
from adcompare.cli.userfunction import user_problem

#: The committed reference run.
REFERENCE = Path("reports") / "sparse"

EXAMPLES = """\
examples:
  adcompare sparse                           # every problem: reports/latest/sparse/sparse.md
  adcompare sparse --problems arrowhead bratu-1d --quick
  adcompare sparse --report-only             # redraw from reports/latest/sparse/sparse.json
  adcompare sparse --no-peers                # adcompare only, even where asdex is installed
  adcompare sparse --refresh-reference       # rewrite the committed reports/sparse/
  adcompare sparse --function mymodel.py:f --sizes 16 64   # your own function's Jacobian
"""

#: The sizes of a user's ``--function`` (``--quick``: the first two).
FUNCTION_SIZES = (16, 64, 256)
#: The sizes ``--quick`` measures.
QUICK_SIZES = {
    "bratu-1d": (16, 64),
    "laplacian-2d": (4, 8),
    "arrowhead": (16, 64),
    "rosenbrock-hessian": (16, 64),
    "bundle-adjustment": ("test", 10),
}


def add_parser(subparsers) -> None:
    """Register ``adcompare sparse``."""
    parser = subparsers.add_parser(
        "sparse",
        help="measure dense against sparse forward, reverse and bidirectional Jacobians",
        description="Detect each problem's sparsity pattern, colour it, and time the Jacobian "
        "(or Hessian) by dense jacfwd/jacrev and by one pass per colour, beside asdex where "
        "it is installed; write sparse.json, three figures and sparse.md.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--problems", nargs="+", metavar="NAME", help="the problems to measure")
    parser.add_argument(
        "--function",
        metavar="SPEC",
        help="your own function f(x) of a flat vector: mymodel.py:f or mypkg.mymodel:f; its "
        "Jacobian's pattern (its Hessian's for a scalar f), colours and passes",
    )
    parser.add_argument(
        "--inputs",
        metavar="SPEC",
        help="the function building --function's inputs at size n, inputs(n) (default a "
        "seeded standard-normal vector of n)",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        type=int,
        metavar="N",
        help=f"the sizes n of --function (default {' '.join(map(str, FUNCTION_SIZES))}; "
        f"with --quick {' '.join(map(str, FUNCTION_SIZES[:2]))})",
    )
    parser.add_argument("--quick", action="store_true", help="two small sizes per problem")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        help=f"the folder (default {LATEST / 'sparse'}, git-ignored, rewritten by each run)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"write into the committed reference folder {REFERENCE} (every problem at its "
        "default sizes: refused with --quick or --problems)",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="redraw from the folder's sparse.json"
    )
    parser.add_argument(
        "--no-peers", action="store_true", help="leave out asdex even where it is installed"
    )
    add_history_options(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare sparse``."""
    from adcompare.bench.sparse.problems import SPARSE_PROBLEMS
    from adcompare.bench.sparse.report import write_sparse_report

    try:
        out = output_folder(args.out, "sparse", refresh=args.refresh_reference)
        if args.refresh_reference and not args.report_only:
            _check_reference_run(args)
        functions = [user_problem(args.function, args.inputs)] if args.function else []
        history = None if args.report_only else history_path(args)
    except ValueError as error:
        print(f"adcompare sparse: {error}", file=sys.stderr)
        return 2
    results = out / "sparse.json"
    unknown = [p for p in args.problems or [] if p not in SPARSE_PROBLEMS]
    if unknown:
        known = ", ".join(SPARSE_PROBLEMS)
        print(f"adcompare sparse: unknown problem {unknown[0]!r}; use {known}", file=sys.stderr)
        return 2
    if args.report_only:
        if not results.exists():
            print(f"adcompare sparse: no {results}; run without --report-only", file=sys.stderr)
            return 2
    elif _measure(args, functions, results):
        return 2
    record(history, results, "sparse")
    try:
        report = write_sparse_report(results, out)
    except (ValueError, KeyError, TypeError, IndexError) as error:
        if not args.report_only:
            raise  # a file this run wrote: an internal error
        print(
            f"adcompare sparse: {results} is not a sparse.json this version writes "
            f"({type(error).__name__}: {error}); run without --report-only to measure again",
            file=sys.stderr,
        )
        return 2
    print(f"wrote {report}", file=sys.stderr)
    return 0


def _check_reference_run(args) -> None:
    """Refuse to refresh the reference with less than it holds."""
    if args.quick or args.problems or args.function:
        raise OutputPathError(
            f"the reference {REFERENCE} holds every built-in problem at its default sizes; "
            "drop --quick, --problems and --function to refresh it"
        )


def _measure(args, functions: list, results: Path) -> bool:
    """Run the sweep into ``results``; ``True`` when a user's function stopped it (said)."""
    from adcompare.bench.problems import ProblemError
    from adcompare.bench.sparse.sweep import run_sparse_sweep

    sizes = dict(QUICK_SIZES) if args.quick else {}
    for problem in functions:
        sizes[problem.name] = tuple(args.sizes or FUNCTION_SIZES[: 2 if args.quick else 3])
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        with np.errstate(all="ignore"):
            run_sparse_sweep(
                results,
                problems=[*functions, *(args.problems or [])] or None,
                sizes=sizes or None,
                log=lambda line: print(line, file=sys.stderr),
                peers=not args.no_peers,
            )
    except ProblemError as error:
        kept = len(json.loads(results.read_text())["cells"]) if results.exists() else 0
        cells = "1 cell measured before is" if kept == 1 else f"{kept} cells measured before are"
        print(
            f"adcompare sparse: {error} ({cells} kept in {results})",
            file=sys.stderr,
        )
        return True
    return False


__all__ = ["add_parser", "run"]
