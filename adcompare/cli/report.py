"""``adcompare report``: plots and ``report.md`` from results files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.harness.from_pytest import is_pytest_benchmark
from adcompare.bench.harness.results import ResultsError, load_any, merge, read_json
from adcompare.bench.history.store import HistoryError
from adcompare.bench.report.html import write_html
from adcompare.bench.report.markdown import write_report
from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import LATEST, OutputPathError, check_not_reference

EXAMPLES = """\
examples:
  adcompare report results.json                          # into reports/latest/report/
  adcompare report quick.json full.json --out reports/mine --svg
  pytest benchmarks --benchmark-enable --benchmark-json bench.json
  adcompare report bench.json                            # pytest-benchmark's JSON works too
  pytest test_mymodel_bench.py --benchmark-json out.json # your suite, with adcompare_bench
  adcompare report out.json --out report
  adcompare report reports/real/results.json --out reports/real --refresh-reference
"""


def add_parser(subparsers) -> None:
    """Register ``adcompare report``."""
    parser = subparsers.add_parser(
        "report",
        help="draw the plots and write report.md from results files",
        description="Read results written by 'adcompare bench' (or pytest-benchmark JSON from "
        "the benchmarks/ suite, or from your own suite's tests marked @pytest.mark.adcompare "
        "that call the adcompare_bench fixture), draw one figure per problem and write "
        "report.md beside them. "
        "With several files, a later file's cell replaces an earlier one's.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the report's folder (default reports/latest/report, git-ignored)",
    )
    parser.add_argument(
        "--refresh-reference",
        action="store_true",
        help="allow --out to name a committed reference folder (reports/quick, reports/real, "
        "...) and rewrite its report",
    )
    parser.add_argument("--svg", action="store_true", help="write SVG figures as well as PNG")
    add_history_options(parser)
    parser.set_defaults(run=run)


def make_report(paths: list[Path], out: Path, *, svg: bool = False) -> Path:
    """Merge the results in ``paths`` and write the report into ``out``: ``report.md``
    (returned), its figures, and ``report.html``, the same self-contained for a browser."""
    loaded = [load_any(path) for path in paths]
    for sentence in (s for results in loaded for s in results.rejected):
        print(f"warning: {sentence}", file=sys.stderr)
    results = merge(loaded)
    formats = ("png", "svg") if svg else ("png",)
    report = write_report(results, out, formats=formats, sources=[str(p) for p in paths])
    write_html(report)
    return report


def run(args) -> int:
    """Carry out ``adcompare report``."""
    if args.refresh_reference and args.out is None:
        print(
            "adcompare report: --refresh-reference rewrites the reference named by --out; "
            "pass --out reports/NAME",
            file=sys.stderr,
        )
        return 2
    try:
        args.out = (
            args.out
            if args.refresh_reference
            else check_not_reference(args.out or LATEST / "report")
        )
    except OutputPathError as error:
        print(f"adcompare report: {error}", file=sys.stderr)
        return 2
    try:
        history = history_path(args)
        path = make_report(args.results, args.out, svg=args.svg)
    except (ResultsError, HistoryError) as error:
        print(f"adcompare report: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        where = error.filename or args.out
        print(
            f"adcompare report: cannot write the report into {args.out} ({where}: "
            f"{error.strerror or error}); choose a writable folder with --out",
            file=sys.stderr,
        )
        return 2
    for results in args.results:
        # pytest-benchmark's runs are recorded here; adcompare's own, by the command that ran.
        if is_pytest_benchmark(read_json(results)):
            record(history, results, "report")
    print(f"wrote {path}", file=sys.stderr)
    return 0


__all__ = ["add_parser", "make_report", "run"]
