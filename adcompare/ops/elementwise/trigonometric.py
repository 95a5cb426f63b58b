"""Trigonometric functions, their inverses, ``hypot`` and ``sinc``."""

from __future__ import annotations

import builtins
import math

import numpy as np
import sympy

from adcompare.ops.elementwise.arithmetic import negative
from adcompare.ops.elementwise.piecewise import where
from adcompare.ops.elementwise.powers import reciprocal_sqrt, sqrt
from adcompare.ops.elementwise.slopes import unary
from adcompare.ops.registry import HOLOMORPHIC, REAL_ONLY, anywhere, defop, everywhere, raw

sin = unary(
    "sin",
    np.sin,
    replay=math.sin,
    complex=HOLOMORPHIC,
    domain=(-3.0, 3.0),
    method="sin",
    sym=sympy.sin,
    slope=lambda out, x: cos(x),
    special=(0.0, math.pi),
    doc="Sine, elementwise.",
    example="sin(0.0) -> 0.0",
)

cos = unary(
    "cos",
    np.cos,
    replay=math.cos,
    complex=HOLOMORPHIC,
    domain=(-3.0, 3.0),
    method="cos",
    sym=sympy.cos,
    slope=lambda out, x: negative(sin(x)),
    special=(0.0, math.pi),
    doc="Cosine, elementwise.",
    example="cos(0.0) -> 1.0",
)

tan = unary(
    "tan",
    np.tan,
    replay=math.tan,
    complex=HOLOMORPHIC,
    domain=(-1.2, 1.2),
    method="tan",
    sym=sympy.tan,
    slope=lambda out, x: 1.0 + out * out,
    special=(0.0,),
    doc="Tangent, elementwise.",
    example="tan(0.0) -> 0.0",
)

arcsin = unary(
    "arcsin",
    np.arcsin,
    replay=math.asin,
    complex=HOLOMORPHIC,
    domain=(-0.9, 0.9),
    method="arcsin",
    label="Asin",
    sym=sympy.asin,
    reciprocal_slope=lambda out, x: sqrt(1.0 - x * x),
    special=(0.0,),
    doc="Inverse sine, elementwise, for ``-1 < x < 1``.",
    example="arcsin(0.0) -> 0.0",
)

arctan = unary(
    "arctan",
    np.arctan,
    replay=math.atan,
    complex=HOLOMORPHIC,
    method="arctan",
    label="Atan",
    sym=sympy.atan,
    reciprocal_slope=lambda out, x: 1.0 + x * x,
    special=(0.0,),
    doc="Inverse tangent, elementwise.",
    example="arctan(0.0) -> 0.0",
)


arccos = unary(
    "arccos",
    np.arccos,
    lambda out, x: negative(reciprocal_sqrt(1.0 - x * x)),
    sym=sympy.acos,
    replay=math.acos,
    complex=HOLOMORPHIC,
    domain=(-0.9, 0.9),
    label="Acos",
    special=(0.0,),
    doc="Inverse cosine, elementwise, for ``-1 < x < 1``.",
    example="arccos(1.0) -> 0.0",
)


arctan2 = defop(
    "arctan2",
    np.arctan2,
    replay=math.atan2,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    # The second argument stays positive: away from the origin and the branch cut.
    domain=((-2.0, 2.0), (0.5, 2.0)),
    label="Atan2",
    sym=sympy.atan2,
    slope=(
        lambda out, x, y: y / (x * x + y * y),
        lambda out, x, y: negative(x / (x * x + y * y)),
    ),
    special=((0.0, 1.0),),
    doc="The angle of the point ``(y, x)`` as numpy orders it: ``arctan2(x1, x2)`` is the "
    "angle of ``(x2, x1)``, elementwise.",
    example="arctan2(0.0, 1.0) -> 0.0",
)

hypot = defop(
    "hypot",
    np.hypot,
    replay=math.hypot,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(0.3, 2.0),
    sym=lambda x, y: sympy.sqrt(x * x + y * y),
    slope=(
        lambda out, x, y: x / out,
        lambda out, x, y: y / out,
    ),
    special=((3.0, 4.0),),
    doc="``sqrt(x**2 + y**2)``, elementwise, without overflow.",
    example="hypot(3.0, 4.0) -> 5.0",
)


# Taylor coefficients of sinc'(x) = sum_k c_k x^(2k-1), k >= 1, for |x| < _SINC_SERIES.
_SINC_SERIES = 0.1
_SINC_SLOPE_TERMS = tuple(
    (-1) ** k * math.pi ** (2 * k) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 10)
)


def _sinc_slope(out, x):
    """``sinc'(x) = (cos(pi x) - sinc(x)) / x``, from its Taylor series near 0.

    The closed form is 0/0 at ``x = 0`` and loses digits near it; the series
    (nine terms, exact to rounding for ``|x| < 0.1``) is a polynomial, so its
    derivatives of every order are right at 0 too (``sinc''(0) = -pi²/3``).
    """
    near = builtins.abs(raw(x)) < _SINC_SERIES
    if everywhere(near):
        return _sinc_series(x)
    far_x = where(near, 1.0, x) if anywhere(near) else x
    far = (cos(math.pi * far_x) - sinc(far_x)) / far_x
    return where(near, _sinc_series(x), far) if anywhere(near) else far


def _sinc_series(x):
    squared = x * x
    total = _SINC_SLOPE_TERMS[-1]
    for coefficient in reversed(_SINC_SLOPE_TERMS[:-1]):
        total = total * squared + coefficient
    return total * x


def _sinc(x: float) -> float:
    return 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)


def _sym_sinc(x):
    """``sin(πx) / (πx)``, and at 0 its Taylor polynomial (its derivatives there, to
    order 5, are the polynomial's, where the quotient is 0/0)."""
    taylor = sum(
        (-1) ** k * (sympy.pi * x) ** (2 * k) / sympy.factorial(2 * k + 1) for k in range(3)
    )
    return sympy.Piecewise(
        (taylor, sympy.Eq(x, 0)), (sympy.sin(sympy.pi * x) / (sympy.pi * x), True)
    )


sinc = unary(
    "sinc",
    np.sinc,
    _sinc_slope,
    sym=_sym_sinc,
    replay=_sinc,
    complex=HOLOMORPHIC,
    special=(0.0, 1.0),
    doc="The normalised sinc ``sin(pi x) / (pi x)`` (1 at 0), elementwise, as ``np.sinc``.",
    example="sinc(0.0) -> 1.0",
)
