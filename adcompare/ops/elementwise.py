"""Elementwise primitives with numpy broadcasting.

Subgradient convention at non-smooth points, the same in both modes:

- ``abs``: derivative ``sign(x)``, so 0 at ``x = 0`` (numpy, PyTorch, JAX);
- ``maximum`` / ``minimum``: at a tie each argument gets half (PyTorch, JAX);
- ``clip``: derivative 1 on the closed interval ``[lo, hi]``, 0 outside
  (PyTorch's ``clamp``);
- ``where``: the cotangent flows only to the branch that was selected.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np
import scipy.special
import sympy

from adcompare.ops.complex_parts import conj, real
from adcompare.ops.links import Links, elementwise_links
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    WIRTINGER,
    Box,
    Hints,
    anywhere,
    defop,
    everywhere,
    public_face,
    raw,
)
from adcompare.ops.shape import broadcast_to, getitem

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SCALE_DISTINCT_FROM = 2**17


def _scaled(cotangent, factor):
    """``cotangent * factor``, for a ``factor`` that is a plain constant number.

    A cotangent that comes from a sum or a mean is a broadcast view: along
    its stride-0 axes every element is the same number. Scaling it takes one
    multiplication per distinct value, broadcast back, instead of one per
    element (Rosenbrock's ``100 * ...`` and ``x ** 2`` under a sum). Below
    ``_SCALE_DISTINCT_FROM`` elements one full multiplication is cheaper than
    the three op calls that avoid it.
    """
    if (
        type(cotangent) is np.ndarray
        and cotangent.size >= _SCALE_DISTINCT_FROM
        and 0 in cotangent.strides
        and not isinstance(factor, Box)
        and np.ndim(factor) == 0
    ):
        distinct = tuple(slice(0, 1) if step == 0 else slice(None) for step in cotangent.strides)
        return broadcast_to(multiply(getitem(cotangent, distinct), factor), cotangent.shape)
    return multiply(cotangent, factor)  # the op, not ``*``: counted, and pooled when large


add = defop(
    "add",
    np.add,
    operators=("__add__", "__radd__"),
    replay=operator.add,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    sym=lambda x, y: x + y,
    jvp=(lambda out, x, y, x_dot: x_dot, lambda out, x, y, y_dot: y_dot),
    vjp=(lambda out, x, y, out_bar: out_bar, lambda out, x, y, out_bar: out_bar),
    doc="Sum of two arrays, elementwise (``x + y``).",
    example="add(2.0, 3.0) -> 5.0",
)

subtract = defop(
    "subtract",
    np.subtract,
    operators=("__sub__", "__rsub__"),
    replay=operator.sub,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    label="Sub",
    sym=lambda x, y: x - y,
    jvp=(lambda out, x, y, x_dot: x_dot, lambda out, x, y, y_dot: negative(y_dot)),
    vjp=(lambda out, x, y, out_bar: out_bar, lambda out, x, y, out_bar: negative(out_bar)),
    doc="Difference of two arrays, elementwise (``x - y``).",
    example="subtract(2.0, 3.0) -> -1.0",
)

multiply = defop(
    "multiply",
    np.multiply,
    operators=("__mul__", "__rmul__"),
    replay=operator.mul,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=("args",),
    hints=Hints(vjp_reads=(("y",), ("x",))),
    label="Mul",
    sym=lambda x, y: x * y,
    jvp=(lambda out, x, y, x_dot: x_dot * y, lambda out, x, y, y_dot: x * y_dot),
    vjp=(
        lambda out, x, y, out_bar: _scaled(out_bar, y),
        lambda out, x, y, out_bar: _scaled(out_bar, x),
    ),
    doc="Product of two arrays, elementwise (``x * y``).",
    example="multiply(2.0, 3.0) -> 6.0",
)

divide = defop(
    "divide",
    np.divide,
    operators=("__truediv__", "__rtruediv__"),
    numpy=("divide", "true_divide"),
    replay=operator.truediv,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    domain=((-2.0, 2.0), (0.5, 2.0)),
    hints=Hints(vjp_reads=(("y",), ("y", "out"))),
    label="Div",
    sym=lambda x, y: x / y,
    # d(x/y)/dy = -out/y is formed on primals before it meets the tangent lanes.
    jvp=(
        lambda out, x, y, x_dot: x_dot / y,
        lambda out, x, y, y_dot: negative(out / y) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar / y,
        lambda out, x, y, out_bar: out_bar * negative(out / y),
    ),
    doc="Quotient of two arrays, elementwise (``x / y``).",
    example="divide(3.0, 2.0) -> 1.5",
)

negative = defop(
    "negative",
    np.negative,
    operators=("__neg__",),
    replay=operator.neg,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=(),
    label="Neg",
    sym=lambda x: -x,
    jvp=lambda out, x, x_dot: negative(x_dot),
    vjp=lambda out, x, out_bar: negative(out_bar),
    doc="Negation, elementwise (``-x``).",
    example="negative(2.0) -> -2.0",
)


class _StopGradient(sympy.Function):
    """SymPy's face of ``stop_gradient``: its argument's value, with derivative zero."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return x
        return None

    def fdiff(self, argindex=1):
        return sympy.Integer(0)

    def _numpycode(self, printer):
        return printer._print(self.args[0])


stop_gradient = defop(
    "stop_gradient",
    np.positive,
    replay=operator.pos,
    complex="has a zero derivative by definition, which the complex step cannot see",
    elementwise=True,
    saves=(),
    label="StopGradient",
    sym=_StopGradient,
    jvp=lambda out, x, x_dot: multiply(x_dot, 0.0),
    vjp=lambda out, x, out_bar: multiply(out_bar, 0.0),
    doc=(
        "``x`` itself, treated as a constant: its JVP and VJP are zero (JAX's "
        "``lax.stop_gradient``, PyTorch's ``detach`` inside a computation)."
    ),
    example="stop_gradient(2.0) -> 2.0",
    sparsity=lambda out, x, *, local: Links((None,)),  # no output depends on x
)


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
            safe = _select(1.0, x, cond=masked)
            return _select(0.0, y * power(safe, y - 1), cond=masked)
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
    return _select(0.0, log(_select(1.0, x, cond=masked)), cond=masked)


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
        return multiply(_scaled(out_bar, 2.0), x)
    if k is None or k == 0:
        return multiply(out_bar, _power_slope(x, y))
    return multiply(_scaled(out_bar, y), power(x, y - 1))


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

exp = defop(
    "exp",
    np.exp,
    replay=math.exp,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("out",),
    method="exp",
    sym=sympy.exp,
    jvp=lambda out, x, x_dot: out * x_dot,
    vjp=lambda out, x, out_bar: out_bar * out,
    doc="Exponential, elementwise.",
    example="exp(0.0) -> 1.0",
)

log = defop(
    "log",
    np.log,
    replay=math.log,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    domain=(0.1, 3.0),
    method="log",
    sym=sympy.log,
    jvp=lambda out, x, x_dot: x_dot / x,
    vjp=lambda out, x, out_bar: out_bar / x,
    doc="Natural logarithm, elementwise.",
    example="log(1.0) -> 0.0",
)

log1p = defop(
    "log1p",
    np.log1p,
    replay=math.log1p,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    domain=(-0.5, 2.0),
    method="log1p",
    label="Log1p",
    sym=lambda x: sympy.log(1 + x),
    jvp=lambda out, x, x_dot: x_dot / (1.0 + x),
    vjp=lambda out, x, out_bar: out_bar / (1.0 + x),
    doc="``log(1 + x)``, accurate for small ``x``.",
    example="log1p(0.0) -> 0.0",
)

expm1 = defop(
    "expm1",
    np.expm1,
    replay=math.expm1,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("out",),
    method="expm1",
    label="Expm1",
    sym=lambda x: sympy.exp(x) - 1,
    jvp=lambda out, x, x_dot: (out + 1.0) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * (out + 1.0),
    doc="``exp(x) - 1``, accurate for small ``x``.",
    example="expm1(0.0) -> 0.0",
)

sqrt = defop(
    "sqrt",
    np.sqrt,
    replay=math.sqrt,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("out",),
    domain=(0.1, 3.0),
    method="sqrt",
    sym=sympy.sqrt,
    jvp=lambda out, x, x_dot: x_dot / (2.0 * out),
    vjp=lambda out, x, out_bar: out_bar / (2.0 * out),
    doc="Square root, elementwise.",
    example="sqrt(9.0) -> 3.0",
)

sin = defop(
    "sin",
    np.sin,
    replay=math.sin,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    domain=(-3.0, 3.0),
    method="sin",
    sym=sympy.sin,
    jvp=lambda out, x, x_dot: cos(x) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * cos(x),
    doc="Sine, elementwise.",
    example="sin(0.0) -> 0.0",
)

cos = defop(
    "cos",
    np.cos,
    replay=math.cos,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    domain=(-3.0, 3.0),
    method="cos",
    sym=sympy.cos,
    jvp=lambda out, x, x_dot: negative(sin(x)) * x_dot,
    vjp=lambda out, x, out_bar: negative(out_bar * sin(x)),
    doc="Cosine, elementwise.",
    example="cos(0.0) -> 1.0",
)

tan = defop(
    "tan",
    np.tan,
    replay=math.tan,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("out",),
    domain=(-1.2, 1.2),
    method="tan",
    sym=sympy.tan,
    jvp=lambda out, x, x_dot: (1.0 + out * out) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * (1.0 + out * out),
    doc="Tangent, elementwise.",
    example="tan(0.0) -> 0.0",
)

tanh = defop(
    "tanh",
    np.tanh,
    replay=math.tanh,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("out",),
    domain=(-3.0, 3.0),
    method="tanh",
    sym=sympy.tanh,
    jvp=lambda out, x, x_dot: (1.0 - out * out) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * (1.0 - out * out),
    doc="Hyperbolic tangent, elementwise.",
    example="tanh(0.0) -> 0.0",
)

arcsin = defop(
    "arcsin",
    np.arcsin,
    replay=math.asin,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    domain=(-0.9, 0.9),
    method="arcsin",
    label="Asin",
    sym=sympy.asin,
    jvp=lambda out, x, x_dot: x_dot / sqrt(1.0 - x * x),
    vjp=lambda out, x, out_bar: out_bar / sqrt(1.0 - x * x),
    doc="Inverse sine, elementwise, for ``-1 < x < 1``.",
    example="arcsin(0.0) -> 0.0",
)

arctan = defop(
    "arctan",
    np.arctan,
    replay=math.atan,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    method="arctan",
    label="Atan",
    sym=sympy.atan,
    jvp=lambda out, x, x_dot: x_dot / (1.0 + x * x),
    vjp=lambda out, x, out_bar: out_bar / (1.0 + x * x),
    doc="Inverse tangent, elementwise.",
    example="arctan(0.0) -> 0.0",
)


def _sign(x):
    # The derivative of sign(x) is zero wherever it exists, so it is a constant.
    return np.sign(raw(x))


def _modulus_slope(x):
    """``conj(z) / |z|`` for complex ``z``, 0 at 0: ``d|z| = Re(conj(z) dz) / |z|``.

    Unlike ``sign`` of a real number it is not constant, so it is built from
    ops (differentiable again); the modulus is made safe where it is 0.
    """
    modulus = abs(x)
    zero = raw(modulus) == 0
    if not anywhere(zero):
        return conj(x) / modulus
    return _select(0.0, conj(x) / _select(1.0, modulus, cond=zero), cond=zero)


def _abs_jvp(out, x, x_dot):
    if np.result_type(raw(x)).kind == "c":
        return real(_modulus_slope(x) * x_dot)
    return _sign(x) * x_dot


def _abs_vjp(out, x, out_bar):
    if np.result_type(raw(x)).kind == "c":
        return real(out_bar) * _modulus_slope(x)
    return out_bar * _sign(x)


abs = defop(
    "abs",
    np.abs,
    operators=("__abs__",),
    numpy=("abs", "absolute"),
    replay=builtins.abs,
    complex=WIRTINGER,
    elementwise=True,
    saves=("args",),
    method="abs",
    sym=sympy.Abs,
    jvp=_abs_jvp,
    vjp=_abs_vjp,
    doc="Absolute value (the modulus of complex numbers), elementwise; derivative "
    "``sign(x)`` (0 at ``x = 0``), ``conj(z) / |z|`` for complex ``z`` (see ``WIRTINGER``).",
    example="abs(-2.0) -> 2.0",
)


def _share(x, y):
    """Weight of ``x`` in ``maximum(x, y)``: 1 where it wins, 1/2 at a tie."""
    x, y = raw(x), raw(y)
    share = (x > y) + 0.5 * (x == y)
    return share.astype(np.result_type(x, y, np.float32), copy=False)


def _winner_sparsity(larger: bool):
    """Both arguments; with ``local``, only the one that wins at each element (both at a tie)."""

    def rule(out, x, y, *, local):
        if not local:
            return elementwise_links(out, x, y)
        first, second = (x, y) if larger else (y, x)
        return elementwise_links(
            out, x, y, keep=(_share(first, second) > 0, _share(second, first) > 0)
        )

    return rule


maximum = defop(
    "maximum",
    np.maximum,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    label="Maximum",
    sym=lambda x, y: sympy.Max(x, y),
    jvp=(
        lambda out, x, y, x_dot: _share(x, y) * x_dot,
        lambda out, x, y, y_dot: _share(y, x) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _share(x, y),
        lambda out, x, y, out_bar: out_bar * _share(y, x),
    ),
    doc="Larger of two arrays, elementwise; a tie splits the derivative evenly.",
    example="maximum(2.0, 3.0) -> 3.0",
    sparsity=_winner_sparsity(larger=True),
)

minimum = defop(
    "minimum",
    np.minimum,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    label="Minimum",
    sym=lambda x, y: sympy.Min(x, y),
    jvp=(
        lambda out, x, y, x_dot: _share(y, x) * x_dot,
        lambda out, x, y, y_dot: _share(x, y) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _share(y, x),
        lambda out, x, y, out_bar: out_bar * _share(x, y),
    ),
    doc="Smaller of two arrays, elementwise; a tie splits the derivative evenly.",
    example="minimum(2.0, 3.0) -> 2.0",
    sparsity=_winner_sparsity(larger=False),
)


def _prepare_where(x, y, *, cond):
    return {"cond": np.asanyarray(raw(cond), dtype=bool)}  # a vmap's BatchArray stays one


def _choose(x, y, cond):
    # where's replay kernel on single numbers.
    return x if cond else y


def _where_sparsity(out, x, y, *, local, cond):
    """Both branches; with ``local``, the branch ``cond`` chooses."""
    return elementwise_links(out, x, y, keep=(cond, ~cond) if local else None)


_select = defop(
    "where",
    lambda x, y, cond: np.where(cond, x, y),
    replay=_choose,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    prepare=_prepare_where,
    label="Where",
    test_params=lambda shape, rng: {"cond": rng.random(shape) > 0.5},
    sym=lambda x, y, cond: x if cond else y,
    jvp=(
        lambda out, x, y, x_dot, cond: _select(x_dot, 0.0, cond=cond),
        lambda out, x, y, y_dot, cond: _select(0.0, y_dot, cond=cond),
    ),
    vjp=(
        lambda out, x, y, out_bar, cond: _select(out_bar, 0.0, cond=cond),
        lambda out, x, y, out_bar, cond: _select(0.0, out_bar, cond=cond),
    ),
    doc="``x`` where ``cond`` holds, else ``y`` (the condition as a keyword).",
    sparsity=_where_sparsity,
)


@public_face(_select)
def where(cond, x, y):
    """``x`` where ``cond`` is true, else ``y``, elementwise (like ``np.where``).

    The condition is not differentiated; the derivative flows only into the
    branch that was chosen at each element.

    >>> print(where([True, False], [1.0, 2.0], [10.0, 20.0]))
    [ 1. 20.]
    """
    return _select(x, y, cond=cond)


def _prepare_clip(x, lo=None, hi=None):
    return {"lo": lo, "hi": hi}


def _inside(x, lo, hi):
    x = raw(x)
    mask = np.ones_like(x, dtype=bool)
    if lo is not None:
        mask = mask & (x >= lo)
    if hi is not None:
        mask = mask & (x <= hi)
    return mask


def _sym_clip(x, lo, hi):
    # Piecewise rather than Min(Max(...)): its derivative is 1 on the closed
    # interval, the engines' convention (Heaviside would give 1/2 at a bound).
    pieces = []
    if lo is not None:
        pieces.append((lo, x < lo))
    if hi is not None:
        pieces.append((hi, x > hi))
    return sympy.Piecewise(*pieces, (x, True))


def _clip_sparsity(out, x, *, local, lo, hi):
    """The element; with ``local``, only where it lies inside the bounds."""
    return elementwise_links(out, x, keep=(_inside(x, lo, hi),) if local else None)


clip = defop(
    "clip",
    lambda x, lo, hi: np.clip(x, lo, hi),
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    elementwise=True,
    saves=("args",),
    prepare=_prepare_clip,
    method="clip",
    label="Clamp",
    test_params=lambda shape, rng: {"lo": -0.5, "hi": 0.7},
    sym=_sym_clip,
    jvp=lambda out, x, x_dot, lo, hi: _select(x_dot, 0.0, cond=_inside(x, lo, hi)),
    vjp=lambda out, x, out_bar, lo, hi: _select(out_bar, 0.0, cond=_inside(x, lo, hi)),
    doc=(
        "Limit values to ``[lo, hi]`` (either bound may be ``None``); the bounds are "
        "constants. Derivative 1 on the closed interval, 0 outside."
    ),
    example="clip(5.0, 0.0, 1.0) -> 1.0",
    sparsity=_clip_sparsity,
)

erf = defop(
    "erf",
    scipy.special.erf,  # keeps float32 float32, and a Python float float64
    replay=math.erf,
    complex="is computed for real numbers only",
    elementwise=True,
    saves=("args",),
    method="erf",
    numpy=("scipy.special.erf",),
    label="Erf",
    sym=sympy.erf,
    jvp=lambda out, x, x_dot: _TWO_OVER_SQRT_PI * exp(negative(x * x)) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * _TWO_OVER_SQRT_PI * exp(negative(x * x)),
    doc="The error function, elementwise.",
    example="erf(0.0) -> 0.0",
)


# --- more functions of one array ---------------------------------------------------


def unary(name, value, slope, *, sym, replay, domain=(-2.0, 2.0), saves=("args",), **fields):
    """Register an elementwise function of one array whose derivative is ``slope(out, x)``.

    ``slope`` is written with the op set's functions and is primal-shaped: it
    meets the tangent lanes (or the cotangent) in one multiplication.
    """
    return defop(
        name,
        value,
        jvp=lambda out, x, x_dot: slope(out, x) * x_dot,
        vjp=lambda out, x, out_bar: out_bar * slope(out, x),
        sym=sym,
        replay=replay,
        domain=domain,
        saves=saves,
        elementwise=True,
        **fields,
    )


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_REAL_ONLY = "is computed for real numbers only"

sinh = unary(
    "sinh",
    np.sinh,
    lambda out, x: cosh(x),
    sym=sympy.sinh,
    replay=math.sinh,
    complex=HOLOMORPHIC,
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
    doc="Hyperbolic cosine, elementwise.",
    example="cosh(0.0) -> 1.0",
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
    doc="Inverse cosine, elementwise, for ``-1 < x < 1``.",
    example="arccos(1.0) -> 0.0",
)

arcsinh = unary(
    "arcsinh",
    np.arcsinh,
    lambda out, x: reciprocal_sqrt(x * x + 1.0),
    sym=sympy.asinh,
    replay=math.asinh,
    complex=HOLOMORPHIC,
    label="Asinh",
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
    doc="Inverse hyperbolic tangent, elementwise, for ``-1 < x < 1``.",
    example="arctanh(0.0) -> 0.0",
)

exp2 = unary(
    "exp2",
    np.exp2,
    lambda out, x: out * _LN2,
    sym=lambda x: 2**x,
    replay=lambda x: 2.0**x,
    complex=HOLOMORPHIC,
    saves=("out",),
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
    doc="Base-10 logarithm, elementwise.",
    example="log10(100.0) -> 2.0",
)


def _cbrt(x: float) -> float:
    return math.copysign(builtins.abs(x) ** (1.0 / 3.0), x)


cbrt = unary(
    "cbrt",
    np.cbrt,
    lambda out, x: 1.0 / (3.0 * out * out),
    sym=lambda x: x ** sympy.Rational(1, 3),
    replay=_cbrt,
    complex=_REAL_ONLY,
    saves=("out",),
    domain=(0.2, 3.0),
    doc="The real cube root, elementwise (infinite slope at 0).",
    example="cbrt(8.0) -> 2.0",
)


def reciprocal_sqrt(x):
    """``1 / sqrt(x)``: the slope of the inverse trigonometric and hyperbolic functions."""
    return 1.0 / sqrt(x)


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
    far_x = _select(1.0, x, cond=near) if anywhere(near) else x
    far = (cos(math.pi * far_x) - sinc(far_x)) / far_x
    return _select(_sinc_series(x), far, cond=near) if anywhere(near) else far


def _sinc_series(x):
    squared = x * x
    total = _SINC_SLOPE_TERMS[-1]
    for coefficient in reversed(_SINC_SLOPE_TERMS[:-1]):
        total = total * squared + coefficient
    return total * x


def _sinc(x: float) -> float:
    return 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)


