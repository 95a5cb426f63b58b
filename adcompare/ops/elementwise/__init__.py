"""Elementwise primitives with numpy broadcasting, one module per family.

:mod:`~.arithmetic` (``+ - * /``), :mod:`~.powers`, :mod:`~.exp_log`,
:mod:`~.trigonometric`, :mod:`~.hyperbolic`, :mod:`~.piecewise` (``abs``,
``maximum``, ``where``, ``clip``; its docstring gives the subgradient
conventions), :mod:`~.rounding` (and remainders), :mod:`~.conversions`;
:func:`unary` makes an op of one array from its slope. Importing the package
registers them all.
"""

from adcompare.ops.elementwise.arithmetic import (
    add,
    divide,
    multiply,
    negative,
    stop_gradient,
    subtract,
)
from adcompare.ops.elementwise.conversions import astype, nan_to_num
from adcompare.ops.elementwise.exp_log import (
    exp,
    exp2,
    expm1,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
)
from adcompare.ops.elementwise.hyperbolic import arccosh, arcsinh, arctanh, cosh, sinh, tanh
from adcompare.ops.elementwise.piecewise import abs, clip, fmax, fmin, maximum, minimum, where
from adcompare.ops.elementwise.powers import cbrt, power, reciprocal_sqrt, sqrt
from adcompare.ops.elementwise.rounding import ceil, floor, fmod, mod, round, sign, trunc
from adcompare.ops.elementwise.slopes import unary
from adcompare.ops.elementwise.trigonometric import (
    arccos,
    arcsin,
    arctan,
    arctan2,
    cos,
    hypot,
    sin,
    sinc,
    tan,
)

__all__ = [
    "abs",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "astype",
    "cbrt",
    "ceil",
    "clip",
    "cos",
    "cosh",
    "divide",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "nan_to_num",
    "negative",
    "power",
    "reciprocal_sqrt",
    "round",
    "sign",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "stop_gradient",
    "subtract",
    "tan",
    "tanh",
    "trunc",
    "unary",
    "where",
]
