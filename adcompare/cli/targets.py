"""``adcompare targets``: the performance targets, measured side by side in one run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.peers import available_peer_modes
from adcompare.bench.targets.measure import SMALL, Settings, TargetSizes, measure_targets
from adcompare.bench.targets.report import render_markdown, write_targets
from adcompare.cli.outfolder import OutputPathError, check_output_folder

#: Where ``targets`` writes by default: git-ignored, rewritten by each run.
LATEST = Path("reports") / "latest" / "targets"
#: The committed reference table.
REFERENCE = Path("reports") / "targets"

EXAMPLES = """\
examples:
  adcompare targets                    # a few minutes: reports/latest/targets/targets.md
  adcompare targets --small            # tiny sizes, seconds: does every entry run and agree?
  adcompare targets --out mine --repeats 11
  adcompare targets --refresh-reference   # rewrite the committed table in reports/targets/
"""


def add_parser(subparsers) -> None:
    """Register ``adcompare targets``."""
    parser = subparsers.add_parser(
        "targets",
        help="measure the performance targets beside PyTorch, JAX and autograd (minutes)",
        description="Measure the performance targets (per-op overhead of a 200-op chain, "
        "Rosenbrock gradients in reverse and forward mode, an MLP gradient, "
        "jacobian(mode='auto')) for adcompare, hand-written numpy and the installed peers "
        "in one run, one BLAS thread. Every result is checked against adcompare's "
        "derivative before it is timed. Writes "
        "targets.md and targets.json and prints the table.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        default=LATEST,
        help=f"the folder for targets.md and targets.json (default {LATEST}, git-ignored)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"write into the committed reference folder {REFERENCE} (refused with --small)",
    )
    parser.add_argument(
        "--repeats", type=int, default=Settings.repeats, help="timed repeats per entry (default 7)"
    )
    parser.add_argument(
        "--small", action="store_true", help="tiny sizes: a check that everything runs, seconds"
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare targets``."""
    if args.repeats < 1:
        print(
            f"adcompare targets: --repeats must be at least 1, not {args.repeats}", file=sys.stderr
        )
        return 2
    if args.refresh_reference and args.small:
        print(
            "adcompare targets: --small measures tiny sizes, not a reference; "
            "drop --small to refresh the reference",
            file=sys.stderr,
        )
        return 2
    out = REFERENCE if args.refresh_reference else args.out
    try:
        check_output_folder(out)
    except OutputPathError as error:
        print(f"adcompare targets: {error}", file=sys.stderr)
        return 2
    _, note = available_peer_modes()
    if note:
        print(note, file=sys.stderr)
    result = measure_targets(
        SMALL if args.small else TargetSizes(),
        Settings(repeats=args.repeats),
        progress=lambda message: print(message, file=sys.stderr),
    )
    markdown, data = write_targets(result, out)
    print(render_markdown(result))
    print(f"written: {markdown}, {data}", file=sys.stderr)
    return 0


__all__ = ["LATEST", "REFERENCE", "add_parser", "run"]
