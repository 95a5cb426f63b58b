"""Safe expressions from the command line: ``"3*x**2 + x*y + 5*y**2"``.

The text is parsed with :mod:`ast` and only numbers, variable names, the
operators ``+ - * / **``, unary minus and calls of the op set's functions
are accepted; nothing is passed to ``eval``. The result is a function of
the variables written against the op set, so every engine can run it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from adcompare.ops import COMPOSITES, OPS

__all__ = ["Expression", "ExpressionError", "parse_expression", "parse_point"]

# Python's grammar: the operator each node spells and the method it calls. Which
# op answers to that method is the op record's (``OpDef.operators``).
_SYNTAX = {
    ast.Add: ("+", "__add__"),
    ast.Sub: ("-", "__sub__"),
    ast.Mult: ("*", "__mul__"),
    ast.Div: ("/", "__truediv__"),
    ast.Pow: ("**", "__pow__"),
    ast.Mod: ("%", "__mod__"),
}
_BY_OPERATOR = {op.operators[0]: op.fn for op in OPS.values() if op.operators}
_BINARY = {
    node: _BY_OPERATOR[method] for node, (_, method) in _SYNTAX.items() if method in _BY_OPERATOR
}
_NEGATE = _BY_OPERATOR["__neg__"]
_CONSTANTS = {"pi": math.pi, "e": math.e}
#: The functions formulas may call: the op set's functions of one or two arrays with no
#: static parameters (``OpDef.cli``), and the composites that say so.
FUNCTIONS: dict[str, Callable] = {
    **{name: op.api for name, op in OPS.items() if op.cli},
    **{name: composite.fn for name, composite in COMPOSITES.items() if composite.cli},
}
#: How many arguments each function takes (the op record's count; composites take one).
ARITY: dict[str, int] = {
    name: (fn.op.nargs if hasattr(fn, "op") else 1) for name, fn in FUNCTIONS.items()
}
#: Longer or more deeply nested expressions are refused before anything is evaluated.
#: ``MAX_DEPTH`` bounds the nesting SymPy sees, where a chain of sums or of products
#: (``a + b - c``, ``a*b/c``) is one level: it is what SymPy's recursive
#: differentiation and printing reach within Python's default recursion limit, for
#: first and second derivatives, with room to spare (``sin`` nested 120 deep was the
#: most that worked). ``MAX_SYNTAX_DEPTH`` bounds the syntax tree itself, chains included.
MAX_LENGTH = 10_000
MAX_DEPTH = 100
MAX_SYNTAX_DEPTH = 200
_CHAINS = ({ast.Add, ast.Sub}, {ast.Mult, ast.Div})


class ExpressionError(ValueError):
    """An expression or a point that cannot be understood, with the reason."""


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its text, its variables (in order of first use), a function."""

    text: str
    variables: tuple[str, ...]
    tree: ast.Expression

    def __call__(self, *values):
        """Evaluate with one value per variable, in the order of ``variables``.

        >>> print(parse_expression("3*x**2 + x*y + 5*y**2")(2.0, 3.0))
        63.0
        """
        if len(values) != len(self.variables):
            raise ExpressionError(
                f"{self.text!r} has variables {', '.join(self.variables)}; "
                f"got {len(values)} value(s)"
            )
        return _evaluate(self.tree.body, dict(zip(self.variables, values)))


def _fail(node: ast.AST, text: str, message: str):
    column = getattr(node, "col_offset", 0)
    raise ExpressionError(f"{message}\n  {text}\n  {' ' * column}^")


def _same_chain(parent: ast.AST, child: ast.AST) -> bool:
    """Whether SymPy flattens ``child`` into ``parent`` (a sum in a sum, a product in a product)."""
    return (
        isinstance(parent, ast.BinOp)
        and isinstance(child, ast.BinOp)
        and any(type(parent.op) in chain and type(child.op) in chain for chain in _CHAINS)
    )


