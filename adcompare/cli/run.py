"""``adcompare run``: the quick sweep and its report, into ``reports/latest/``.

The committed reference run lives in ``reports/quick/``; ``run`` never
touches it unless asked with ``--refresh-reference``. At the end it says
where the report is and whether its crossovers agree with the reference's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.harness.cluster import ClusterError
from adcompare.bench.harness.results import ResultsError, load_results
from adcompare.bench.harness.sweep import preset
from adcompare.bench.history.store import HistoryError
from adcompare.bench.report.compare import compare_conclusions
from adcompare.cli.bench import (
    add_sweep_options,
    cluster_spec,
    conclusions,
    open_results,
    sweep_into,
    with_peers,
)
from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import (
    LATEST,
    OutputPathError,
    check_not_reference,
    check_output_folder,
)
from adcompare.cli.report import make_report

#: The committed reference run the README points to.
REFERENCE = Path("reports") / "quick"

EXAMPLES = """\
examples:
  adcompare run                        # about a minute: reports/latest/report.md and figures
  adcompare run --out reports/laptop   # keep this run beside the reference, compare with it
  adcompare run --out reports/laptop --resume   # after Ctrl-C, continue where it stopped
  adcompare run --peers                # JAX, PyTorch and autograd beside adcompare's modes
  adcompare run --workers 2            # the sizes spread over a local Dask cluster
  adcompare run --refresh-reference    # rewrite the committed reference in reports/quick/
"""


#: The command a new user runs first: listed first in ``adcompare --help``.
START_HERE = True


def add_parser(subparsers) -> None:
    """Register ``adcompare run``."""
    parser = subparsers.add_parser(
        "run",
        help="start here: the quick sweep and its report into reports/latest/ (about a minute)",
        description="Measure every problem by every mode with the quick preset, then write "
        "results.json, one figure per problem and report.md into the output folder, and say "
        "whether the crossovers agree with the committed reference run in reports/quick/. The "
        "same as 'adcompare bench --quick --out DIR/results.json' followed by "
        "'adcompare report DIR/results.json --out DIR'.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        help=f"the folder for results.json, the figures and report.md (default {LATEST}, "
        "git-ignored and rewritten by each run; another folder's results.json is kept unless "
        "--resume or --overwrite is given)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"measure into the committed reference folder {REFERENCE} and replace it",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume", action="store_true", help="continue the folder's results.json, do not restart"
    )
    again.add_argument(
        "--overwrite", action="store_true", help="start afresh even if the folder has results"
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=REFERENCE / "results.json",
        metavar="RESULTS.json",
        help=f"the run to compare with (default {REFERENCE / 'results.json'})",
    )
    parser.add_argument("--svg", action="store_true", help="write SVG figures as well as PNG")
    add_sweep_options(parser)
    add_history_options(parser)
    parser.set_defaults(run=run)


def comparison_lines(path: Path, reference: Path) -> list[str]:
    """Sentences saying whether the results in ``path`` reach the reference's conclusions."""
    if reference.resolve() == path.resolve():
        return [f"this run replaced the reference {reference}"]
    try:
        theirs = load_results(reference)
    except (ResultsError, OSError):
        return [f"no reference run to compare with at {reference}"]
    agreed, moved, noise = compare_conclusions(load_results(path), theirs)
    agree = f"{agreed} crossovers agree"
    if noise:
        agree += (
            f", {len(noise)} more within the timing noise ({', '.join(noise)}: the two modes' "
            "time ranges overlap where the runs differ)"
        )
    if not moved:
        return [f"the same conclusions as the reference {reference}: {agree}"]
    return [
        f"compared with the reference {reference}: {agree}, {len(moved)} moved:",
        *(f"  {line}" for line in moved),
    ]


def run(args) -> int:
    """Carry out ``adcompare run``."""
    folder = REFERENCE if args.refresh_reference else args.out or LATEST
    path = folder / "results.json"
    # The default folder and the reference are rewritten on purpose; a folder the user
    # named keeps its results unless --resume or --overwrite says what to do with them.
    overwrite = args.overwrite or args.refresh_reference or args.out is None
    try:
        cluster = cluster_spec(args)
        check_output_folder(check_not_reference(folder, refresh=args.refresh_reference))
        if path.is_dir():
            raise OutputPathError(f"{path} is a folder; pass --out with another folder")
        history = history_path(args)
        results = open_results(path, resume=args.resume, overwrite=overwrite)
    except (ResultsError, OutputPathError, HistoryError, ClusterError) as error:
        print(f"adcompare run: {error}", file=sys.stderr)
        return 2
    config = preset(
        "quick",
        modes=with_peers(None, args.peers),
        blas_threads=args.blas_threads,
        per_host=args.per_host,
    )
    try:
        status = sweep_into(results, config, quiet=args.quiet, cluster=cluster)
    except ClusterError as error:
        print(f"adcompare run: {error}", file=sys.stderr)
        return 2
    if status:
        return status
    record(history, path, "run")
    report = make_report([path], folder, svg=args.svg)
    print("\n".join(conclusions(report)))
    print(f"\nreport: {report}")
    print("\n".join(comparison_lines(path, args.reference)))
    return 0


__all__ = ["LATEST", "REFERENCE", "add_parser", "comparison_lines", "run"]
