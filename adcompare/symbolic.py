"""The symbolic interpreter: the op set run on SymPy expressions, exact derivatives.

A user function written against the op set runs unchanged on
:class:`Symbolic` values: scalar inputs become SymPy symbols named after the
function's parameters, array inputs become object arrays of symbols
(``x0, x1, ...``; ``w0_1`` for a matrix ``w``). Every op applies its record's
SymPy counterpart (``OpDef.sym``), so the output is an exact expression, and
SymPy's own differentiation, which knows nothing of the engines' rules, gives
the ground truth the engines are checked against.

Each :class:`Symbolic` value also carries its numeric value at the traced
point. Code that looks at values (``relu``'s ``x > 0``, ``where`` conditions
computed from the input, ``if`` statements, ``float(x)``) sees that point,
so the trace follows the same branch as the engines do there and the
derivative has the same subgradient convention; such a trace is marked
``point_dependent`` and is only reused at the same point. Traces that never
look at values are reused for every point of the same shapes.

Non-smooth ops follow the engines' conventions (``abs'(0) = 0``, a tie of
``maximum`` splits 1/2 each, ``clip`` has slope 1 on its closed interval),
with one exception: SymPy's ``Max``/``Min`` of three or more tied arguments
gives each 1/2, where the engines' ``max``/``min`` reductions give 1/k.

Differentiated expressions are compiled once into a flat numpy program (as
:func:`sympy.lambdify` does), so evaluating an exact derivative at many
points is fast once traced. Symbolic cost grows quickly with size: inputs,
outputs and work beyond :data:`LIMITS` are refused with a
:class:`SymbolicSizeError` instead of hanging.

The engines may also run *inside* a trace (``symbolic.trace(lambda x:
ad.grad(g)(x), x)``): their rules then act on symbols, which shows the
formula a mode computes.

>>> import adcompare as ad
>>> from adcompare import symbolic
>>> symbolic.trace(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
3*x**2 + x*y + 5*y**2
>>> print(symbolic.gradient(lambda x, y: 3 * x**2 + x * y + 5 * y**2, argnums=(0, 1))(2.0, 3.0))
(array(15.), array(32.))
>>> print(ad.grad(lambda x: ad.sum(ad.sin(x)), mode="symbolic")([0.0, 0.0]))
[1. 1.]
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import operator
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields

import numpy as np
import sympy
from sympy.functions.elementary.piecewise import ExprCondPair

from adcompare.engines.box import ArrayBox
from adcompare.engines.forward import as_float
from adcompare.ops import OpDef
from adcompare.ops.registry import Box, apply, new_level
from adcompare.pytree import argnum_positions
from adcompare.runtime.boxes import unbox
from adcompare.transforms import register_mode

__all__ = [
    "LIMITS",
    "ExpressionTooLargeError",
    "NoSymbolicCounterpartError",
    "SizeLimits",
    "Symbolic",
    "SymbolicSizeError",
    "Trace",
    "clear_cache",
    "formula",
    "gradient",
    "hessian",
    "jacobian",
    "record",
    "size_limit",
    "trace",
    "value_and_gradient",
]


# --- limits ------------------------------------------------------------------------


@dataclass
class SizeLimits:
    """How much symbolic work adcompare accepts before refusing.

    ``max_inputs``
        input elements traced as symbols, over all differentiated arguments;
    ``max_outputs``
        output elements;
    ``max_work``
        element-level op applications during one trace;
    ``max_entries``
        entries of one derivative (a Jacobian has outputs × inputs, a
        Hessian inputs × inputs);
    ``max_seconds``
        time spent differentiating and compiling one derivative, checked
        after each entry;
    ``max_expression_size``
        the size of one expression, counted as the trace grows: its
        operations written out as a tree (what SymPy's differentiation and
        printing walk), a product of k factors counting k² (the product
        rule builds k products of k factors). A recurrence ``v = sin(v)*v``
        doubles it at each step, although the shared graph grows by three
        nodes;
    ``max_derivative_size``
        the work of one derivative, predicted before it starts: the size of
        each expression times the number of inputs it is differentiated by;
    ``max_printed_size``
        the size of a formula printed as text; larger ones are summarised.

    Exceeding ``max_expression_size``, ``max_derivative_size`` or
    ``max_seconds`` raises :class:`ExpressionTooLargeError`.
    """

    max_inputs: int = 100
    max_outputs: int = 1000
    max_work: int = 100_000
    max_entries: int = 20_000
    max_seconds: float = 120.0
    max_expression_size: int = 50_000
    max_derivative_size: int = 500_000
    max_printed_size: int = 20_000


#: The limits in force; change them with :func:`size_limit` (or by assignment).
LIMITS = SizeLimits()


class SymbolicSizeError(ValueError):
    """A symbolic trace or derivative would exceed :data:`LIMITS`."""


class NoSymbolicCounterpartError(TypeError):
    """An op without a SymPy counterpart (``defop(..., sym=None)``) met symbolic mode."""


class ExpressionTooLargeError(SymbolicSizeError):
    """An expression or derivative too large (or too deep, or too slow) to differentiate
    exactly: compare against finite differences or the complex step instead."""


@contextlib.contextmanager
def size_limit(**limits) -> Iterator[SizeLimits]:
    """Change :data:`LIMITS` inside a ``with`` block (keyword names as its fields).

    >>> from adcompare import symbolic
    >>> with symbolic.size_limit(max_inputs=2):
    ...     symbolic.trace(lambda x: x, [1.0, 2.0, 3.0])
    Traceback (most recent call last):
    ...
    adcompare.symbolic.SymbolicSizeError: symbolic mode: 3 input elements exceed the limit of 2 ...
    """
    known = {f.name for f in fields(SizeLimits)}
    unknown = set(limits) - known
    if unknown:
        raise TypeError(
            f"size_limit: unknown limit(s) {', '.join(sorted(unknown))}; "
            f"the limits are {', '.join(sorted(known))}"
        )
    saved = {name: getattr(LIMITS, name) for name in limits}
    for name, value in limits.items():
        setattr(LIMITS, name, value)
    try:
        yield LIMITS
    finally:
        for name, value in saved.items():
            setattr(LIMITS, name, value)


_TOO_LARGE = ("max_seconds", "max_expression_size", "max_derivative_size")


def _too_large(detail: str) -> ExpressionTooLargeError:
    return ExpressionTooLargeError(
        f"symbolic mode: too large for exact differentiation ({detail}); use "
        "against='fd' or against='complex_step' (finite differences or the complex step) "
        "as the reference instead of SymPy"
    )


def _refuse(what: str, count: float, limit_name: str) -> None:
    limit = getattr(LIMITS, limit_name)
    if limit_name in _TOO_LARGE:
        raise _too_large(
            f"{what}: {count:g}, over the limit of {limit:g}, "
            f"adcompare.symbolic.LIMITS.{limit_name}"
        )
    raise SymbolicSizeError(
        f"symbolic mode: {count:g} {what} exceed the limit of {limit:g} "
        f"(adcompare.symbolic.LIMITS.{limit_name}). Symbolic expressions grow quickly "
        "with size, so adcompare refuses rather than hang: check a smaller instance, "
        f"raise the limit with `with adcompare.symbolic.size_limit({limit_name}=...)`, "
        "or compare against finite differences (against='fd')"
    )


# --- numbers and symbols -------------------------------------------------------------------

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


def _argument_names(f: Callable, nargs: int) -> list[str]:
    """Names for ``f``'s positional arguments: its parameter names where it has them."""
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


