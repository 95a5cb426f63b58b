"""``python -m adcompare.gradbench [--mode MODE]``: serve GradBench's tool protocol on
stdin and stdout (the same server as ``adcompare gradbench``)."""

from __future__ import annotations

import argparse
import sys

from adcompare.gradbench.evals import MODES
from adcompare.gradbench.protocol import serve_stdio


def main(argv: list[str] | None = None) -> int:
    """Parse ``--mode`` and serve until stdin ends."""
    parser = argparse.ArgumentParser(
        prog="python -m adcompare.gradbench",
        description="Answer GradBench's messages (newline-delimited JSON) on stdin and stdout.",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="the engine that answers each derivative (default auto: each eval's own choice)",
    )
    return serve_stdio(parser.parse_args(argv).mode)


if __name__ == "__main__":
    sys.exit(main())
