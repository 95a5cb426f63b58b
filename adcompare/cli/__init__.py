"""The ``adcompare`` command. Each subcommand is one module of this package.

A module that defines ``add_parser(subparsers)`` (which sets ``run`` as a
default) is a command: adding a command is adding its module here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys


def command_modules() -> list:
    """The modules of this package that define a command, by name.

    >>> [m.__name__.rsplit(".", 1)[1] for m in command_modules()][:3]
    ['run', 'bench', 'demo']
    """
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):  # __main__ runs the command line when imported
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "add_parser"):
            found.append(module)
    # ``START_HERE`` puts a command first in the help; the rest go alphabetically.
    return sorted(found, key=lambda m: (not getattr(m, "START_HERE", False), m.__name__))


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
    for module in command_modules():
        module.add_parser(subparsers)
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
