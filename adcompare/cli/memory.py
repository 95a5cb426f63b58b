"""``adcompare memory``: the memory study of long loops, its figures and report, into
``reports/latest/memory/``; ``--refresh-reference`` rewrites the committed ``reports/memory/``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adcompare.bench.memory.loops import LOOP_PROBLEMS
from adcompare.bench.memory.modes import MEMORY_MODES
from adcompare.bench.memory.peers import ALL_MEMORY_MODES, available_memory_peers
from adcompare.bench.memory.report import parse_bytes, write_memory_report
from adcompare.bench.memory.sweep import (
    MemoryResults,
    load_memory_results,
    memory_preset,
    merge_cells,
    run_memory_sweep,
)
from adcompare.cli.history import add_history_options, history_path, record
from adcompare.cli.outfolder import LATEST, output_folder

#: The committed reference run.
REFERENCE = Path("reports") / "memory"

EXAMPLES = """\
examples:
  adcompare memory                          # T = 10, 100, 1000: reports/latest/memory/
  adcompare memory --full                   # T up to 10^5: long
  adcompare memory --memory-budget 256MiB   # where each mode stops fitting 256 MiB
  adcompare memory --peers --steps 10 100 1000   # beside torch.utils.checkpoint, jax
  adcompare memory --report reports/memory/results.json   # redraw from results
  adcompare memory --full --refresh-reference   # rewrite the committed reports/memory/
"""


def add_parser(subparsers) -> None:
    """Register ``adcompare memory``."""
    parser = subparsers.add_parser(
        "memory",
        help="memory against time for long loops: full tape, checkpoints, revolve, forward",
        description="Differentiate long loops (a heat equation, an LSTM) by forward mode, the "
        "full tape, checkpointed blocks and revolve, measuring time and peak memory against "
        "the number of steps T; write results.json, one figure per problem and report.md.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--full", action="store_true", help="T up to 10^5 (long)")
    parser.add_argument("--problems", nargs="+", choices=list(LOOP_PROBLEMS), default=None)
    parser.add_argument("--modes", nargs="+", choices=list(ALL_MEMORY_MODES), default=None)
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also measure the installed peers (torch.utils.checkpoint, jax.checkpoint with "
        'jax.lax.scan) on the same loops; install them with pip install -e ".[peers]"',
    )
    parser.add_argument("--steps", nargs="+", type=int, default=None, help="the values of T")
    parser.add_argument(
        "--memory-budget",
        default="1GiB",
        help="the memory each mode must fit, e.g. 1GiB (default), 512MiB, 2e9",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        help=f"output folder (default {LATEST / 'memory'}, git-ignored, rewritten by each run)",
    )
    where.add_argument(
        "--refresh-reference",
        action="store_true",
        help=f"write into the committed reference folder {REFERENCE} (a measurement must "
        "be --full)",
    )
    parser.add_argument(
        "--report",
        nargs="+",
        type=Path,
        default=None,
        metavar="RESULTS",
        help="measure nothing: draw the figures and report from these results files",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    add_history_options(parser)
    parser.set_defaults(run=run)


def with_memory_peers(modes: list[str] | None, peers: bool) -> list[str] | None:
    """``modes`` (``None``: every adcompare mode) plus, if ``peers``, the installed
    peers' memory modes; prints one line naming the missing peer libraries.

    >>> with_memory_peers(["reverse"], False)
    ['reverse']
    """
    if not peers:
        return modes
    names, note = available_memory_peers()
    if note:
        print(note, file=sys.stderr)
    return list(dict.fromkeys([*(modes or MEMORY_MODES), *names]))


def run(args) -> int:
    """Carry out ``adcompare memory``."""
    if args.refresh_reference and not (args.full or args.report):
        print(
            f"adcompare memory: the reference {REFERENCE} holds T up to 10^5; add --full to "
            "refresh it (or --report RESULTS to redraw it)",
            file=sys.stderr,
        )
        return 2
    try:
        out = output_folder(args.out, "memory", refresh=args.refresh_reference)
        budget = parse_bytes(args.memory_budget)
        history = None if args.report else history_path(args)
        if args.report:
            cells = merge_cells(*(load_memory_results(path).cells for path in args.report))
        else:
            config = memory_preset(
                "full" if args.full else "quick",
                problems=args.problems,
                modes=with_memory_peers(args.modes, args.peers),
                steps=args.steps,
            )
    except ValueError as error:
        print(f"adcompare memory: {error}", file=sys.stderr)
        return 2
    if not args.report:
        results = MemoryResults(out / "results.json")
        cells = run_memory_sweep(config, results, quiet=args.quiet).cells
        record(history, results.path, "memory")
    report = write_memory_report(cells, out, budget)
    print(f"report: {report}")
    return 0


__all__ = ["add_parser", "run", "with_memory_peers"]