sinc = unary(
    "sinc",
    np.sinc,
    _sinc_slope,
    sym=lambda x: sympy.sin(sympy.pi * x) / (sympy.pi * x),
    replay=_sinc,
    complex=HOLOMORPHIC,
    doc="The normalised sinc ``sin(pi x) / (pi x)`` (1 at 0), elementwise, as ``np.sinc``.",
    example="sinc(0.0) -> 1.0",
)


# --- functions with zero derivative --------------------------------------------------
#
# Rounding is piecewise constant: its derivative is 0 wherever it exists, and 0 is
# taken at the jumps too (PyTorch, JAX). SymPy leaves the derivative of floor
# unevaluated, so the SymPy counterparts are step functions that say their
# derivative is 0 (``fdiff``) and evaluate through numpy (``_imp_``).


def _step_function(name: str, numeric) -> type:
    return type(
        name,
        (sympy.Function,),
        {
            "_imp_": staticmethod(numeric),
            "fdiff": lambda self, argindex=1: sympy.S.Zero,
            # Real valued, so Abs and sign of it differentiate without re/im parts.
            "is_extended_real": True,
            "is_real": True,
        },
    )


_SymFloor = _step_function("Floor", np.floor)
_SymCeil = _step_function("Ceil", np.ceil)
_SymTrunc = _step_function("Trunc", np.trunc)
_SymRint = _step_function("Rint", np.rint)
_SymSign = _step_function("Sign", np.sign)


