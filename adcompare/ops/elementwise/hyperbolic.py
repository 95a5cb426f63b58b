"""Hyperbolic functions and their inverses."""

from __future__ import annotations

import math

import numpy as np
import sympy

from adcompare.ops.elementwise.powers import reciprocal_sqrt
from adcompare.ops.elementwise.slopes import unary
from adcompare.ops.registry import HOLOMORPHIC

tanh = unary(
    "tanh",
    np.tanh,
    replay=math.tanh,
    complex=HOLOMORPHIC,
    domain=(-3.0, 3.0),
    method="tanh",
    sym=sympy.tanh,
    slope=lambda out, x: 1.0 - out * out,
    special=(0.0,),
    doc="Hyperbolic tangent, elementwise.",
    example="tanh(0.0) -> 0.0",
)

sinh = unary(
    "sinh",
    np.sinh,
    lambda out, x: cosh(x),
    sym=sympy.sinh,
    replay=math.sinh,
    complex=HOLOMORPHIC,
    special=(0.0,),
    doc="Hyperbolic sine, elementwise.",
    example="sinh(0.0) -> 0.0",
)

cosh = unary(
    "cosh",
    np.cosh,
    lambda out, x: sinh(x),
    sym=sympy.cosh,
    replay=math.cosh,
    complex=HOLOMORPHIC,
    special=(0.0,),
    doc="Hyperbolic cosine, elementwise.",
    example="cosh(0.0) -> 1.0",
)

arcsinh = unary(
    "arcsinh",
    np.arcsinh,
    lambda out, x: reciprocal_sqrt(x * x + 1.0),
    sym=sympy.asinh,
    replay=math.asinh,
    complex=HOLOMORPHIC,
    label="Asinh",
    special=(0.0,),
    doc="Inverse hyperbolic sine, elementwise.",
    example="arcsinh(0.0) -> 0.0",
)

arccosh = unary(
    "arccosh",
    np.arccosh,
    lambda out, x: reciprocal_sqrt(x * x - 1.0),
    sym=sympy.acosh,
    replay=math.acosh,
    complex=HOLOMORPHIC,
    domain=(1.2, 3.0),
    label="Acosh",
    doc="Inverse hyperbolic cosine, elementwise, for ``x > 1``.",
    example="arccosh(1.0) -> 0.0",
)

arctanh = unary(
    "arctanh",
    np.arctanh,
    lambda out, x: 1.0 / (1.0 - x * x),
    sym=sympy.atanh,
    replay=math.atanh,
    complex=HOLOMORPHIC,
    domain=(-0.9, 0.9),
    label="Atanh",
    special=(0.0,),
    doc="Inverse hyperbolic tangent, elementwise, for ``-1 < x < 1``.",
    example="arctanh(0.0) -> 0.0",
)
