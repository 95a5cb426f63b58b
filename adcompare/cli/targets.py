"""``adcompare targets``: the performance targets, measured side by side in one run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.peers import available_peer_modes
from adcompare.bench.targets import SMALL, Settings, TargetSizes, measure_targets
from adcompare.bench.targets_report import render_markdown, write_targets

EXAMPLES = """\
examples:
  adcompare targets                    # a few minutes: reports/targets/targets.md and .json
  adcompare targets --small            # tiny sizes, seconds: does every entry run and agree?
  adcompare targets --out mine --repeats 11
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
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("reports") / "targets",
        help="the folder for targets.md and targets.json (default reports/targets)",
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
    _, note = available_peer_modes()
    if note:
        print(note, file=sys.stderr)
    result = measure_targets(
        SMALL if args.small else TargetSizes(),
        Settings(repeats=args.repeats),
        progress=lambda message: print(message, file=sys.stderr),
    )
    markdown, data = write_targets(result, args.out)
    print(render_markdown(result))
    print(f"written: {markdown}, {data}", file=sys.stderr)
    return 0


__all__ = ["add_parser", "run"]