def _no_links(out, x, *, local, **params) -> Links:
    """A derivative that is 0 everywhere: no output element depends on an input."""
    return Links((None,))


def _remainder_sparsity(quotient):
    """x always; y (``d/dy = -quotient(x / y)``) only where the quotient is not 0, locally."""

    def rule(out, x, y, *, local):
        if not local:
            return elementwise_links(out, x, y)
        return elementwise_links(out, x, y, keep=(True, quotient(raw(x) / raw(y)) != 0))

    return rule


def _flat(name, value, sym, replay, doc, example, **fields):
    return defop(
        name,
        value,
        jvp=lambda out, x, x_dot, **params: 0.0 * x_dot,
        vjp=lambda out, x, out_bar, **params: 0.0 * out_bar,
        sparsity=_no_links,
        sym=sym,
        replay=replay,
        saves=(),
        elementwise=True,
        domain=(-3.0, 3.0),
        doc=doc + " Its derivative is 0 (also at the jumps).",
        example=example,
        **fields,
    )


floor = _flat(
    "floor",
    np.floor,
    _SymFloor,
    math.floor,
    "The largest integer not above ``x``, elementwise.",
    "floor(-1.5) -> -2.0",
    complex=_REAL_ONLY,
)
ceil = _flat(
    "ceil",
    np.ceil,
    _SymCeil,
    math.ceil,
    "The smallest integer not below ``x``, elementwise.",
    "ceil(-1.5) -> -1.0",
    complex=_REAL_ONLY,
)
trunc = _flat(
    "trunc",
    np.trunc,
    _SymTrunc,
    math.trunc,
    "``x`` rounded towards zero, elementwise.",
    "trunc(-1.5) -> -1.0",
    complex=_REAL_ONLY,
    numpy=("trunc", "fix"),
)
sign = _flat(
    "sign",
    np.sign,
    _SymSign,
    lambda x: float((x > 0) - (x < 0)),
    "The sign of ``x`` (-1, 0 or 1), elementwise.",
    "sign(-2.0) -> -1.0",
    complex="is z/|z| for complex numbers, which is not holomorphic",
)


