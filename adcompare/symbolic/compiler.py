"""Expressions compiled once into a flat program over numpy.

The program walks the expression DAG, so a shared subexpression is evaluated
once. This does what sympy.lambdify does, but lambdify prints the expression
as a tree (which grows exponentially for deep DAGs) and rebuilds
Max/Heaviside terms while printing (slow: each rebuild re-runs SymPy's
simplification).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
import sympy
from sympy.functions.elementary.piecewise import ExprCondPair

from adcompare.symbolic.deadline import deadline


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
        with deadline("compiling to numpy") as clock:
            for root in exprs.ravel():
                self._add(root, slots)
                clock.check()
        self.n_slots = len(slots)
        self.outputs = [slots[e] for e in exprs.ravel()]

    def _add(self, root, slots: dict) -> None:
        """Append the steps computing ``root`` and the subexpressions not yet in ``slots``."""
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
