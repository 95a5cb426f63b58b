"""The ``adcompare`` command. Each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Each module has add_parser(subparsers), which sets ``run`` as a default.
COMMAND_MODULES = [
    "adcompare.bench.cmd_run",
    "adcompare.bench.cmd_bench",
    "adcompare.bench.cmd_report",
    "adcompare.bench.cmd_targets",
    "adcompare.bench.cmd_memory",
    "adcompare.demo",
    "adcompare.explain_cli",
    "adcompare.train",
    "adcompare.verify_cli",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered.

    >>> "demo" in build_parser().format_help()
    True
    """
    parser = argparse.ArgumentParser(
        prog="adcompare",
        description="Forward-mode and reverse-mode automatic differentiation, side by side.",
        epilog="examples:\n"
        "  adcompare run              # measure both modes, write reports/quick/report.md\n"
        "  adcompare demo             # the worked example, by hand and by both engines\n"
        "  adcompare bench --help     # each command explains its options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        status = args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`adcompare ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