# --- the symbolic box ----------------------------------------------------------------------


class _TraceState:
    """What one trace shares among its values: work done, whether values were read."""

    __slots__ = ("point_dependent", "sizes", "work")

    def __init__(self):
        self.point_dependent = False
        self.work = 0
        self.sizes: dict = {}

    def charge(self, work: int) -> None:
        self.work += work
        if self.work > LIMITS.max_work:
            _refuse("element-level op applications", self.work, "max_work")

    def measure(self, exprs: np.ndarray) -> None:
        """Refuse when an element of ``exprs`` is larger than ``max_expression_size``."""
        for expr in exprs.ravel():
            size = _tree_size(expr, self.sizes)
            if size > LIMITS.max_expression_size:
                _refuse("the size of one expression", size, "max_expression_size")


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
    is long.

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


_POINT = operator.attrgetter("point")


class Symbolic(ArrayBox):
    """A SymPy expression (an object array of them) with its value at the traced point.

    Made by :func:`record` and the symbolic transforms; ops applied to it
    apply their SymPy counterparts. Reading its numeric value (comparisons,
    ``bool``, ``float``, ``raw``) marks the trace as valid at this point only.

    >>> from adcompare import symbolic
    >>> import adcompare as ad
    >>> t = symbolic.record(lambda x: ad.exp(x) * x, 0.5)
    >>> t.expressions
    x*exp(x)
    """

    __slots__ = ("_state", "expr", "point")

    @classmethod
    def _make(cls, expr: np.ndarray, point, state: _TraceState, level: int) -> Symbolic:
        self = object.__new__(cls)
        self.expr = expr
        self.point = point
        self._state = state
        self.level = level
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value."""
        return self.expr.shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the value at the traced point."""
        return np.result_type(self.point)

    @property
    def expression(self):
        """The value as a SymPy expression (``sympy.Array`` for arrays)."""
        return _to_sympy(self.expr)

    def raw_value(self):
        # Whoever reads the number may branch on it: the trace holds at this point only.
        self._state.point_dependent = True
        return self.point

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "converting a Symbolic value to a numpy array would drop its expression; "
            "use .expr for the SymPy expressions and .point for the value"
        )

    def __repr__(self) -> str:
        return f"Symbolic({self.expression})"

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        points = unbox(op, "Symbolic", Symbolic, args, level, _POINT)
        for p in points:
            if isinstance(p, Box):
                raise TypeError(
                    f"{op.name}: a symbolic value met a {type(p).__name__} from another "
                    "trace or transform; symbolic mode evaluates functions at plain numbers, "
                    "so call the symbolic transforms outside the others, not inside"
                )
        if op.sym is None:
            raise NoSymbolicCounterpartError(
                f"op {op.name!r} has no SymPy counterpart (defop(..., sym=...) gives it one), "
                "so symbolic mode cannot differentiate it; use against='complex_step' or 'fd'"
            )
        out_point = apply(op, tuple(points), params)
        out_shape = np.shape(out_point)
        exprs = [
            a.expr if isinstance(a, Symbolic) else _as_expr_array(p) for a, p in zip(args, points)
        ]
        self._state.charge(sum(e.size for e in exprs) + math.prod(out_shape))
        if op.elementwise:
            out_expr = _elementwise(op, exprs, params, out_shape)
        else:
            out_expr = _as_expr_array(op.sym(*exprs, **params))
        if out_expr.shape != out_shape:
            raise RuntimeError(
                f"the SymPy counterpart of op {op.name!r} gave shape {out_expr.shape}, but "
                f"the op's value has shape {out_shape}: the op record's sym is wrong"
            )
        self._state.measure(out_expr)
        return Symbolic._make(out_expr, out_point, self._state, level)


