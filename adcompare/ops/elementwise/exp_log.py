"""Exponentials and logarithms, and the log of a sum of exponentials."""

from __future__ import annotations

import builtins
import math

import numpy as np
import sympy

from adcompare.ops.elementwise.slopes import unary
from adcompare.ops.registry import HOLOMORPHIC, REAL_ONLY, defop

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

exp = unary(
    "exp",
    np.exp,
    replay=math.exp,
    complex=HOLOMORPHIC,
    method="exp",
    sym=sympy.exp,
    slope=lambda out, x: out,
    special=(0.0,),
    doc="Exponential, elementwise.",
    example="exp(0.0) -> 1.0",
)

log = unary(
    "log",
    np.log,
    replay=math.log,
    complex=HOLOMORPHIC,
    domain=(0.1, 3.0),
    method="log",
    sym=sympy.log,
    reciprocal_slope=lambda out, x: x,
    special=(1.0,),
    doc="Natural logarithm, elementwise.",
    example="log(1.0) -> 0.0",
)

log1p = unary(
    "log1p",
    np.log1p,
    replay=math.log1p,
    complex=HOLOMORPHIC,
    domain=(-0.5, 2.0),
    method="log1p",
    label="Log1p",
    sym=lambda x: sympy.log(1 + x),
    reciprocal_slope=lambda out, x: 1.0 + x,
    special=(0.0,),
    doc="``log(1 + x)``, accurate for small ``x``.",
    example="log1p(0.0) -> 0.0",
)

expm1 = unary(
    "expm1",
    np.expm1,
    replay=math.expm1,
    complex=HOLOMORPHIC,
    method="expm1",
    label="Expm1",
    sym=lambda x: sympy.exp(x) - 1,
    slope=lambda out, x: out + 1.0,
    special=(0.0,),
    doc="``exp(x) - 1``, accurate for small ``x``.",
    example="expm1(0.0) -> 0.0",
)

exp2 = unary(
    "exp2",
    np.exp2,
    lambda out, x: out * _LN2,
    sym=lambda x: 2**x,
    replay=lambda x: 2.0**x,
    complex=HOLOMORPHIC,
    saves=("out",),
    special=(0.0,),
    doc="``2**x``, elementwise.",
    example="exp2(3.0) -> 8.0",
)

log2 = unary(
    "log2",
    np.log2,
    lambda out, x: 1.0 / (x * _LN2),
    sym=lambda x: sympy.log(x) / sympy.log(2),
    replay=math.log2,
    complex=HOLOMORPHIC,
    domain=(0.1, 3.0),
    special=(1.0,),
    doc="Base-2 logarithm, elementwise.",
    example="log2(8.0) -> 3.0",
)

log10 = unary(
    "log10",
    np.log10,
    lambda out, x: 1.0 / (x * _LN10),
    sym=lambda x: sympy.log(x) / sympy.log(10),
    replay=math.log10,
    complex=HOLOMORPHIC,
    domain=(0.1, 3.0),
    special=(1.0,),
    doc="Base-10 logarithm, elementwise.",
    example="log10(100.0) -> 2.0",
)


def _log_of_sum(name, value, power, **fields):
    """``log(b**x + b**y)`` in the base ``b`` of ``power`` (``exp``, ``exp2``), elementwise.

    Each slope is a softmax weight, ``power(x - out) <= 1``: no overflow for large ``x``.
    """
    return defop(
        name,
        value,
        complex=REAL_ONLY,
        nargs=2,
        elementwise=True,
        domain=(-3.0, 3.0),
        slope=(
            lambda out, x, y: power(x - out),
            lambda out, x, y: power(y - out),
        ),
        **fields,
    )


def _logaddexp(x: float, y: float) -> float:
    if x == y:
        return x + _LN2
    return builtins.max(x, y) + math.log1p(math.exp(-builtins.abs(x - y)))


logaddexp = _log_of_sum(
    "logaddexp",
    np.logaddexp,
    exp,
    replay=_logaddexp,
    sym=lambda x, y: sympy.log(sympy.exp(x) + sympy.exp(y)),
    special=((0.0, 0.0),),
    doc="``log(exp(x) + exp(y))``, elementwise, without overflow.",
    example="logaddexp(0.0, 0.0) -> 0.6931471805599453",
)


def _logaddexp2(x: float, y: float) -> float:
    if x == y:
        return x + 1.0
    return builtins.max(x, y) + math.log1p(2.0 ** -builtins.abs(x - y)) / _LN2


logaddexp2 = _log_of_sum(
    "logaddexp2",
    np.logaddexp2,
    exp2,
    replay=_logaddexp2,
    sym=lambda x, y: sympy.log(2**x + 2**y) / sympy.log(2),
    doc="``log2(2**x + 2**y)``, elementwise, without overflow.",
    example="logaddexp2(1.0, 1.0) -> 2.0",
)
