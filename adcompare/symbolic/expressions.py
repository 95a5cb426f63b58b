"""SymPy objects from numbers, symbols named after arguments, and an expression's size."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence

import numpy as np
import sympy

from adcompare.symbolic.deadline import deadline
from adcompare.symbolic.limits import LIMITS, _too_large

_DYADIC = 1024  # floats k / 1024 become exact rationals (0.5 prints as 1/2)


def _to_sym(value):
    """A number (or SymPy object) as a SymPy object, never by parsing text."""
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, (bool, np.bool_)):
        return sympy.Integer(int(value))
    if isinstance(value, (int, np.integer)):
        return sympy.Integer(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        return _to_sym(value.real) + sympy.I * _to_sym(value.imag)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return sympy.nan
        if math.isinf(value):
            return sympy.oo if value > 0 else -sympy.oo
        scaled = value * _DYADIC
        if abs(value) < 2**53 and scaled.is_integer():
            return sympy.Rational(int(scaled), _DYADIC)
        return sympy.Float(value)
    raise TypeError(
        f"symbolic mode: cannot use a {type(value).__name__} as a number in an expression"
    )


_to_sym_elementwise = np.frompyfunc(_to_sym, 1, 1)


def _as_expr_array(value) -> np.ndarray:
    """Any array-like of numbers or SymPy objects as an object array of SymPy objects."""
    if isinstance(value, sympy.Basic):
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    array = np.asarray(value, dtype=object)
    converted = _to_sym_elementwise(array)
    if isinstance(converted, np.ndarray):
        return converted.astype(object, copy=False)
    out = np.empty((), dtype=object)
    out[()] = converted
    return out


def _element_name(base: str, index: tuple[int, ...]) -> str:
    """``x`` for a scalar, ``x0`` / ``x0_1`` for elements (``arg2_0`` after a digit)."""
    if not index:
        return base
    separator = "_" if base[-1].isdigit() else ""
    return base + separator + "_".join(map(str, index))


def _symbol_array(base: str, shape: tuple[int, ...]) -> np.ndarray:
    """Real symbols for an argument: ``x`` for a scalar, ``x0, x1`` or ``x0_1`` for arrays."""
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        out[index] = sympy.Symbol(_element_name(base, index), real=True)
    return out


def argument_names(f: Callable, nargs: int) -> list[str]:
    """Names for ``f``'s ``nargs`` positional arguments: its parameter names where it has
    them (and they are identifiers), ``arg0``, ``arg1``, ... elsewhere. Symbols are named
    after them.

    >>> from adcompare import symbolic
    >>> symbolic.argument_names(lambda x, y: x * y, 3)
    ['x', 'y', 'arg2']
    """
    names: list[str] = []
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    for parameter in parameters:
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        names.append(parameter.name)
    names = names[:nargs]
    names += [f"arg{i}" for i in range(len(names), nargs)]
    return [n if n.isidentifier() else f"arg{i}" for i, n in enumerate(names)]


def _unique_bases(names: Sequence[str], shapes: dict[int, tuple]) -> dict[int, str]:
    """A symbol base per traced position such that no two symbols share a name."""
    taken: set[str] = set()
    bases = {}
    for position, shape in shapes.items():
        base = names[position]
        while True:
            symbol_names = {_element_name(base, index) for index in np.ndindex(shape)}
            if not symbol_names & taken:
                break
            base += "_"
        taken |= symbol_names
        bases[position] = base
    return bases


def _tree_size(expr, sizes: dict) -> int:
    """The size of ``expr`` (see :class:`SizeLimits`): its operations written out as a
    tree, as printing and SymPy's ``diff`` walk it, a product of k factors counting k².
    Computed on the shared graph; ``sizes`` remembers every node seen.

    >>> x = sympy.Symbol("x")
    >>> v = x
    >>> for _ in range(30):
    ...     v = sympy.sin(v) * v
    >>> _tree_size(v, {}) > 2**30
    True
    """
    if expr in sizes:
        return sizes[expr]
    stack = [expr]
    while stack:
        node = stack[-1]
        if node in sizes:
            stack.pop()
            continue
        pending = [a for a in node.args if a not in sizes]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        k = len(node.args)
        own = k * k if isinstance(node, sympy.Mul) else max(k, 1)
        sizes[node] = own + sum(sizes[a] for a in node.args)
    return sizes[expr]


def formula(expr, limit: int | None = None) -> str:
    """``expr`` as text, or a one-line summary when its size (see
    :class:`SizeLimits`) exceeds ``limit`` (default :data:`LIMITS`
    ``.max_printed_size``): printing is as slow as the expression written out
    is long. Printing that takes longer than ``LIMITS.max_seconds`` raises
    :class:`~adcompare.symbolic.ExpressionTooLargeError`.

    >>> x = sympy.Symbol("x")
    >>> formula(sympy.sin(x) * x)
    'x*sin(x)'
    >>> formula(sympy.sin(x) * x, limit=2)
    '(a formula of size 7, too long to print)'
    """
    limit = LIMITS.max_printed_size if limit is None else limit
    sizes: dict = {}
    size = sum(_tree_size(e, sizes) for e in np.asarray(expr, dtype=object).ravel())
    if size > limit:
        return f"(a formula of size {size}, too long to print)"
    try:
        with deadline("printing a formula"):
            return str(expr)
    except RecursionError:
        return f"(a formula of size {size}, nested too deeply to print)"


def _differentiate(expr, symbol):
    """SymPy's derivative, with its recursion limit reported as an expression too deep."""
    try:
        return expr.diff(symbol)
    except RecursionError:
        raise _too_large(
            "the expression is nested more deeply than SymPy's recursive differentiation "
            "reaches within Python's recursion limit"
        ) from None


def _to_sympy(expr: np.ndarray):
    """An object array as SymPy sees it: the expression for 0-d, ``sympy.Array`` otherwise."""
    if expr.ndim == 0:
        return expr[()]
    return sympy.Array(expr.tolist(), expr.shape)
