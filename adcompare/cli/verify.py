"""``adcompare verify``: an expression's derivatives in every mode, checked against SymPy.

The expression is parsed by :mod:`adcompare.cli.expr`'s whitelist (numbers,
variables, ``+ - * / **`` and op-set functions by name); nothing the user
types is passed to ``eval``, ``sympify`` or ``parse_expr``. Exit status: 0
when every mode agrees with SymPy, 1 on a mismatch, 2 for input that cannot
be checked (a bad expression or point, or a non-finite value there).
"""

from __future__ import annotations

import inspect
import json
import sys

import numpy as np

from adcompare import symbolic
from adcompare.check import (
    SECOND_ORDER_MODES,
    Comparison,
    checked_tolerance,
    compare,
    default_tolerance,
    format_table,
)
from adcompare.check.comparison import SYMBOLIC_SECONDS
from adcompare.cli.expr import FUNCTIONS, Expression, ExpressionError, parse_expression, parse_point
from adcompare.cli.userfunction import load_function
from adcompare.cli.verify_function import (
    parse_arguments,
    report_json,
    report_text,
    verify_function,
)
from adcompare.durations import format_duration

DEFAULT_MODES = {1: ("forward", "reverse", "fd"), 2: (*SECOND_ORDER_MODES, "fd")}
KNOWN_MODES = {
    1: ("forward", "reverse", "symbolic", "fd", "complex_step"),
    2: ("forward", "reverse", *SECOND_ORDER_MODES, "symbolic", "fd", "complex_step"),
}
_LONGEST_FORMULA = 120


class VerifyError(ValueError):
    """Input that cannot be checked; the message says why."""


def as_function(expression: Expression):
    """The parsed expression as a function whose parameters are its variables.

    The parameter names make the symbolic trace use the expression's own
    variable names.

    >>> f = as_function(parse_expression("x * y"))
    >>> print(f(2.0, 3.0), inspect.signature(f))
    6.0 (x, y, /)
    """

    def f(*values):
        return expression(*values)

    f.__name__ = f.__qualname__ = "f"
    f.__signature__ = inspect.Signature(
        [inspect.Parameter(v, inspect.Parameter.POSITIONAL_ONLY) for v in expression.variables]
    )
    return f


def _modes(text: str | None, order: int) -> tuple[str, ...]:
    if text is None:
        chosen = DEFAULT_MODES[order]
    else:
        chosen = tuple(m.strip() for m in text.split(",") if m.strip())
        unknown = [m for m in chosen if m not in KNOWN_MODES[order]]
        if unknown or not chosen:
            raise VerifyError(
                f"unknown mode(s) {', '.join(unknown) or '(none given)'} for order {order}; "
                f"choose from {', '.join(KNOWN_MODES[order])}"
            )
    # SymPy is the reference, so its row always comes first.
    return ("symbolic", *(m for m in chosen if m != "symbolic"))


def _derivative_names(variables, order: int) -> list[tuple[str, tuple[int, ...]]]:
    """Column titles and their (block, index) in the compare result."""
    n = len(variables)
    if order == 1:
        return [(f"∂f/∂{v}", (i,)) for i, v in enumerate(variables)]
    columns = []
    for i in range(n):
        for j in range(i, n):
            title = f"∂²f/∂{variables[i]}²" if i == j else f"∂²f/∂{variables[i]}∂{variables[j]}"
            columns.append((title, (i * n + j,)))
    return columns


def _short(text: str) -> str:
    return text if len(text) <= _LONGEST_FORMULA else text[: _LONGEST_FORMULA - 1] + "…"


