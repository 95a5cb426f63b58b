"""The ``adcompare`` command. Each subcommand is one module of this package.

A module that defines ``add_parser(subparsers)`` (which sets ``run`` as a
default) is a command: adding a command is adding its module here.

Every command keeps one contract: exit status 0 when it succeeded, 1 when a
check it ran found a mismatch, 2 for bad input (a clean line on stderr, no
traceback), 3 for an internal error (one line asking for a report); 130 on
Ctrl-C. ``--debug``, anywhere on the line, shows the traceback instead.
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
        "  adcompare run              # measure both modes, write reports/latest/report.md\n"
        "  adcompare demo             # the worked example, by hand and by both engines\n"
        "  adcompare bench --help     # each command explains its options\n"
        "\n"
        "exit status: 0 success, 1 a check found a mismatch, 2 bad input, 3 an internal\n"
        "error; --debug anywhere on the line shows a traceback instead of one line",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error, not one line"
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for module in command_modules():
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module's contract)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [word for word in argv if word != "--debug"]
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
    except (ValueError, OSError) as error:
        if debug:
            raise
        # Bad input the command did not word itself: a file it cannot read or write, a value
        # out of range. One line, as for the errors the commands word themselves.
        print(f"adcompare {args.command}: {_sentence(error)}", file=sys.stderr)
        return 2
    except Exception as error:
        if debug:
            raise
        print(
            f"adcompare {args.command}: internal error: {type(error).__name__}: "
            f"{_sentence(error)}; run again with --debug for the traceback, and please report it",
            file=sys.stderr,
        )
        return 3
    return int(status or 0)


def _sentence(error: BaseException) -> str:
    """An exception as one line: an OSError's reason and file name, others their message."""
    if isinstance(error, OSError) and error.strerror:
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror}{where}"
    return " ".join(str(error).split()) or type(error).__name__