def _elementwise(op: OpDef, exprs: list, params: dict, shape: tuple) -> np.ndarray:
    """Apply an elementwise op's ``sym`` to each element, broadcasting like numpy.

    Array-valued static parameters (``where``'s condition, array bounds of
    ``clip``) are broadcast along with the arguments and passed per element.
    """
    arrays = [np.broadcast_to(e, shape) for e in exprs]
    scalar_params = {
        k: _to_sym(v) if isinstance(v, (float, np.floating)) else v
        for k, v in params.items()
        if np.ndim(v) == 0
    }
    array_params = {
        k: np.broadcast_to(np.asarray(v), shape) for k, v in params.items() if np.ndim(v) > 0
    }
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        element_params = {k: v[index] for k, v in array_params.items()}
        out[index] = _to_sym(op.sym(*[a[index] for a in arrays], **scalar_params, **element_params))
    return out


def _to_sympy(expr: np.ndarray):
    """An object array as SymPy sees it: the expression for 0-d, ``sympy.Array`` otherwise."""
    if expr.ndim == 0:
        return expr[()]
    return sympy.Array(expr.tolist(), expr.shape)


# --- evaluating expressions ----------------------------------------------------------------
#
# Expressions are compiled once into a flat program over numpy, walking the
# expression DAG so that a shared subexpression is evaluated once. This does
# what sympy.lambdify does, but lambdify prints the expression as a tree (which
# grows exponentially for deep DAGs) and rebuilds Max/Heaviside terms while
# printing (slow: each rebuild re-runs SymPy's simplification).


def _erf(x):
    if np.iscomplexobj(x):
        # Only a branch the point does not take can be complex here.
        return np.full(np.shape(x), np.nan)
    return np.vectorize(math.erf, otypes=[float])(x)


def _zeros(x, *rest):
    # DiracDelta: the derivative of sign and Heaviside. The engines treat sign(x)
    # as a constant (zero derivative, also at 0), and so does the reference.
    return np.zeros_like(np.asarray(x, dtype=np.float64))


def _sum(*args):
    return functools.reduce(np.add, args)


def _product(*args):
    return functools.reduce(np.multiply, args)


def _power(base, exponent):
    if np.ndim(exponent) == 0:
        if exponent == 0.5:
            return np.sqrt(base)
        if exponent == -0.5:
            return 1.0 / np.sqrt(base)
    return np.power(base, exponent)


