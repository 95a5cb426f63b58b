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
import sympy

from adcompare.ops.links import Links, elementwise_links
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    Box,
    Hints,
    defop,
    public_face,
    raw,
)
from adcompare.ops.shape import broadcast_to, getitem

_erf = np.vectorize(math.erf, otypes=[float])
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
    """``d(x**y)/dx = y * x**(y - 1)``, primal-shaped.

    A constant exponent 2 gives ``2 * x``: one full-size operation where the
    general formula takes two (and a power).
    """
    if _constant_integer(y) == 2:
        return multiply(2.0, x)
    return y * power(x, y - 1)


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
    sym=lambda x, y: x**y,
    jvp=(_power_jvp_x, lambda out, x, y, y_dot: log(x) * out * y_dot),
    vjp=(_power_vjp_x, lambda out, x, y, out_bar: out_bar * log(x) * power(x, y)),
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


abs = defop(
    "abs",
    np.abs,
    operators=("__abs__",),
    numpy=("abs", "absolute"),
    replay=builtins.abs,
    complex="takes the modulus of a complex number, which is not holomorphic",
    elementwise=True,
    saves=("args",),
    method="abs",
    sym=sympy.Abs,
    jvp=lambda out, x, x_dot: _sign(x) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * _sign(x),
    doc="Absolute value, elementwise; derivative ``sign(x)`` (0 at ``x = 0``).",
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
    lambda x: _erf(x).astype(np.result_type(x, np.float32), copy=False),
    replay=math.erf,
    complex="is computed for real numbers only",
    elementwise=True,
    saves=("args",),
    method="erf",
    label="Erf",
    sym=sympy.erf,
    jvp=lambda out, x, x_dot: _TWO_OVER_SQRT_PI * exp(negative(x * x)) * x_dot,
    vjp=lambda out, x, out_bar: out_bar * _TWO_OVER_SQRT_PI * exp(negative(x * x)),
    doc="The error function, elementwise.",
    example="erf(0.0) -> 0.0",
)