def _prepare_round(x, decimals=0, out=None):
    if out is not None:
        raise TypeError("round: out= is not supported on values that carry a derivative")
    return {"decimals": int(decimals)}


round = _flat(
    "round",
    lambda x, decimals: np.round(x, decimals),
    lambda x, decimals: _SymRint(x * 10**decimals) / 10**decimals,
    ARRAY_ONLY,
    "``x`` rounded to ``decimals`` places, halves to even, as ``np.round``.",
    "round(2.5) -> 2.0",
    complex=_REAL_ONLY,
    prepare=_prepare_round,
    method="round",
    numpy=("round", "around"),
    test_params=lambda shape, rng: {"decimals": int(rng.integers(0, 2))},
)


# --- more functions of two arrays ----------------------------------------------------


def _logaddexp(x: float, y: float) -> float:
    if x == y:
        return x + _LN2
    return builtins.max(x, y) + math.log1p(math.exp(-builtins.abs(x - y)))


logaddexp = defop(
    "logaddexp",
    np.logaddexp,
    replay=_logaddexp,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(-3.0, 3.0),
    sym=lambda x, y: sympy.log(sympy.exp(x) + sympy.exp(y)),
    # Each slope is a softmax weight, exp(x - out) <= 1: no overflow for large x.
    jvp=(
        lambda out, x, y, x_dot: exp(x - out) * x_dot,
        lambda out, x, y, y_dot: exp(y - out) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * exp(x - out),
        lambda out, x, y, out_bar: out_bar * exp(y - out),
    ),
    doc="``log(exp(x) + exp(y))``, elementwise, without overflow.",
    example="logaddexp(0.0, 0.0) -> 0.6931471805599453",
)