def _piecewise(*pairs):
    """SymPy's Piecewise: the first ``(value, condition)`` pair whose condition holds."""
    shape = np.broadcast_shapes(*(np.shape(v) for pair in pairs for v in pair))
    chosen = np.full(shape, np.nan)
    for value, condition in reversed(pairs):
        chosen = np.where(condition, value, chosen)
    if np.iscomplexobj(chosen) and not np.any(chosen.imag):
        chosen = chosen.real  # a complex branch that was not taken
    return chosen[()] if chosen.ndim == 0 else chosen


_NUMPY = {
    sympy.Add: _sum,
    sympy.Mul: _product,
    sympy.Pow: _power,
    sympy.exp: np.exp,
    sympy.log: np.log,
    sympy.sin: np.sin,
    sympy.cos: np.cos,
    sympy.tan: np.tan,
    sympy.tanh: np.tanh,
    sympy.sinh: np.sinh,
    sympy.cosh: np.cosh,
    sympy.asin: np.arcsin,
    sympy.acos: np.arccos,
    sympy.atan: np.arctan,
    sympy.Abs: np.abs,
    sympy.sign: np.sign,
    sympy.erf: _erf,
    sympy.Max: lambda *a: functools.reduce(np.maximum, a),
    sympy.Min: lambda *a: functools.reduce(np.minimum, a),
    sympy.Heaviside: lambda x, at_zero=0.5: np.heaviside(x, at_zero),
    sympy.DiracDelta: _zeros,
    sympy.Piecewise: _piecewise,
    ExprCondPair: lambda value, condition: (value, condition),
    sympy.StrictGreaterThan: np.greater,
    sympy.StrictLessThan: np.less,
    sympy.GreaterThan: np.greater_equal,
    sympy.LessThan: np.less_equal,
    sympy.Equality: np.equal,
    sympy.Unequality: np.not_equal,
    sympy.And: lambda *a: functools.reduce(np.logical_and, a),
    sympy.Or: lambda *a: functools.reduce(np.logical_or, a),
    sympy.Not: np.logical_not,
}


def _numeric_function(node) -> Callable:
    """The numpy function for one node's head (SymPy's own printer for rare ones)."""
    fn = _NUMPY.get(node.func)
    if fn is not None:
        return fn
    return _printed_function(node.func, len(node.args))


@functools.lru_cache(maxsize=256)
def _printed_function(head, nargs: int) -> Callable:
    dummies = sympy.symbols(f"_a0:{nargs}", cls=sympy.Dummy)
    # scipy evaluates the special functions (gamma, polygamma, Bessel) numpy lacks.
    return sympy.lambdify(dummies, head(*dummies), modules=["scipy", "numpy"])


def _constant(node):
    """The number a node stands for (it has no symbols), or None if it is not a number."""
    if node is sympy.true or node is sympy.false:
        return bool(node)
    if node.is_Number or node.is_NumberSymbol:
        return np.nan if node is sympy.zoo else float(node)
    if getattr(node, "is_number", False):
        # Numbers written with I, like sqrt(-1/2) in a Piecewise branch that the
        # point does not take: kept complex, so they never pass for real values.
        try:
            value = complex(node)
        except TypeError:
            return np.nan
        return value.real if value.imag == 0 else value
    return None


def _real(value) -> float:
    """A computed output as a real number: NaN if it came out genuinely complex."""
    if isinstance(value, complex) or np.iscomplexobj(value):
        return float(np.real(value)) if np.imag(value) == 0 else np.nan
    return value


class _Program:
    """Expressions compiled to a list of numpy calls over numbered slots."""

    def __init__(self, symbols: Sequence, exprs: np.ndarray):
        slots: dict = {s: i for i, s in enumerate(symbols)}
        self.constants: list[tuple[int, object]] = []
        self.steps: list[tuple[Callable, tuple[int, ...], int]] = []
        self.n_inputs = len(symbols)
        self.shape = exprs.shape
        clock = _Clock()
        for root in exprs.ravel():
            # Post-order walk without recursion: deep expressions are fine.
            stack = [(root, False)]
            while stack:
                node, expanded = stack.pop()
                if node in slots:
                    continue
                value = _constant(node)
                if value is not None:
                    slots[node] = len(slots)
                    self.constants.append((slots[node], value))
                    continue
                if not node.args:
                    raise ValueError(
                        f"symbolic evaluation: {node} is not an input of the traced function"
                    )
                if not expanded:
                    stack.append((node, True))
                    stack.extend((a, False) for a in node.args if a not in slots)
                    continue
                slots[node] = len(slots)
                args = tuple(slots[a] for a in node.args)
                self.steps.append((_numeric_function(node), args, slots[node]))
            clock.check()
        self.n_slots = len(slots)
        self.outputs = [slots[e] for e in exprs.ravel()]

    def __call__(self, values: Sequence) -> np.ndarray:
        memory: list = [None] * self.n_slots
        memory[: self.n_inputs] = values
        for slot, value in self.constants:
            memory[slot] = value
        for fn, args, out in self.steps:
            value = fn(*[memory[a] for a in args])
            if np.iscomplexobj(value) and not np.any(np.imag(value)):
                value = np.real(value)  # complex constants that cancelled
            memory[out] = value
        result = np.array([_real(memory[slot]) for slot in self.outputs], dtype=np.float64)
        return result.reshape(self.shape)