def _check(node: ast.AST, text: str, names: list[str], depth: int = 0, nesting: int = 0) -> None:
    """Reject anything but arithmetic on numbers, names and known functions."""
    if nesting > MAX_DEPTH:
        _fail(node, text, f"the expression is nested more than {MAX_DEPTH} levels deep")
    if depth > MAX_SYNTAX_DEPTH:
        _fail(node, text, f"the expression has more than {MAX_SYNTAX_DEPTH} levels of operations")
    check = lambda child: _check(
        child, text, names, depth + 1, nesting + (not _same_chain(node, child))
    )
    if isinstance(node, ast.Expression):
        check(node.body)
    elif isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.BitXor):
            _fail(node, text, "'^' is not a power here; write x**2")
        if type(node.op) not in _BINARY:
            spelled = " ".join(_SYNTAX[node][0] for node in _BINARY)
            _fail(node, text, f"operator {type(node.op).__name__} is not supported; use {spelled}")
        check(node.left)
        check(node.right)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            _fail(node, text, "only unary minus and plus are supported")
        check(node.operand)
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            _fail(node, text, f"{node.value!r} is not a number")
        try:
            finite = math.isfinite(float(node.value))
        except OverflowError:
            finite = False
        if not finite:
            _fail(node, text, "this number is too large for a float (at most about 1.8e308)")
    elif isinstance(node, ast.Name):
        if node.id.startswith("__"):
            _fail(node, text, f"{node.id}: names starting with '__' are not allowed")
        if node.id in FUNCTIONS:
            _fail(node, text, f"{node.id} is a function; call it, e.g. {node.id}(x)")
        if node.id not in _CONSTANTS and node.id not in names:
            names.append(node.id)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            _fail(node, text, f"unknown function; known functions are: {known}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            _fail(node, text, f"call {node.func.id} with positional arguments only")
        arity = ARITY[node.func.id]
        if len(node.args) != arity:
            _fail(
                node,
                text,
                f"{node.func.id} takes {arity} argument(s), got {len(node.args)}",
            )
        for arg in node.args:
            check(arg)
    else:
        _fail(node, text, f"{type(node).__name__} is not allowed in an expression")


def _evaluate(node: ast.AST, env: dict):
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, env), _evaluate(node.right, env))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, env)
        return _NEGATE(value) if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return _CONSTANTS[node.id] if node.id in _CONSTANTS else env[node.id]
    return FUNCTIONS[node.func.id](*[_evaluate(a, env) for a in node.args])


def parse_expression(text: str) -> Expression:
    """Parse ``text`` into an :class:`Expression`; errors point at the problem.

    >>> parse_expression("3*x**2 + x*y + 5*y**2").variables
    ('x', 'y')
    >>> parse_expression("__import__('os')")
    Traceback (most recent call last):
    ...
    adcompare.cli.expr.ExpressionError: unknown function; known functions are: ...
    """
    if len(text) > MAX_LENGTH:
        raise ExpressionError(
            f"the expression is {len(text)} characters long; at most {MAX_LENGTH} are accepted"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"cannot parse {text!r}: {error.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("cannot parse the expression: it is nested too deeply") from None
    names: list[str] = []
    _check(tree, text.strip(), names)
    if not names:
        raise ExpressionError(f"{text!r} has no variables to differentiate with respect to")
    return Expression(text.strip(), tuple(names), tree)


def parse_number(text: str, where: str = "", error=None) -> float:
    """``text`` as a finite float, or ``error`` (default :class:`ExpressionError`) saying
    that ``where`` + ``text`` is not one.

    >>> parse_number(" 2.5 "), parse_number("1e3", "x=")
    (2.5, 1000.0)
    """
    error = error or ExpressionError
    try:
        number = float(text)
    except ValueError:
        raise error(f"{where}{text.strip()!r} is not a number") from None
    if not np.isfinite(number):
        raise error(f"{where}{text.strip()} is not a finite number")
    return number


def parse_point(text: str, variables: tuple[str, ...] | None = None) -> dict[str, float]:
    """Parse ``"x=2,y=3"`` into ``{"x": 2.0, "y": 3.0}``, checking the variables.

    >>> parse_point("x=2, y=3", ("x", "y"))
    {'x': 2.0, 'y': 3.0}
    """
    point: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ExpressionError(f"cannot read {part!r}: write name=value, e.g. x=2,y=3")
        number = parse_number(value, f"{name}=")
        if name in point:
            raise ExpressionError(f"{name} is given twice; give each variable one value")
        point[name] = number
    if variables is not None:
        missing = [v for v in variables if v not in point]
        extra = [p for p in point if p not in variables]
        if missing:
            raise ExpressionError(
                f"no value given for {', '.join(missing)}; add e.g. {missing[0]}=1"
            )
        if extra:
            raise ExpressionError(
                f"{', '.join(extra)} not in the expression (its variables: {', '.join(variables)})"
            )
        point = {v: point[v] for v in variables}
    return point