def _formulas(f, values, variables, order) -> list[tuple[str, str]]:
    """SymPy's derivative formulas, one (title, text) per derivative column."""
    traced = symbolic.record(f, *values)
    formulas = [("f", symbolic.formula(traced.expressions))]
    n = len(variables)
    for title, (block,) in _derivative_names(variables, order):
        if order == 1:
            expr = traced.gradient_expressions(block)
        else:
            expr = traced.hessian_expressions(block // n, block % n)
        formulas.append((title, symbolic.formula(expr)))
    return formulas, traced.point_dependent


def _number(x) -> str:
    return f"{float(x):.10g}"


def verify(
    text: str,
    at: str,
    *,
    order: int = 1,
    modes: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    repeat: int = 3,
) -> tuple[Comparison, dict]:
    """Parse, compare, and collect what the command prints.

    Raises :class:`~adcompare.cli.expr.ExpressionError` or :class:`VerifyError`
    for input that cannot be checked.
    """
    if order not in (1, 2):
        raise VerifyError(f"--order must be 1 or 2, not {order}")
    for name, tolerance in (("--rtol", rtol), ("--atol", atol)):
        try:
            checked_tolerance(tolerance, name)
        except ValueError as error:
            raise VerifyError(str(error)) from None
    expression = parse_expression(text)
    point = parse_point(at, expression.variables)
    chosen = _modes(modes, order)
    f = as_function(expression)
    values = [np.float64(point[v]) for v in expression.variables]
    with np.errstate(all="ignore"):
        value = np.asarray(f(*values))
        if not np.all(np.isfinite(value)):
            raise VerifyError(
                f"the expression is not finite at {at} (value {float(value):g}); "
                "choose a point inside its domain"
            )
        try:
            formulas, point_dependent = _formulas(f, values, expression.variables, order)
        except symbolic.SymbolicSizeError as error:
            raise VerifyError(str(error)) from None
        result = compare(
            f, *values, modes=chosen, against="symbolic", order=order, rtol=rtol, atol=atol,
            repeat=repeat,
        )  # fmt: skip
    info = {
        "expression": expression.text,
        "variables": list(expression.variables),
        "point": point,
        "order": order,
        "formulas": formulas,
        "point_dependent": point_dependent,
        "tolerances": {
            m: rtol if rtol is not None else default_tolerance(np.float64, m, order)
            for m in chosen
            if m != "symbolic"
        },
        "atol": atol or 0.0,
        "repeat": repeat,
    }
    return result, info


def _report_text(result: Comparison, info: dict) -> str:
    variables = info["variables"]
    order = info["order"]
    at = ", ".join(f"{v} = {info['point'][v]:g}" for v in variables)
    lines = [f"f({', '.join(variables)}) = {info['expression']}  at  {at}", ""]
    lines.append("SymPy:")
    width = max(len(title) for title, _ in info["formulas"])
    for title, formula in info["formulas"]:
        lines.append(f"  {title.ljust(width)} = {_short(formula)}")
    if info["point_dependent"]:
        lines.append("  (the expression branches on values: these hold near this point)")
    lines.append("")
    columns = _derivative_names(variables, order)
    header = ["mode", "value", *(title for title, _ in columns), "rel err", "time", "ops", "result"]
    rows = []
    for row in result.rows:
        if row.error is not None:
            rows.append([row.mode, *["-"] * (len(header) - 2), f"error: {row.error}"])
            continue
        derivative = [_number(np.asarray(row.derivative[b]).reshape(())) for _, (b,) in columns]
        rows.append(
            [
                row.mode,
                _number(row.value),
                *derivative,
                _error_text(row),
                format_duration(row.seconds),
                "-" if row.ops is None else str(row.ops),
                {True: "ok", False: "MISMATCH", None: "-"}[row.passed],
            ]
        )
    lines.append(format_table(header, rows))
    lines.append("")
    tolerances = ", ".join(f"{m} {t:g}" for m, t in info["tolerances"].items())
    if result.passed:
        lines.append(f"All modes agree with SymPy (rtol: {tolerances}).")
    else:
        for row in result.rows:
            if row.passed is False:
                where = f" at {row.worst}" if row.worst else ""
                lines.append(
                    f"MISMATCH: {row.mode} disagrees with SymPy{where}"
                    + (f" (rel err {row.max_rel_err:.1e})" if row.max_rel_err is not None else "")
                )
        if result.reference_error:
            lines.append(f"no symbolic reference: {result.reference_error}")
    lines.append("rel err: max |a-b| / max(1, |a|+|b|) against SymPy's derivative.")
    lines.append(
        f"time: one call, best of {info['repeat']} after the first (symbolic: evaluating the "
        "compiled derivative); ops: op applications in the first call."
    )
    return "\n".join(lines)


def _error_text(row) -> str:
    if row.mode == "symbolic":
        return "reference"
    return "-" if row.max_rel_err is None else f"{row.max_rel_err:.1e}"


_NUMERIC_FIELDS = ("max_abs_err", "max_rel_err", "seconds", "first_seconds")


def _finite_or_none(x) -> float | None:
    """A finite number as a float; anything else (inf, nan, None) as ``None``.

    >>> _finite_or_none(2), _finite_or_none(float("inf")), _finite_or_none("nan")
    (2.0, None, None)
    """
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def _mode_status(row, entry: dict) -> str:
    if row.error is not None:
        return "error"
    numbers = [entry["value"], *entry["derivative"].values()]
    if any(x is None for x in numbers):
        return "not finite"
    return {True: "ok", False: "mismatch", None: "reference"}[row.passed]


def _report_json(result: Comparison, info: dict) -> str:
    """The report as strict JSON: a number that is not finite is ``null``, and each
    mode's ``status`` (ok, mismatch, error, not finite, reference) says why."""
    variables = info["variables"]
    columns = _derivative_names(variables, info["order"])
    modes = []
    for row in result.rows:
        entry = row.as_dict()
        entry.pop("derivative")
        entry["derivative"] = (
            None
            if row.error is not None
            else {
                title: _finite_or_none(np.asarray(row.derivative[b]).reshape(()))
                for title, (b,) in columns
            }
        )
        entry["value"] = (
            None if row.value is None else _finite_or_none(np.asarray(row.value).reshape(()))
        )
        for name in _NUMERIC_FIELDS:
            entry[name] = None if entry[name] is None else _finite_or_none(entry[name])
        entry["status"] = _mode_status(row, entry)
        modes.append(entry)
    document = {
        "expression": info["expression"],
        "variables": variables,
        "point": info["point"],
        "order": info["order"],
        "symbolic": dict(info["formulas"]),
        "point_dependent": info["point_dependent"],
        "rtol": info["tolerances"],
        "atol": info["atol"],
        "passed": result.passed,
        "status": "passed" if result.passed else "failed",
        "modes": modes,
    }
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)