# --- traces --------------------------------------------------------------------------------


class Trace:
    """A function traced on symbols: its inputs, output expressions, and derivatives.

    ``symbols`` holds an object array of symbols per traced argument
    position (``positions``), ``output`` the output's object array (a tuple
    of them for tuple outputs). Derivative expressions are computed on
    demand and remembered, as are their compiled evaluators.

    >>> from adcompare import symbolic
    >>> t = symbolic.record(lambda x, y: x**2 * y, 2.0, 3.0)
    >>> t.gradient_expressions(0), t.hessian_expressions(0, 1)
    (2*x*y, 2*x)
    """

    def __init__(self, name, positions, symbols, output, point_dependent, work, sizes=None):
        self.name = name
        self._sizes: dict = {} if sizes is None else sizes
        self.positions: tuple[int, ...] = positions
        self.symbols: dict[int, np.ndarray] = symbols
        self.output = output
        self.point_dependent: bool = point_dependent
        self.work: int = work
        self._flat_symbols = [s for p in positions for s in symbols[p].ravel()]
        self._jacobians: dict[int, np.ndarray] = {}
        self._hessians: dict[tuple[int, int], np.ndarray] = {}
        self._compiled: dict = {}

    def __repr__(self) -> str:
        shape = tuple(o.shape for o in self.output) if self._tuple else self.output.shape
        note = ", point-dependent" if self.point_dependent else ""
        return (
            f"<symbolic Trace of {self.name}: {len(self._flat_symbols)} symbol(s), "
            f"output shape {shape}{note}>"
        )

    @property
    def _tuple(self) -> bool:
        return isinstance(self.output, tuple)

    @property
    def expressions(self):
        """The output as SymPy expression(s): an expression, a ``sympy.Array``, or a tuple."""
        if self._tuple:
            return tuple(_to_sympy(o) for o in self.output)
        return _to_sympy(self.output)

    def _single_output(self, what: str) -> np.ndarray:
        if self._tuple:
            raise TypeError(
                f"{what}: the function returned a tuple; return a single array "
                "(stack or concatenate the outputs)"
            )
        return self.output

    def _check_position(self, position: int) -> None:
        if position not in self.symbols:
            raise ValueError(
                f"argument {position} was not traced as symbols (traced: {self.positions}); "
                "record the trace with that position in argnums"
            )

    # --- derivative expressions ----------------------------------------------------------
    def jacobian_array(self, position: int) -> np.ndarray:
        """d output / d argument, an object array of shape ``out.shape + x.shape``."""
        self._check_position(position)
        if position not in self._jacobians:
            output = self._single_output("jacobian")
            symbols = self.symbols[position]
            entries = output.size * symbols.size
            if entries > LIMITS.max_entries:
                _refuse("Jacobian entries", entries, "max_entries")
            self._predict(output, symbols)
            clock = _Clock()
            jac = np.empty(output.shape + symbols.shape, dtype=object)
            for out_index in np.ndindex(output.shape):
                expr = output[out_index]
                free = expr.free_symbols
                for in_index in np.ndindex(symbols.shape):
                    s = symbols[in_index]
                    jac[out_index + in_index] = (
                        _differentiate(expr, s) if s in free else sympy.Integer(0)
                    )
                    clock.check()
            self._jacobians[position] = jac
        return self._jacobians[position]

    def hessian_array(self, first: int, second: int) -> np.ndarray:
        """d² output / d x_first d x_second for a scalar output, shape ``x1.shape + x2.shape``.

        Mixed partials are computed once (the upper triangle) and mirrored.
        """
        if (first, second) not in self._hessians:
            if (second, first) in self._hessians:
                other = self._hessians[second, first]
                n = self.symbols[second].ndim
                axes = tuple(range(n, other.ndim)) + tuple(range(n))
                return np.transpose(other, axes)
            output = self._single_output("hessian")
            if output.size != 1:
                raise ValueError(
                    f"hessian needs a function with a scalar output, but this one returned "
                    f"shape {output.shape}; use the Jacobian of its Jacobian for array outputs"
                )
            self._check_position(second)
            grad = self.jacobian_array(first).reshape(self.symbols[first].shape)
            symbols = self.symbols[second]
            entries = grad.size * symbols.size
            if entries > LIMITS.max_entries:
                _refuse("Hessian entries", entries, "max_entries")
            flat_grad, flat_symbols = grad.ravel(), symbols.ravel()
            same = first == second
            self._predict(grad, symbols, half=same)
            hess = np.empty((grad.size, symbols.size), dtype=object)
            clock = _Clock()
            for i, g in enumerate(flat_grad):
                free = g.free_symbols
                for j, s in enumerate(flat_symbols):
                    if same and j < i:
                        hess[i, j] = hess[j, i]
                    else:
                        hess[i, j] = _differentiate(g, s) if s in free else sympy.Integer(0)
                    clock.check()
            self._hessians[first, second] = hess.reshape(grad.shape + symbols.shape)
        return self._hessians[first, second]

    def _predict(self, exprs: np.ndarray, symbols: np.ndarray, half: bool = False) -> None:
        """Refuse before differentiating ``exprs`` by ``symbols`` when the predicted work
        (each expression's size times the symbols it holds) exceeds ``max_derivative_size``."""
        wanted = set(symbols.ravel())
        work = 0
        for expr in exprs.ravel():
            work += _tree_size(expr, self._sizes) * len(expr.free_symbols & wanted)
        if half:
            work //= 2
        if work > LIMITS.max_derivative_size:
            _refuse("the predicted work of a derivative", work, "max_derivative_size")

    def gradient_expressions(self, position: int = 0):
        """The gradient of a scalar output as SymPy expression(s)."""
        output = self._single_output("gradient")
        _check_scalar(output.shape)
        return _to_sympy(self.jacobian_array(position).reshape(self.symbols[position].shape))

    def jacobian_expressions(self, position: int = 0):
        """The Jacobian as a SymPy expression or ``sympy.Array``."""
        return _to_sympy(self.jacobian_array(position))

    def hessian_expressions(self, first: int = 0, second: int | None = None):
        """The Hessian block d²f / dx_first dx_second as SymPy expression(s)."""
        return _to_sympy(self.hessian_array(first, first if second is None else second))

    # --- numeric evaluation ---------------------------------------------------------------
    def evaluate(self, key, args: Sequence) -> np.ndarray:
        """Evaluate derivative ``key`` (``"value"``, ``("jacobian", p)``, ``("hessian", p, q)``)
        at the traced positions of ``args``, in float64."""
        if key == "value":
            exprs = self._single_output("value")
        elif key[0] == "jacobian":
            exprs = self.jacobian_array(key[1])
        else:
            exprs = self.hessian_array(key[1], key[2])
        if key not in self._compiled:
            self._compiled[key] = _Program(self._flat_symbols, exprs)
        values = []
        for p in self.positions:
            values.extend(np.asarray(args[p], dtype=np.float64).ravel())
        with np.errstate(all="ignore"):
            return self._compiled[key](values)


