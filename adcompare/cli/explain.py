"""``adcompare explain``: the evaluation trace of an expression, swept both ways.

    adcompare explain "3*x**2 + x*y + 5*y**2" --at x=2,y=3 [--mode both]
                      [--markdown] [--dot FILE] [--png FILE] [--program]
                      [--eliminate ORDER]

prints the Wengert list with one tangent column per forward sweep and the
adjoint column of the reverse sweep, how many sweeps each mode needed, and
the gradient. ``--dot`` and ``--png`` write the recorded graph;
``--program`` prints the tape as :func:`adcompare.compile` records it, the
forward pass and the reverse sweep as straight-line code; ``--eliminate``
the linearized graph of the variables (gathered into one vector ``x``, each
read by a selection) eliminated vertex by vertex in an order
(:mod:`adcompare.elimination`). The expression is read by the safe parser of
:mod:`adcompare.cli.expr`.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from pathlib import Path

import numpy as np

from adcompare.cli.expr import ExpressionError, parse_expression, parse_point
from adcompare.elimination import ORDERS, describe, linearize
from adcompare.engines.reverse import Tensor
from adcompare.graph import draw, stats, to_dot, trace_table


def explain(
    text: str,
    at: str,
    mode: str = "both",
    markdown: bool = False,
    dot: str | None = None,
    png: str | None = None,
    program: bool = False,
    eliminate: str | None = None,
) -> str:
    """The report ``adcompare explain`` prints; writes the DOT and PNG files if asked.

    >>> print(explain("x*y + x", "x=2,y=3", mode="reverse"))
    Reverse mode: 1 recorded pass, then 1 backward sweep up the list from f (seed df/df = 1)
    <BLANKLINE>
    v   op        computes  value  df/dv (adjoint)
    --  --------  --------  -----  ---------------
    f   add       v1 + x        8                1
    v1  multiply  x * y         6                1
    y   input                   3                2
    x   input                   2                4
    <BLANKLINE>
    f = 8 at x=2, y=3
    gradient: df/dx = 4, df/dy = 2
    reverse mode needed 1 sweep (one per output)
    """
    expression = parse_expression(text)
    point = parse_point(at, expression.variables)
    _check_png(png)
    values = list(point.values())
    with np.errstate(all="ignore"):
        table = trace_table(expression, *values, mode=mode, names=expression.variables)
    report = table.to_markdown() if markdown else table.to_text()
    if not np.all(np.isfinite(table.value)):
        report += f"\n\nwarning: f is not finite at {at}; its derivatives are meaningless there"
    if dot or png:
        leaves = [Tensor(v, requires_grad=True) for v in values]
        with np.errstate(all="ignore"):
            out = expression(*leaves)
        names = dict(zip(expression.variables, leaves))
        written = []
        if dot:
            with _writing(dot):
                Path(dot).write_text(to_dot(out, names=names) + "\n", encoding="utf-8")
            written.append(f"wrote {dot}: the graph as Graphviz DOT (render with dot -Tpng)")
        if png:
            with _writing(png):
                draw(out, png, names=names, title=f"f = {expression.text}")
            written.append(f"wrote {png}: a picture of the graph")
        summary = stats(out)
        written.append(
            f"the graph: {summary.nodes} op records, {summary.leaves} leaves, "
            f"{summary.edges} edges, {summary.saved_bytes} bytes saved for backward"
        )
        report += "\n\n" + "\n".join(written)
    extras = [_program(expression, values)] if program else []
    extras += [_elimination(expression, values, eliminate)] if eliminate else []
    return "\n\n".join([report, *extras])


def _elimination(expression, values, order: str) -> str:
    """The expression's linearized graph eliminated step by step in ``order``."""

    def f(x):
        return expression(*(x[i] for i in range(len(values))))

    with np.errstate(all="ignore"):
        graph = linearize(f, np.array(values, dtype=np.float64))
    names = ", ".join(f"x[{i}] = {name}" for i, name in enumerate(expression.variables))
    return f"The variables as one vector x ({names}).\n" + describe(graph, order)


def _check_png(png: str | None) -> None:
    if png and Path(png).suffix.lower() != ".png":
        raise ExpressionError(
            f"--png {png}: --png draws a PNG image, so give a file name ending in .png"
        )


class OutputError(OSError):
    """A file ``explain`` was asked to write could not be written; the message says which."""


@contextlib.contextmanager
def _writing(path: str):
    """Turn any failure to write ``path`` into an :class:`OutputError` naming it."""
    try:
        yield
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None


def compiled_program(expression, values):
    """The expression compiled by :func:`adcompare.compile`, its inputs named as its variables.

    ``explain --program`` prints this program's ``source``:

    >>> from adcompare.cli.expr import parse_expression
    >>> program = compiled_program(parse_expression("x*y"), [2.0, 3.0]).program
    >>> print(program.source)
    def replay(x, y):
        # dtype = dtype('float64')
        # forward pass
        x = x.item()
        y = y.item()
        value = x * y
        return (array(value, dtype), array(y, dtype), array(x, dtype),)
    <BLANKLINE>
    """
    from adcompare.engines.replay import compile as record_program

    def f(*variables):
        return expression(*variables)

    f.__signature__ = inspect.Signature(
        [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY)
            for name in expression.variables
        ]
    )
    with np.errstate(all="ignore"):
        return record_program(f, *values, argnums=tuple(range(len(values))))


def _program(expression, values) -> str:
    """The recorded forward pass and reverse sweep, one line per array operation."""
    header = (
        "The tape as adcompare.compile records it and replays it, the reverse sweep "
        "included (steps with constant results are folded away):"
    )
    return header + "\n" + compiled_program(expression, values).program.source


def _run(args) -> int:
    try:
        print(
            explain(
                args.expression,
                args.at,
                mode=args.mode,
                markdown=args.markdown,
                dot=args.dot,
                png=args.png,
                program=args.program,
                eliminate=args.eliminate,
            )
        )
    except (ExpressionError, OutputError) as error:
        print(f"adcompare explain: {error}", file=sys.stderr)
        return 2
    return 0


def add_parser(subparsers) -> None:
    """Register ``adcompare explain``."""
    parser = subparsers.add_parser(
        "explain",
        help="the evaluation trace of an expression, by forward and reverse sweeps",
        description="Write down every intermediate of an expression at a point (its "
        "evaluation trace, or Wengert list), then differentiate it: forward mode carries "
        "one tangent column per input, one sweep each; reverse mode sweeps the list back "
        "once, giving the adjoint of every intermediate.",
        epilog='example: adcompare explain "3*x**2 + x*y + 5*y**2" --at x=2,y=3',
    )
    parser.add_argument("expression", help='a formula, e.g. "3*x**2 + x*y + 5*y**2"')
    parser.add_argument("--at", required=True, help="the point, e.g. x=2,y=3")
    parser.add_argument(
        "--mode",
        choices=["forward", "reverse", "both"],
        default="both",
        help="which sweeps to show (default: both)",
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--dot", metavar="FILE", help="write the graph as Graphviz DOT text")
    parser.add_argument("--png", metavar="FILE", help="draw the graph as a PNG (matplotlib)")
    parser.add_argument(
        "--program",
        action="store_true",
        help="print the recorded forward pass and reverse sweep as straight-line code",
    )
    parser.add_argument(
        "--eliminate",
        choices=list(ORDERS),
        metavar="ORDER",
        help="eliminate the linearized graph vertex by vertex in ORDER, step by step: "
        + ", ".join(ORDERS),
    )
    parser.set_defaults(run=_run)
