"""``adcompare targets``: the performance targets, measured side by side in one run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.harness.results import ResultsError, open_for_writing
from adcompare.bench.history.store import HistoryError
from adcompare.bench.peers import available_peer_modes
from adcompare.bench.targets.cases import FULL, SMALL
from adcompare.bench.targets.measure import Settings, measure_targets
from adcompare.bench.targets.report import render_markdown, write_targets
from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import LATEST as LATEST_REPORTS
from adcompare.cli.outfolder import OutputPathError, check_output_folder, output_folder

#: Where ``targets`` writes by default: git-ignored, rewritten by each run.
LATEST = LATEST_REPORTS / "targets"
#: The committed reference table.
REFERENCE = Path("reports") / "targets"
#: CPU seconds a sample with ``--small``: tiny problems, a run of seconds.
SMALL_SAMPLE = 0.002

EXAMPLES = """\
examples:
  adcompare targets                    # a few minutes: reports/latest/targets/targets.md
  adcompare targets --small            # tiny sizes, seconds: does every entry run and agree?
  adcompare targets --out mine --rounds 25
  adcompare targets --refresh-reference   # rewrite the committed table in reports/targets/
"""


def add_parser(subparsers) -> None:
    """Register ``adcompare targets``."""
    parser = subparsers.add_parser(
        "targets",
        help="measure the performance targets beside PyTorch, JAX and autograd (minutes)",
        description="Measure the performance targets (per-op overhead of a 200-op chain, "
        "Rosenbrock gradients in reverse and forward mode, an MLP gradient, "
        "jacobian(mode='auto'), GMM and LSTM gradients ÷ their plain-numpy objectives) for "
        "adcompare, eager and replayed, hand-written numpy and the installed peers in one "
        "run, one BLAS thread, glibc's allocator pinned. Every result is checked against "
        "adcompare's derivative before it is timed. Each target's entries are timed in "
        "interleaved rounds, one sample of each in turn, and its ratios divide CPU-time "
        "medians of the same rounds. Writes every measured cell to results.json "
        "(the results file 'adcompare report' reads), the table read off them to "
        "targets.md and targets.json, and prints the table.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        help=f"the folder for results.json, targets.md and targets.json (default {LATEST}, "
        "git-ignored)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"write into the committed reference folder {REFERENCE} (refused with --small)",
    )
    parser.add_argument(
        "--rounds",
        "--repeats",
        dest="rounds",
        type=int,
        default=Settings.rounds,
        help=f"interleaved rounds per target, each one sample of every entry (default "
        f"{Settings.rounds}; fewer once a target's rounds pass {Settings.budget:g} s)",
    )
    parser.add_argument(
        "--small", action="store_true", help="tiny sizes: a check that everything runs, seconds"
    )
    add_history_options(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare targets``."""
    if args.rounds < 1:
        print(f"adcompare targets: --rounds must be at least 1, not {args.rounds}", file=sys.stderr)
        return 2
    if args.refresh_reference and args.small:
        print(
            "adcompare targets: --small measures tiny sizes, not a reference; "
            "drop --small to refresh the reference",
            file=sys.stderr,
        )
        return 2
    try:
        out = check_output_folder(
            output_folder(args.out, "targets", refresh=args.refresh_reference)
        )
        history = history_path(args)
    except (OutputPathError, HistoryError) as error:
        print(f"adcompare targets: {error}", file=sys.stderr)
        return 2
    _, note = available_peer_modes()
    if note:
        print(note, file=sys.stderr)
    try:
        results = open_for_writing(out / "results.json", resume=False, overwrite=True)
    except ResultsError as error:
        print(f"adcompare targets: {error}", file=sys.stderr)
        return 2
    try:
        result = measure_targets(
            SMALL if args.small else FULL,
            Settings(
                rounds=args.rounds, sample_time=SMALL_SAMPLE if args.small else Settings.sample_time
            ),
            results,
            progress=lambda message: print(message, file=sys.stderr),
        )
    finally:
        results.close()
    markdown, data = write_targets(result, out)
    record(history, results.path, "targets")
    print(render_markdown(result))
    print(f"written: {results.path}, {markdown}, {data}", file=sys.stderr)
    wrong = [
        f"{row['id']} {e['label']}"
        for row in result["rows"]
        for e in row["entries"]
        if e["status"] == "wrong"
    ]
    if wrong:
        print(
            f"adcompare targets: {len(wrong)} derivative(s) disagree with adcompare's and were "
            f"not timed: {', '.join(wrong)}",
            file=sys.stderr,
        )
        return 1
    return 0


__all__ = ["LATEST", "REFERENCE", "add_parser", "run"]