class _Clock:
    """Refuses when differentiating or compiling takes longer than ``max_seconds``."""

    def __init__(self):
        self.start = time.perf_counter()

    def check(self) -> None:
        elapsed = time.perf_counter() - self.start
        if elapsed > LIMITS.max_seconds:
            _refuse("seconds spent differentiating", round(elapsed, 1), "max_seconds")


def _check_scalar(shape: tuple) -> None:
    if math.prod(shape) != 1:
        raise ValueError(
            f"grad needs a function with a scalar output, but this one returned shape "
            f"{shape}; use adcompare.jacobian (or symbolic.jacobian) for array outputs, "
            "or reduce the output (e.g. with sum) first"
        )


def _is_traceable(value) -> bool:
    """Whether an argument is traced as symbols by default: real floating numbers."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, np.floating)):
        return True
    try:
        kind = np.asarray(value).dtype
    except (TypeError, ValueError):
        return False
    return np.issubdtype(kind, np.floating)


def _positions(argnums, args: tuple, name: str) -> tuple[int, ...]:
    nargs = len(args)
    if argnums is None:
        return tuple(i for i, a in enumerate(args) if _is_traceable(a))
    return tuple(dict.fromkeys(argnum_positions(argnums, nargs, name)))


def _traced_point(value, position: int):
    if isinstance(value, Box):
        raise TypeError(
            f"symbolic mode evaluates at plain numbers, but argument {position} is a "
            f"{type(value).__name__}; call the symbolic transforms outside the other "
            "transforms (nesting a symbolic derivative inside jacfwd or grad is not supported)"
        )
    point = as_float(value)
    if np.issubdtype(point.dtype, np.complexfloating):
        raise TypeError(f"symbolic mode takes real inputs; argument {position} is complex")
    return point


def _record(f: Callable, args: tuple, positions: tuple[int, ...]) -> Trace:
    points = {p: _traced_point(args[p], p) for p in positions}
    total = sum(point.size for point in points.values())
    if total > LIMITS.max_inputs:
        _refuse("input elements", total, "max_inputs")
    names = _argument_names(f, len(args))
    bases = _unique_bases(names, {p: point.shape for p, point in points.items()})
    level = new_level()
    state = _TraceState()
    symbols = {}
    call_args = list(args)
    for p, point in points.items():
        symbols[p] = _symbol_array(bases[p], point.shape)
        call_args[p] = Symbolic._make(symbols[p], point, state, level)
    out = f(*call_args)
    if out is None:
        raise TypeError(
            "symbolic mode: the function returned None; did it forget a `return`? Return the "
            "value to differentiate (an output that does not depend on the inputs is fine)"
        )
    if isinstance(out, (tuple, list)):
        output = tuple(_output_exprs(o, level) for o in out)
        size = sum(o.size for o in output)
    else:
        output = _output_exprs(out, level)
        size = output.size
    if size > LIMITS.max_outputs:
        _refuse("output elements", size, "max_outputs")
    name = getattr(f, "__name__", type(f).__name__)
    return Trace(name, positions, symbols, output, state.point_dependent, state.work, state.sizes)


def _output_exprs(out, level: int) -> np.ndarray:
    if isinstance(out, Symbolic) and out.level == level:
        return out.expr
    if isinstance(out, Box):
        raise TypeError(
            f"symbolic mode: the function returned a {type(out).__name__} from another "
            "transform; return values computed from the inputs"
        )
    return _as_expr_array(as_float(out))


# --- caching ------------------------------------------------------------------------------

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHE_SIZE = 32


class _ByPoint(OrderedDict):
    """Traces of a point-dependent function, one per point (least recently used dropped)."""


def _fingerprint(value):
    """A hashable summary of a constant argument, or None if it has none."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return None
        return ("array", value.shape, value.dtype.str, value.tobytes())
    try:
        hash(value)
    except TypeError:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            return None
        return None if array.dtype == object else _fingerprint(array)
    return ("value", type(value).__name__, value)