def _logaddexp2(x: float, y: float) -> float:
    if x == y:
        return x + 1.0
    return builtins.max(x, y) + math.log1p(2.0 ** -builtins.abs(x - y)) / _LN2


logaddexp2 = defop(
    "logaddexp2",
    np.logaddexp2,
    replay=_logaddexp2,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(-3.0, 3.0),
    sym=lambda x, y: sympy.log(2**x + 2**y) / sympy.log(2),
    jvp=(
        lambda out, x, y, x_dot: exp2(x - out) * x_dot,
        lambda out, x, y, y_dot: exp2(y - out) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * exp2(x - out),
        lambda out, x, y, out_bar: out_bar * exp2(y - out),
    ),
    doc="``log2(2**x + 2**y)``, elementwise, without overflow.",
    example="logaddexp2(1.0, 1.0) -> 2.0",
)

arctan2 = defop(
    "arctan2",
    np.arctan2,
    replay=math.atan2,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    # The second argument stays positive: away from the origin and the branch cut.
    domain=((-2.0, 2.0), (0.5, 2.0)),
    label="Atan2",
    sym=sympy.atan2,
    jvp=(
        lambda out, x, y, x_dot: y / (x * x + y * y) * x_dot,
        lambda out, x, y, y_dot: negative(x / (x * x + y * y)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * (y / (x * x + y * y)),
        lambda out, x, y, out_bar: out_bar * negative(x / (x * x + y * y)),
    ),
    doc="The angle of the point ``(y, x)`` as numpy orders it: ``arctan2(x1, x2)`` is the "
    "angle of ``(x2, x1)``, elementwise.",
    example="arctan2(0.0, 1.0) -> 0.0",
)

hypot = defop(
    "hypot",
    np.hypot,
    replay=math.hypot,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(0.3, 2.0),
    sym=lambda x, y: sympy.sqrt(x * x + y * y),
    jvp=(lambda out, x, y, x_dot: x / out * x_dot, lambda out, x, y, y_dot: y / out * y_dot),
    vjp=(
        lambda out, x, y, out_bar: out_bar * (x / out),
        lambda out, x, y, out_bar: out_bar * (y / out),
    ),
    doc="``sqrt(x**2 + y**2)``, elementwise, without overflow.",
    example="hypot(3.0, 4.0) -> 5.0",
)


def _fshare(x, y):
    """Weight of ``x`` in ``fmax(x, y)``: as :func:`_share`, and 1 where only ``y`` is NaN."""
    x, y = raw(x), raw(y)
    share = (x > y) + 0.5 * (x == y) + (np.isnan(y) & ~np.isnan(x))
    return share.astype(np.result_type(x, y, np.float32), copy=False)


fmax = defop(
    "fmax",
    np.fmax,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    sym=lambda x, y: sympy.Max(x, y),
    jvp=(
        lambda out, x, y, x_dot: _fshare(x, y) * x_dot,
        lambda out, x, y, y_dot: _fshare(y, x) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _fshare(x, y),
        lambda out, x, y, out_bar: out_bar * _fshare(y, x),
    ),
    sparsity=_winner_sparsity(larger=True),
    doc="Larger of two arrays, elementwise, ignoring NaN (a NaN loses); a tie splits evenly.",
    example="fmax(2.0, float('nan')) -> 2.0",
)

fmin = defop(
    "fmin",
    np.fmin,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    sym=lambda x, y: sympy.Min(x, y),
    jvp=(
        lambda out, x, y, x_dot: _fshare(negative(x), negative(y)) * x_dot,
        lambda out, x, y, y_dot: _fshare(negative(y), negative(x)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _fshare(negative(x), negative(y)),
        lambda out, x, y, out_bar: out_bar * _fshare(negative(y), negative(x)),
    ),
    sparsity=_winner_sparsity(larger=False),
    doc="Smaller of two arrays, elementwise, ignoring NaN (a NaN loses); a tie splits evenly.",
    example="fmin(2.0, float('nan')) -> 2.0",
)

mod = defop(
    "mod",
    np.mod,
    operators=("__mod__", "__rmod__"),
    numpy=("mod", "remainder"),
    replay=operator.mod,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=((-3.0, 3.0), (0.5, 2.0)),
    saves=("args",),
    sym=lambda x, y: x - y * _SymFloor(x / y),
    # x mod y = x - y * floor(x / y), and floor's derivative is 0.
    jvp=(
        lambda out, x, y, x_dot: x_dot,
        lambda out, x, y, y_dot: negative(floor(x / y)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar,
        lambda out, x, y, out_bar: out_bar * negative(floor(x / y)),
    ),
    sparsity=_remainder_sparsity(np.floor),
    doc="Remainder with the sign of the divisor, elementwise (``x % y``, as ``np.mod``).",
    example="mod(-1.0, 3.0) -> 2.0",
)

fmod = defop(
    "fmod",
    np.fmod,
    replay=math.fmod,
    complex=_REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=((-3.0, 3.0), (0.5, 2.0)),
    saves=("args",),
    sym=lambda x, y: x - y * _SymTrunc(x / y),
    # fmod(x, y) = x - y * trunc(x / y), and trunc's derivative is 0.
    jvp=(
        lambda out, x, y, x_dot: x_dot,
        lambda out, x, y, y_dot: negative(trunc(x / y)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar,
        lambda out, x, y, out_bar: out_bar * negative(trunc(x / y)),
    ),
    sparsity=_remainder_sparsity(np.trunc),
    doc="Remainder with the sign of the dividend, elementwise (C's ``fmod``, as ``np.fmod``).",
    example="fmod(-1.0, 3.0) -> -1.0",
)


# --- conversions ------------------------------------------------------------------


def _prepare_nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    return {"nan": nan, "posinf": posinf, "neginf": neginf}


def _finite(x):
    return np.isfinite(raw(x))


nan_to_num = defop(
    "nan_to_num",
    lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    prepare=_prepare_nan_to_num,
    test_params=lambda shape, rng: {"nan": 0.0, "posinf": None, "neginf": None},
    sym=lambda x, nan, posinf, neginf: x,
    jvp=lambda out, x, x_dot, **limits: _select(x_dot, 0.0, cond=_finite(x)),
    vjp=lambda out, x, out_bar, **limits: _select(out_bar, 0.0, cond=_finite(x)),
    doc="NaN and infinities replaced by constants, as ``np.nan_to_num``: derivative 1 "
    "where ``x`` is finite, 0 where it was replaced.",
    example="nan_to_num(float('nan')) -> 0.0",
)


def _prepare_astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    target = np.dtype(dtype)
    if not np.issubdtype(target, np.floating):
        kind = "complex" if np.issubdtype(target, np.complexfloating) else "non-float"
        raise TypeError(
            f"astype({target}): a {kind} dtype cannot carry a real derivative; convert to a "
            "float dtype (float16, float32, float64), round with adcompare.round or floor "
            "first if you want integers (derivative 0), or detach the value"
        )
    return {"dtype": target, "source": np.result_type(raw(x), np.float16)}


astype = defop(
    "astype",
    lambda x, dtype, source: np.asarray(x).astype(dtype),
    replay=ARRAY_ONLY,
    complex="converts between real float dtypes only",
    saves=(),
    prepare=_prepare_astype,
    method="astype",
    numpy=(),  # the method; np.astype takes dtype positionally only
    batch=LEADING_AXIS,  # no axes: a batch axis passes through
    cases=(([(2, 3)], {"dtype": np.float64}), ([()], {"dtype": "float64"})),
    sym=lambda x, dtype, source: x,
    jvp=lambda out, x, x_dot, dtype, source: astype(x_dot, dtype),
    # The cotangent takes the input's dtype back, so float32 inputs get float32 gradients.
    vjp=lambda out, x, out_bar, dtype, source: astype(out_bar, source),
    doc="The value in another float dtype, as ``ndarray.astype``; the derivative is "
    "converted alike and the gradient comes back in the input's dtype.",
    example="astype(1.5, 'float32').dtype -> float32",
)
