"""Powers and roots: ``x**y``, ``sqrt``, ``cbrt``."""

from __future__ import annotations

import builtins
import math

import numpy as np
import sympy

from adcompare.ops.elementwise.arithmetic import multiply, scaled
from adcompare.ops.elementwise.exp_log import log
from adcompare.ops.elementwise.piecewise import where
from adcompare.ops.elementwise.slopes import unary
from adcompare.ops.registry import HOLOMORPHIC, REAL_ONLY, Box, Hints, anywhere, defop, raw


def _constant_integer(y) -> int | None:
    """``y`` as an int when it is a plain real number with an integer value.

    A box (a ``Dual`` or ``Tensor`` of an outer transform) is never constant:
    its derivative must flow through the general rule.
    """
    if type(y) is int:
        return y
    if type(y) is not float:
        if isinstance(y, Box) or np.ndim(y) != 0 or np.iscomplexobj(y):
            return None
        y = float(y)
    return int(y) if y.is_integer() else None


def _power_slope(x, y):
    """``d(x**y)/dx = y * x**(y - 1)``, primal-shaped, and 0 where ``x = y = 0``.

    A constant exponent 2 gives ``2 * x``: one full-size operation where the
    general formula takes two (and a power). At ``x = y = 0`` the formula is
    ``0 * inf``; ``x**0`` is the constant 1 there, so the slope is 0 (PyTorch's
    answer). The base is replaced by 1 where the slope is masked, so no NaN
    reaches the unselected branch and higher derivatives stay 0 as well.
    """
    k = _constant_integer(y)
    if k == 2:
        return multiply(2.0, x)
    if k is None or k == 0:
        masked = (raw(x) == 0) & (raw(y) == 0)
        if anywhere(masked):
            safe = where(masked, 1.0, x)
            return where(masked, 0.0, y * power(safe, y - 1))
    return y * power(x, y - 1)


def _log_base(x, y):
    """``log(x)``, the factor of ``d(x**y)/dy = log(x) * x**y``, and 0 where ``x = 0 <= y``.

    There ``x**y`` is 0 (or 1 at ``y = 0``) for every nearby nonnegative
    ``y``, and ``log(0) * 0`` would be NaN; PyTorch gives 0. The base is made
    safe in the unselected branch, so higher derivatives stay finite too.
    """
    masked = (raw(x) == 0) & (raw(y) >= 0)
    if not anywhere(masked):
        return log(x)
    return where(masked, 0.0, log(where(masked, 1.0, x)))


def _sym_power(x, y):
    # SymPy leaves 0**y unevaluated and differentiates it to log(0) * 0**y = NaN;
    # as a function of y it is 0 for y > 0, 1 at y = 0, and infinite below.
    if x == 0 and not (y.is_number and y.is_zero):
        return sympy.Piecewise((0, y > 0), (1, sympy.Eq(y, 0)), (sympy.zoo, True))
    return x**y


def _power_value(x, y):
    # ndarray ** scalar takes numpy's fast paths (x * x for 2, sqrt for 0.5).
    if type(y) is int or type(y) is float or np.ndim(y) == 0:
        return np.asarray(x) ** y
    return np.power(x, y)


def _power_into(out, x, y):
    # The fast path of x ** 2 by hand: np.power itself calls pow() for every element.
    if type(y) is not np.ndarray and y == 2:
        np.square(x, out=out)
    else:
        np.power(x, y, out=out)


# The slope is primal-shaped: it is formed before it meets the tangent lanes.
def _power_jvp_x(out, x, y, x_dot):
    return x_dot if _constant_integer(y) == 1 else _power_slope(x, y) * x_dot


def _power_vjp_x(out, x, y, out_bar):
    k = _constant_integer(y)
    if k == 1:
        return out_bar
    if k == 2:
        return multiply(scaled(out_bar, 2.0), x)
    if k is None or k == 0:
        return multiply(out_bar, _power_slope(x, y))
    return multiply(scaled(out_bar, y), power(x, y - 1))


power = defop(
    "power",
    _power_value,
    operators=("__pow__", "__rpow__"),
    replay=math.pow,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    domain=((0.5, 2.0), (-2.0, 2.0)),
    # The tape keeps only the inputs: the output is needed by the exponent's rule
    # alone, which recomputes it, so x**2's result is freed as soon as it is used.
    saves=("args",),
    hints=Hints(into=_power_into),
    label="Pow",
    sym=lambda x, y: _sym_power(x, y),
    jvp=(_power_jvp_x, lambda out, x, y, y_dot: _log_base(x, y) * out * y_dot),
    vjp=(_power_vjp_x, lambda out, x, y, out_bar: out_bar * _log_base(x, y) * power(x, y)),
    doc="``x`` to the power ``y``, elementwise; ``y`` may carry a derivative too.",
    example="power(2.0, 3.0) -> 8.0",
)

sqrt = unary(
    "sqrt",
    np.sqrt,
    replay=math.sqrt,
    complex=HOLOMORPHIC,
    domain=(0.1, 3.0),
    method="sqrt",
    sym=sympy.sqrt,
    reciprocal_slope=lambda out, x: 2.0 * out,
    special=(1.0,),
    doc="Square root, elementwise.",
    example="sqrt(9.0) -> 3.0",
)


def _cbrt(x: float) -> float:
    return math.copysign(builtins.abs(x) ** (1.0 / 3.0), x)


cbrt = unary(
    "cbrt",
    np.cbrt,
    lambda out, x: 1.0 / (3.0 * out * out),
    # The real root: SymPy's x**(1/3) is the principal, complex one for x < 0.
    sym=lambda x: sympy.Piecewise(
        (x ** sympy.Rational(1, 3), x >= 0), (-((-x) ** sympy.Rational(1, 3)), True)
    ),
    replay=_cbrt,
    complex=REAL_ONLY,
    saves=("out",),
    domain=(0.2, 3.0),
    special=(1.0, -0.7),
    doc="The real cube root, elementwise (infinite slope at 0).",
    example="cbrt(8.0) -> 2.0",
)


def reciprocal_sqrt(x):
    """``1 / sqrt(x)``: the slope of the inverse trigonometric and hyperbolic functions."""
    return 1.0 / sqrt(x)
