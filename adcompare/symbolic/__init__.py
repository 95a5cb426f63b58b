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

The package's modules: :mod:`~adcompare.symbolic.limits` (what is accepted),
:mod:`~adcompare.symbolic.deadline` (SymPy's time bounded),
:mod:`~adcompare.symbolic.expressions` (numbers, symbols, sizes, printing),
:mod:`~adcompare.symbolic.box` (the :class:`Symbolic` box),
:mod:`~adcompare.symbolic.recording` (tracing and its cache),
:mod:`~adcompare.symbolic.trace` (derivative expressions),
:mod:`~adcompare.symbolic.compiler` (SymPy to numpy) and
:mod:`~adcompare.symbolic.transforms` (the exact transforms).

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

from adcompare.symbolic.box import Symbolic
from adcompare.symbolic.deadline import time_budget
from adcompare.symbolic.expressions import argument_names, formula
from adcompare.symbolic.limits import (
    LIMITS,
    ExpressionTooLargeError,
    NoSymbolicCounterpartError,
    SizeLimits,
    SymbolicSizeError,
    SymbolicTimeoutError,
    size_limit,
)
from adcompare.symbolic.recording import argument_positions, clear_cache
from adcompare.symbolic.trace import Trace
from adcompare.symbolic.transforms import (
    gradient,
    hessian,
    jacobian,
    record,
    trace,
    value_and_gradient,
)
from adcompare.transforms import register_mode

__all__ = [
    "LIMITS",
    "ExpressionTooLargeError",
    "NoSymbolicCounterpartError",
    "SizeLimits",
    "Symbolic",
    "SymbolicSizeError",
    "SymbolicTimeoutError",
    "Trace",
    "argument_names",
    "argument_positions",
    "clear_cache",
    "formula",
    "gradient",
    "hessian",
    "jacobian",
    "record",
    "size_limit",
    "time_budget",
    "trace",
    "value_and_gradient",
]


register_mode("symbolic", value_and_grad=value_and_gradient, jacobian=jacobian, hessian=hessian)
