"""``adcompare ode``: odeint's tape, forward sensitivities and adjoint side by side, into
``reports/latest/ode/`` (``ode.json``, ``ode.png``, ``ode.md``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.cli.outfolder import LATEST, OutputPathError, check_output_folder, output_folder

EXAMPLES = """\
examples:
  adcompare ode                  # both problems at every size: reports/latest/ode/ode.md
  adcompare ode --quick          # the two smallest sizes of each, one repeat
  adcompare ode --report-only    # redraw from reports/latest/ode/ode.json
"""


def add_parser(subparsers) -> None:
    """Register ``adcompare ode``."""
    parser = subparsers.add_parser(
        "ode",
        help="odeint's derivatives by the tape, forward sensitivities and the adjoint",
        description="Differentiate two ODE problems (a loss over many weights, a trajectory "
        "over four rates) by odeint's three methods, measuring time, element work and the "
        "error against a tight-tolerance reference; write ode.json, ode.png and ode.md.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="two small sizes a problem")
    parser.add_argument(
        "--out",
        type=Path,
        help=f"the folder (default {LATEST / 'ode'}, git-ignored, rewritten by each run)",
    )
    parser.add_argument("--report-only", action="store_true", help="redraw from ode.json")
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare ode``."""
    from adcompare.bench.harness.results import ResultsError
    from adcompare.bench.ode.study import run_ode_study, write_ode_report

    try:
        out = check_output_folder(output_folder(args.out, "ode"))
    except OutputPathError as error:
        print(f"adcompare ode: {error}", file=sys.stderr)
        return 2
    results = out / "ode.json"
    if args.report_only and not results.exists():
        print(f"adcompare ode: no {results}; run without --report-only", file=sys.stderr)
        return 2
    if not args.report_only:
        run_ode_study(results, quick=args.quick, log=lambda line: print(line, file=sys.stderr))
    try:
        page = write_ode_report(results, out)
    except ResultsError as error:
        print(
            f"adcompare ode: {error}; run without --report-only to measure again", file=sys.stderr
        )
        return 2
    print(f"wrote {page}", file=sys.stderr)
    return 0


__all__ = ["add_parser", "run"]