def run(args) -> int:
    """Run ``adcompare verify``; returns the exit status."""
    if (args.expression is None) == (args.function is None):
        print(
            'adcompare verify: give an expression (adcompare verify "x*y" --at x=1,y=2) or '
            "--function mymodel.py:f, one of the two",
            file=sys.stderr,
        )
        return 2
    if args.function is not None:
        return _run_function(args)
    if args.at is None:
        print("adcompare verify: give the point with --at, e.g. --at x=2,y=3", file=sys.stderr)
        return 2
    try:
        result, info = verify(
            args.expression,
            args.at,
            order=args.order,
            modes=args.modes,
            rtol=args.rtol,
            atol=args.atol,
            repeat=args.repeat,
        )
    except (ExpressionError, VerifyError) as error:
        print(f"adcompare verify: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps({"passed": False, "error": str(error)}, ensure_ascii=False))
        return 2
    print(_report_json(result, info) if args.json else _report_text(result, info))
    return 0 if result.passed else 1


def _run_function(args) -> int:
    """``adcompare verify --function SPEC``: the user's function at ``--at`` or ``--inputs``."""
    try:
        for name, tolerance in (("--rtol", args.rtol), ("--atol", args.atol)):
            checked_tolerance(tolerance, name)
        f = load_function(args.function)
        arguments = parse_arguments(f, args.at, args.inputs, args.size)
        result = verify_function(
            f,
            args.function.rpartition(":")[2],
            arguments,
            order=args.order,
            modes=_modes(args.modes, args.order),
            rtol=args.rtol,
            atol=args.atol,
            repeat=args.repeat,
            symbolic_seconds=args.symbolic_seconds,
        )
    except ValueError as error:
        print(f"adcompare verify: {error}", file=sys.stderr)
        return 2
    print(report_json(result) if args.json else report_text(result))
    return 0 if result.passed else 1


def add_parser(subparsers) -> None:
    """Register ``adcompare verify``."""
    parser = subparsers.add_parser(
        "verify",
        help="check an expression's derivatives in every mode against SymPy",
        description=(
            "Differentiate an expression by forward mode, reverse mode and finite "
            "differences, and compare each with SymPy's exact derivative: value, "
            "derivative, error and time per mode. Exits 1 on a mismatch, 2 on bad input."
        ),
        epilog=(
            'example: adcompare verify "3*x**2 + x*y + 5*y**2" --at x=2,y=3. '
            "Expressions may use numbers, variables, + - * / ** and the functions "
            + ", ".join(sorted(FUNCTIONS))
            + "; anything else is refused before evaluation. An expression that starts "
            'with "-" goes last, after "--" (adcompare verify --at x=2 -- "-x**2"), or '
            'with a leading space (" -x**2").'
        ),
    )
    parser.add_argument("expression", nargs="?", help='the function, e.g. "3*x**2 + x*y + 5*y**2"')
    _add_function_options(parser)
    parser.add_argument(
        "--order",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: the gradient (default); 2: the Hessian",
    )
    parser.add_argument(
        "--modes",
        metavar="LIST",
        help=(
            "comma-separated modes to compare with SymPy: forward, reverse, fd, complex_step; "
            "with --order 2 also fwd-over-rev, rev-over-rev, fwd-over-fwd, rev-over-fwd "
            "(default: forward,reverse,fd; for order 2 the four compositions and fd)"
        ),
    )
    parser.add_argument("--rtol", type=float, help="relative tolerance (default: by mode)")
    parser.add_argument("--atol", type=float, help="absolute tolerance (default 0)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="timed calls per mode after the first (default 3)"
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def _add_function_options(parser) -> None:
    """The options of ``verify --function``: the function, its point, SymPy's time."""
    parser.add_argument(
        "--function",
        metavar="SPEC",
        help="check your own Python function instead of an expression: mymodel.py:f or "
        "mypkg.mymodel:f; against SymPy, or finite differences where SymPy gives up",
    )
    parser.add_argument(
        "--at",
        metavar="POINT",
        help="the point, e.g. x=2,y=3 (every variable, or every parameter of --function); "
        "for --function f(x) of one vector also numbers alone, e.g. 0.5,1,2",
    )
    parser.add_argument(
        "--inputs",
        metavar="SPEC",
        help="with --function: the function building its arguments at size n, inputs(n), "
        "as for adcompare bench (instead of --at)",
    )
    parser.add_argument(
        "--size", type=int, default=4, metavar="N", help="the n --inputs builds at (default 4)"
    )
    parser.add_argument(
        "--symbolic-seconds",
        type=float,
        default=SYMBOLIC_SECONDS,
        metavar="S",
        help=f"with --function: seconds SymPy may take before it gives up and finite "
        f"differences are the reference (default {SYMBOLIC_SECONDS:g})",
    )
