"""``adcompare sparse``: dense against sparse Jacobians and Hessians, into
``reports/latest/sparse/``; ``--refresh-reference`` rewrites the committed ``reports/sparse/``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.cli.outfolder import LATEST, OutputPathError, output_folder

#: The committed reference run.
REFERENCE = Path("reports") / "sparse"

EXAMPLES = """\
examples:
  adcompare sparse                           # every problem: reports/latest/sparse/sparse.md
  adcompare sparse --problems arrowhead bratu-1d --quick
  adcompare sparse --report-only             # redraw from reports/latest/sparse/sparse.json
  adcompare sparse --no-peers                # adcompare only, even where asdex is installed
  adcompare sparse --refresh-reference       # rewrite the committed reports/sparse/
"""

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
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare sparse``."""
    from adcompare.bench.sparse.problems import SPARSE_PROBLEMS
    from adcompare.bench.sparse.report import write_sparse_report
    from adcompare.bench.sparse.sweep import run_sparse_sweep

    try:
        out = output_folder(args.out, "sparse", refresh=args.refresh_reference)
    except OutputPathError as error:
        print(f"adcompare sparse: {error}", file=sys.stderr)
        return 2
    if args.refresh_reference and not args.report_only and (args.quick or args.problems):
        print(
            f"adcompare sparse: the reference {REFERENCE} holds every problem at its default "
            "sizes; drop --quick and --problems to refresh it",
            file=sys.stderr,
        )
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
    else:
        out.mkdir(parents=True, exist_ok=True)
        sizes = QUICK_SIZES if args.quick else None
        run_sparse_sweep(
            results,
            problems=args.problems,
            sizes=sizes,
            log=lambda line: print(line, file=sys.stderr),
            peers=not args.no_peers,
        )
    print(f"wrote {write_sparse_report(results, out)}", file=sys.stderr)
    return 0


__all__ = ["add_parser", "run"]