def _cache_key(args: tuple, positions: tuple[int, ...]):
    parts = []
    for i, a in enumerate(args):
        if i in positions:
            point = np.asarray(a)
            parts.append(("symbols", point.shape, as_float(point).dtype.str))
        else:
            fingerprint = _fingerprint(a)
            if fingerprint is None:
                return None
            parts.append(fingerprint)
    return (positions, tuple(parts))


def _point_key(args: tuple, positions: tuple[int, ...]):
    return tuple(_fingerprint(as_float(args[p])) for p in positions)


def _remember(store: OrderedDict, key, value) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > _CACHE_SIZE:
        store.popitem(last=False)


def _trace_for(f: Callable, args: tuple, positions: tuple[int, ...]) -> Trace:
    """The trace of ``f`` at ``args``: cached per function, shapes and constants."""
    for p in positions:
        _traced_point(args[p], p)  # refuse boxes and complex numbers before anything else
    try:
        entries = _CACHE.get(f)
        if entries is None:
            entries = _CACHE[f] = OrderedDict()
    except TypeError:
        entries = None
    key = _cache_key(args, positions) if entries is not None else None
    if key is not None and key in entries:
        hit = entries[key]
        entries.move_to_end(key)
        if isinstance(hit, Trace):
            return hit
        point_key = _point_key(args, positions)
        if point_key in hit:
            hit.move_to_end(point_key)
            return hit[point_key]
    traced = _record(f, args, positions)
    if key is not None:
        if not traced.point_dependent:
            _remember(entries, key, traced)
        else:
            by_point = entries.get(key)
            if not isinstance(by_point, _ByPoint):
                by_point = _ByPoint()
                _remember(entries, key, by_point)
            _remember(by_point, _point_key(args, positions), traced)
    return traced


def clear_cache(f: Callable | None = None) -> None:
    """Forget the cached traces of ``f`` (of every function if omitted).

    Traces are cached per function object, argument shapes and constant
    arguments; a function whose behaviour changes (it reads a global that
    changed) needs its cache cleared, as with ``jax.jit``.
    """
    if f is None:
        _CACHE.clear()
    else:
        with contextlib.suppress(TypeError):
            _CACHE.pop(f, None)


# --- the public face -----------------------------------------------------------------------


