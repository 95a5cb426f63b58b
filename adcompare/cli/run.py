"""``adcompare run``: the quick sweep and its report, into ``reports/quick/``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.results import Results, ResultsError, load_results
from adcompare.bench.sweep import preset
from adcompare.cli.bench import add_sweep_options, sweep_into, with_peers
from adcompare.cli.report import make_report

EXAMPLES = """\
examples:
  adcompare run                        # about a minute: reports/quick/report.md and figures
  adcompare run --out reports/laptop   # keep the committed reference, compare with yours
  adcompare run --resume               # after Ctrl-C, continue where it stopped
  adcompare run --peers                # JAX, PyTorch and autograd beside adcompare's modes
"""


#: The command a new user runs first: listed first in ``adcompare --help``.
START_HERE = True


def add_parser(subparsers) -> None:
    """Register ``adcompare run``."""
    parser = subparsers.add_parser(
        "run",
        help="start here: the quick sweep and its report into reports/quick/ (about a minute)",
        description="Measure every problem by every mode with the quick preset, then write "
        "results.json, one figure per problem and report.md into the output folder. The "
        "same as 'adcompare bench --quick --out DIR/results.json' followed by "
        "'adcompare report DIR/results.json --out DIR'.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("reports") / "quick",
        help="the folder for results.json, the figures and report.md (default reports/quick)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the folder's results.json, do not restart"
    )
    parser.add_argument("--svg", action="store_true", help="write SVG figures as well as PNG")
    add_sweep_options(parser)
    parser.set_defaults(run=run)


def _conclusions(report: Path) -> list[str]:
    lines = report.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Conclusions") + 1 if "## Conclusions" in lines else len(lines)
    found = []
    for line in lines[start:]:
        if line.startswith("## "):
            break
        if line.strip():
            found.append(line.replace("**", ""))
    return found


def run(args) -> int:
    """Carry out ``adcompare run``."""
    path = args.out / "results.json"
    try:
        results = load_results(path) if args.resume and path.exists() else Results(path=path)
    except ResultsError as error:
        print(f"adcompare run: {error}", file=sys.stderr)
        return 2
    config = preset("quick", modes=with_peers(None, args.peers), blas_threads=args.blas_threads)
    status = sweep_into(results, config, quiet=args.quiet)
    if status:
        return status
    report = make_report([path], args.out, svg=args.svg)
    print("\n".join(_conclusions(report)))
    print(f"\nreport: {report}")
    return 0


__all__ = ["add_parser", "run"]