def record(f: Callable, *example_args, argnums=None) -> Trace:
    """Trace ``f`` on symbols at ``example_args`` and return the :class:`Trace`.

    ``argnums`` chooses the arguments that become symbols; by default every
    real floating argument does (integer and boolean arrays stay constants,
    so they may index or select). Values that ``f`` reads decide branches
    at ``example_args``; see the module documentation.

    >>> from adcompare import symbolic
    >>> symbolic.record(lambda w: w @ w, [[1.0, 2.0], [3.0, 4.0]]).expressions
    [[w0_0**2 + w0_1*w1_0, w0_0*w0_1 + w0_1*w1_1], [w0_0*w1_0 + w1_0*w1_1, w0_1*w1_0 + w1_1**2]]
    """
    return _trace_for(f, example_args, _positions(argnums, example_args, "record"))


def trace(f: Callable, *example_args, argnums=None):
    """The output of ``f`` as SymPy expression(s), traced at ``example_args``.

    A scalar output gives an expression, an array output a ``sympy.Array``,
    a tuple of outputs a tuple.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> symbolic.trace(lambda x: ad.sum(ad.exp(x)), [0.0, 1.0])
    exp(x0) + exp(x1)
    """
    return record(f, *example_args, argnums=argnums).expressions


def _many(argnums) -> bool:
    return isinstance(argnums, (tuple, list))


def _result_dtype(args, positions):
    kinds = [np.result_type(as_float(args[p])) for p in positions]
    return np.result_type(*kinds) if kinds else np.float64


def value_and_gradient(f: Callable, argnums=0) -> Callable:
    """A function returning ``(f(*args), gradient)``, both exact (compiled SymPy).

    >>> from adcompare import symbolic
    >>> value, g = symbolic.value_and_gradient(lambda x: x**3)(2.0)
    >>> print(value, g)
    8.0 12.0
    """

    @functools.wraps(f)
    def value_and_exact_gradient(*args):
        positions = _positions(argnums, args, "grad")
        traced = _trace_for(f, args, positions)
        output = traced._single_output("grad")
        _check_scalar(output.shape)
        dtype = _result_dtype(args, positions)
        value = traced.evaluate("value", args).astype(dtype)
        grads = [
            traced.evaluate(("jacobian", p), args).reshape(np.shape(args[p])).astype(dtype)
            for p in positions
        ]
        return value, (tuple(grads) if _many(argnums) else grads[0])

    return value_and_exact_gradient


def gradient(f: Callable, argnums=0) -> Callable:
    """The exact gradient of a scalar-valued ``f``, like ``grad(f, mode="symbolic")``.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> print(symbolic.gradient(lambda x: ad.sum(x**2))([1.0, 2.0]))
    [2. 4.]
    """
    value_and_exact_gradient = value_and_gradient(f, argnums)

    @functools.wraps(f)
    def exact_gradient(*args):
        return value_and_exact_gradient(*args)[1]

    return exact_gradient


def jacobian(f: Callable, argnums=0) -> Callable:
    """The exact Jacobian, shaped ``out.shape + x.shape`` like ``jacfwd``/``jacrev``.

    >>> from adcompare import symbolic
    >>> print(symbolic.jacobian(lambda x: x**2)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def exact_jacobian(*args):
        positions = _positions(argnums, args, "jacobian")
        traced = _trace_for(f, args, positions)
        traced._single_output("jacobian")
        dtype = _result_dtype(args, positions)
        jacobians = [traced.evaluate(("jacobian", p), args).astype(dtype) for p in positions]
        return tuple(jacobians) if _many(argnums) else jacobians[0]

    return exact_jacobian


def hessian(f: Callable, argnums=0) -> Callable:
    """The exact Hessian of a scalar-valued ``f``, shaped ``x.shape + x.shape``.

    With a tuple ``argnums`` the result is a tuple of tuples of blocks:
    ``result[i][j]`` is d²f / d args[argnums[i]] d args[argnums[j]], as in JAX.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> print(symbolic.hessian(lambda x: ad.sum(x**3))([1.0, 2.0]))
    [[ 6.  0.]
     [ 0. 12.]]
    >>> h = symbolic.hessian(lambda x, y: x**2 * y, argnums=(0, 1))(2.0, 3.0)
    >>> print(h[0][0], h[0][1], h[1][1])
    6.0 4.0 0.0
    """

    @functools.wraps(f)
    def exact_hessian(*args):
        positions = _positions(argnums, args, "hessian")
        traced = _trace_for(f, args, positions)
        dtype = _result_dtype(args, positions)
        blocks = tuple(
            tuple(traced.evaluate(("hessian", p, q), args).astype(dtype) for q in positions)
            for p in positions
        )
        return blocks if _many(argnums) else blocks[0][0]

    return exact_hessian


register_mode("symbolic", value_and_grad=value_and_gradient, jacobian=jacobian, hessian=hessian)
