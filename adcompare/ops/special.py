"""Special functions of ``scipy.special``: gamma and its relatives, error functions, Bessel.

Calling scipy's ufunc on a box (``scipy.special.gammaln(t)``) runs the op
here: the record's ``numpy`` names ``"scipy.special.gammaln"``. scipy's
``polygamma``, ``multigammaln``, ``softmax`` and ``log_softmax`` are Python
functions that turn their argument into a numpy array first, so on a value
that carries a derivative they raise; call ``adcompare.polygamma``,
``adcompare.multigammaln``, ``adcompare.softmax`` and
``adcompare.log_softmax`` instead.

The Bessel functions of a fixed order (``iv(v, x)``, ``ive(v, x)``) are
differentiated in the argument ``x``; the order ``v`` is a constant.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc
import sympy

from adcompare.ops.elementwise import (
    add,
    cos,
    exp,
    log,
    log1p,
    negative,
    sin,
    subtract,
    unary,
    where,
)
from adcompare.ops.elementwise.rounding import _flat, _step_function
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    REAL_ONLY,
    Box,
    composite,
    defop,
    public_face,
    raw,
)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _unary(name, value, slope, *, sym, domain, replay=ARRAY_ONLY, **fields):
    """A scipy.special function of one array: :func:`~adcompare.ops.elementwise.unary`
    with SciPy's name, real input only and the array path only, unless told otherwise."""
    fields.setdefault("numpy", (f"scipy.special.{name}",))
    fields.setdefault("complex", REAL_ONLY)
    return unary(name, value, slope, sym=sym, domain=domain, replay=replay, **fields)


# --- the gamma family ----------------------------------------------------------------

gamma = _unary(
    "gamma",
    sc.gamma,
    lambda out, x: out * digamma(x),
    sym=sympy.gamma,
    domain=(0.5, 3.0),
    replay=math.gamma,
    complex=HOLOMORPHIC,
    # Its value is analytic (the complex step differentiates it), but its slope needs
    # digamma, which scipy computes for real numbers only: complex rules raise, naming it.
    dtypes=("float32", "float64"),
    saves=("args", "out"),
    doc="The gamma function, elementwise (scipy.special.gamma).",
    example="gamma(5.0) -> 24.0",
)

gammaln = _unary(
    "gammaln",
    sc.gammaln,
    lambda out, x: digamma(x),
    sym=sympy.loggamma,
    domain=(0.5, 3.0),
    replay=math.lgamma,
    doc="``log|gamma(x)|``, elementwise (scipy.special.gammaln).",
    example="gammaln(1.0) -> 0.0",
)

digamma = _unary(
    "digamma",
    sc.digamma,
    lambda out, x: _polygamma(x, n=1),
    sym=sympy.digamma,
    domain=(0.5, 3.0),
    numpy=("scipy.special.psi",),  # scipy.special.digamma is the ufunc named psi
    doc="The digamma function ``gamma'(x) / gamma(x)``, elementwise (scipy.special.digamma).",
    example="digamma(1.0) -> -0.5772156649015329",
)


def _prepare_polygamma(x, n):
    order = int(n)
    if order != n or order < 0:
        raise ValueError(f"polygamma: the order n={n!r} must be a nonnegative integer")
    return {"n": order}


_polygamma = defop(
    "polygamma",
    # scipy's polygamma is not a ufunc: it returns float64 for float32 input.
    lambda x, n: sc.polygamma(n, x).astype(np.result_type(np.asarray(x), np.float32), copy=False),
    jvp=lambda out, x, x_dot, n: _polygamma(x, n=n + 1) * x_dot,
    vjp=lambda out, x, out_bar, n: out_bar * _polygamma(x, n=n + 1),
    sym=lambda x, n: sympy.polygamma(n, x),
    domain=(0.5, 3.0),
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    elementwise=True,
    saves=("args",),
    prepare=_prepare_polygamma,
    numpy=(),
    test_params=lambda shape, rng: {"n": int(rng.integers(1, 3))},
    doc="The ``n``-th derivative of the digamma function (``n`` a constant).",
)


@public_face(_polygamma)
def polygamma(n: int, x):
    """The ``n``-th derivative of digamma at ``x``, as ``scipy.special.polygamma(n, x)``.

    The order ``n`` is a constant; the derivative is taken in ``x``.

    >>> print(round(float(polygamma(1, 1.0)), 12))  # pi**2 / 6
    1.644934066848
    """
    return _polygamma(x, n=n)


@composite(numpy=())
def multigammaln(a, d: int):
    """The log of the multivariate gamma function of dimension ``d``, as scipy's.

    ``d(d-1)/4 log(pi) + sum_j gammaln(a - j/2)`` for ``j = 0 .. d-1``.

    >>> print(round(float(multigammaln(2.0, 1)), 12))  # gammaln(2) = 0
    0.0
    """
    if int(d) != d or d < 1:
        raise ValueError(f"multigammaln: the dimension d={d!r} must be a positive integer")
    total = d * (d - 1) / 4.0 * math.log(math.pi)
    for j in range(int(d)):
        total = gammaln(a - j / 2.0) + total
    return total


def _rgamma_slope(out, x):
    """``d/dx 1/gamma(x)``: ``-digamma(x) / gamma(x)`` from 1/2 up; below, through the
    reflection ``1/gamma(x) = gamma(1 - x) sin(pi x) / pi``, finite at the poles of gamma
    (0, -1, -2, ...) where 1/gamma is 0 and the first form is 0 * inf."""
    left = raw(x) < 0.5
    reflected, direct = where(left, x, 0.0), where(left, 1.0, x)
    angle = math.pi * reflected
    by_reflection = gamma(1.0 - reflected) * (
        math.pi * cos(angle) - digamma(1.0 - reflected) * sin(angle)
    )
    return where(left, by_reflection / math.pi, negative(digamma(direct)) * rgamma(direct))


rgamma = _unary(
    "rgamma",
    sc.rgamma,
    _rgamma_slope,
    sym=lambda x: sympy.Piecewise(
        (sympy.gamma(1 - x) * sympy.sin(sympy.pi * x) / sympy.pi, x < sympy.S.Half),
        (1 / sympy.gamma(x), True),
    ),
    domain=(0.5, 3.0),
    doc="``1 / gamma(x)``, elementwise: 0 at the poles of gamma, with a finite derivative.",
    example="rgamma(0.0) -> 0.0",
)

gammasgn = _flat(
    "gammasgn",
    sc.gammasgn,
    _step_function("GammaSign", sc.gammasgn),
    ARRAY_ONLY,
    "The sign of ``gamma(x)`` (1 or -1), elementwise (scipy.special.gammasgn).",
    "gammasgn(-0.5) -> -1.0",
    numpy=("scipy.special.gammasgn",),
    complex=REAL_ONLY,
)

beta = defop(
    "beta",
    sc.beta,
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(0.5, 3.0),
    numpy=("scipy.special.beta",),
    sym=sympy.beta,
    jvp=(
        lambda out, x, y, x_dot: out * (digamma(x) - digamma(x + y)) * x_dot,
        lambda out, x, y, y_dot: out * (digamma(y) - digamma(x + y)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * out * (digamma(x) - digamma(x + y)),
        lambda out, x, y, out_bar: out_bar * out * (digamma(y) - digamma(x + y)),
    ),
    doc="The beta function ``gamma(x) gamma(y) / gamma(x + y)``, elementwise.",
    example="beta(1.0, 2.0) -> 0.5",
)

betaln = defop(
    "betaln",
    sc.betaln,
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=(0.5, 3.0),
    saves=("args",),
    numpy=("scipy.special.betaln",),
    sym=lambda x, y: sympy.loggamma(x) + sympy.loggamma(y) - sympy.loggamma(x + y),
    slope=(
        lambda out, x, y: digamma(x) - digamma(x + y),
        lambda out, x, y: digamma(y) - digamma(x + y),
    ),
    doc="``log|beta(x, y)|``, elementwise.",
    example="betaln(1.0, 1.0) -> 0.0",
)


# --- error functions and the logistic family -------------------------------------------

erf = _unary(
    "erf",
    sc.erf,  # keeps float32 float32, and a Python float float64
    lambda out, x: _TWO_OVER_SQRT_PI * exp(negative(x * x)),
    sym=sympy.erf,
    domain=(-2.0, 2.0),
    replay=math.erf,
    method="erf",
    doc="The error function, elementwise.",
    example="erf(0.0) -> 0.0",
)

erfc = _unary(
    "erfc",
    sc.erfc,
    lambda out, x: -_TWO_OVER_SQRT_PI * exp(negative(x * x)),
    sym=sympy.erfc,
    domain=(-2.0, 2.0),
    replay=math.erfc,
    complex=HOLOMORPHIC,
    doc="The complementary error function ``1 - erf(x)``, elementwise.",
    example="erfc(0.0) -> 1.0",
)

erfinv = _unary(
    "erfinv",
    sc.erfinv,
    lambda out, x: _SQRT_PI_OVER_TWO * exp(out * out),
    sym=sympy.erfinv,
    domain=(-0.9, 0.9),
    saves=("out",),
    doc="The inverse of ``erf`` on ``(-1, 1)``, elementwise.",
    example="erfinv(0.0) -> 0.0",
)

erfcinv = _unary(
    "erfcinv",
    sc.erfcinv,
    lambda out, x: -_SQRT_PI_OVER_TWO * exp(out * out),
    sym=sympy.erfcinv,
    domain=(0.1, 1.9),
    saves=("out",),
    doc="The inverse of ``erfc`` on ``(0, 2)``, elementwise.",
    example="erfcinv(0.5) -> 0.4769362762044699",
)

logit = _unary(
    "logit",
    sc.logit,
    lambda out, x: 1.0 / (x * (1.0 - x)),
    sym=lambda x: sympy.log(x / (1 - x)),
    domain=(0.1, 0.9),
    doc="``log(x / (1 - x))``, elementwise, for ``0 < x < 1``: the inverse of ``expit``.",
    example="logit(0.5) -> 0.0",
)

expit = _unary(
    "expit",
    sc.expit,
    lambda out, x: out * (1.0 - out),
    # exp(-x) overflows far below 0, where exp(x) / (1 + exp(x)) does not.
    sym=lambda x: sympy.Piecewise(
        (sympy.exp(x) / (1 + sympy.exp(x)), x < 0), (1 / (1 + sympy.exp(-x)), True)
    ),
    domain=(-3.0, 3.0),
    saves=("out",),
    doc="The logistic function ``1 / (1 + exp(-x))``, elementwise (scipy's sigmoid).",
    example="expit(0.0) -> 0.5",
)

xlogy = defop(
    "xlogy",
    sc.xlogy,
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=((-2.0, 2.0), (0.5, 3.0)),
    saves=("args",),
    numpy=("scipy.special.xlogy",),
    sym=lambda x, y: x * sympy.log(y),
    slope=(
        lambda out, x, y: log(y),
        lambda out, x, y: x / y,
    ),
    doc="``x * log(y)``, elementwise, and 0 where ``x = 0`` (also at ``y = 0``).",
    example="xlogy(0.0, 0.0) -> 0.0",
)

xlog1py = defop(
    "xlog1py",
    sc.xlog1py,
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    nargs=2,
    elementwise=True,
    domain=((-2.0, 2.0), (-0.5, 2.0)),
    saves=("args",),
    numpy=("scipy.special.xlog1py",),
    sym=lambda x, y: x * sympy.log(1 + y),
    slope=(
        lambda out, x, y: log1p(y),
        lambda out, x, y: x / (1.0 + y),
    ),
    doc="``x * log1p(y)``, elementwise, and 0 where ``x = 0``.",
    example="xlog1py(0.0, -1.0) -> 0.0",
)

entr = _unary(
    "entr",
    sc.entr,
    lambda out, x: negative(log(x) + 1.0),
    sym=lambda x: -x * sympy.log(x),
    domain=(0.1, 3.0),
    doc="The entropy term ``-x log(x)``, elementwise (0 at 0, -inf below).",
    example="entr(1.0) -> -0.0",
)


# --- Bessel functions, differentiated in the argument ----------------------------------

j0 = _unary(
    "j0",
    sc.j0,
    lambda out, x: negative(j1(x)),
    sym=lambda x: sympy.besselj(0, x),
    domain=(-3.0, 3.0),
    label="J0",
    doc="The Bessel function of the first kind of order 0, elementwise.",
    example="j0(0.0) -> 1.0",
)

# The order-1 slopes J0 - J1/x, Y0 - Y1/x and I0 - I1/x are tested away from x = 0.
j1 = _unary(
    "j1",
    sc.j1,
    lambda out, x: j0(x) - out / x,
    sym=lambda x: sympy.besselj(1, x),
    domain=(0.5, 3.0),
    label="J1",
    saves=("args", "out"),
    doc="The Bessel function of the first kind of order 1, elementwise.",
    example="j1(0.0) -> 0.0",
)

y0 = _unary(
    "y0",
    sc.y0,
    lambda out, x: negative(y1(x)),
    sym=lambda x: sympy.bessely(0, x),
    domain=(0.5, 3.0),
    label="Y0",
    doc="The Bessel function of the second kind of order 0, for ``x > 0``, elementwise.",
    example="y0(1.0) -> 0.08825696421567697",
)

y1 = _unary(
    "y1",
    sc.y1,
    lambda out, x: y0(x) - out / x,
    sym=lambda x: sympy.bessely(1, x),
    domain=(0.5, 3.0),
    label="Y1",
    saves=("args", "out"),
    doc="The Bessel function of the second kind of order 1, for ``x > 0``, elementwise.",
    example="y1(2.0) -> -0.10703243154093756",
)

i0 = _unary(
    "i0",
    sc.i0,
    lambda out, x: i1(x),
    sym=lambda x: sympy.besseli(0, x),
    domain=(-3.0, 3.0),
    label="I0",
    doc="The modified Bessel function of the first kind of order 0, elementwise.",
    example="i0(0.0) -> 1.0",
)

i1 = _unary(
    "i1",
    sc.i1,
    # I1' = (I0 + I2) / 2, finite at 0 (I0 - I1 / x is 0 / 0 there).
    lambda out, x: 0.5 * (i0(x) + _iv(x, v=2.0)),
    sym=lambda x: sympy.besseli(1, x),
    domain=(-3.0, 3.0),
    label="I1",
    doc="The modified Bessel function of the first kind of order 1, elementwise.",
    example="i1(0.0) -> 0.0",
)


def _prepare_order(x, v):
    if isinstance(v, Box) or np.ndim(v) != 0:
        raise TypeError(
            "the Bessel order v must be one constant number: the derivative is taken in x only"
        )
    return {"v": float(v)}


def _order_cases(shape, rng):
    return {"v": float(rng.choice([0.0, 1.5, 2.0]))}


def _prepare_integer_order(x, n):
    if isinstance(n, Box) or np.ndim(n) != 0 or int(n) != n:
        raise TypeError(
            f"yn: the order n={n!r} must be one constant integer (the derivative is taken in "
            "x only); for a real order use scipy's yv"
        )
    return {"n": int(n)}


def _of_order(name, value, combine, *, order, sym, doc, **fields):
    """A Bessel function of a constant ``order`` (a static parameter), differentiated in
    ``x`` by the recurrence ``f_v' = combine(f_(v-1), f_(v+1)) / 2``."""

    def slope(x, **params):
        below, above = ({order: params[order] + step} for step in (-1, 1))
        return 0.5 * combine(op(x, **below), op(x, **above))

    op = defop(
        name,
        value,
        jvp=lambda out, x, x_dot, **params: slope(x, **params) * x_dot,
        vjp=lambda out, x, out_bar, **params: out_bar * slope(x, **params),
        sym=sym,
        domain=(0.5, 3.0),
        replay=ARRAY_ONLY,
        complex=REAL_ONLY,
        elementwise=True,
        saves=("args",),
        label=name.capitalize(),
        doc=doc,
        **fields,
    )
    return op


_iv = _of_order(
    "iv",
    lambda x, v: sc.iv(v, x),
    add,  # I_v' = (I_(v-1) + I_(v+1)) / 2
    order="v",
    sym=lambda x, v: sympy.besseli(v, x),
    prepare=_prepare_order,
    numpy=("scipy.special.iv",),  # scipy takes the order first, as iv() does
    test_params=_order_cases,
    doc="The modified Bessel function of the first kind of order ``v`` (a constant).",
)

_jn = _of_order(
    "jn",
    lambda x, v: sc.jv(v, x),
    subtract,  # J_v' = (J_(v-1) - J_(v+1)) / 2
    order="v",
    sym=lambda x, v: sympy.besselj(v, x),
    prepare=_prepare_order,
    numpy=("scipy.special.jv",),  # scipy.special.jn is the ufunc jv, of any real order
    test_params=_order_cases,
    doc="The Bessel function of the first kind of order ``v`` (a constant).",
)

_yn = _of_order(
    "yn",
    lambda x, n: sc.yn(float(n), x),  # a float order keeps float32 float32
    subtract,  # Y_n' = (Y_(n-1) - Y_(n+1)) / 2
    order="n",
    sym=lambda x, n: sympy.bessely(n, x),
    prepare=_prepare_integer_order,
    numpy=("scipy.special.yn",),
    test_params=lambda shape, rng: {"n": int(rng.choice([0, 1, 2]))},
    doc="The Bessel function of the second kind of integer order ``n`` (a constant), x > 0.",
)


def _sign(x):
    return np.sign(raw(x))


_ive = defop(
    "ive",
    lambda x, v: sc.ive(v, x),
    # ive = iv * exp(-|x|): ive' = (ive_(v-1) + ive_(v+1)) / 2 - sign(x) * ive.
    jvp=lambda out, x, x_dot, v: _ive_slope(out, x, v) * x_dot,
    vjp=lambda out, x, out_bar, v: out_bar * _ive_slope(out, x, v),
    sym=lambda x, v: sympy.besseli(v, x) * sympy.exp(-sympy.Abs(x)),
    domain=(0.5, 3.0),
    replay=ARRAY_ONLY,
    complex="is scaled by exp(-|Re x|) for complex x, which is not holomorphic",
    elementwise=True,
    saves=("args", "out"),
    prepare=_prepare_order,
    numpy=("scipy.special.ive",),
    test_params=_order_cases,
    label="Ive",
    doc="The exponentially scaled ``iv(v, x) * exp(-|x|)`` (``v`` a constant).",
)


def _ive_slope(out, x, v):
    return 0.5 * (_ive(x, v=v - 1.0) + _ive(x, v=v + 1.0)) - _sign(x) * out


@public_face(_iv)
def iv(v: float, x):
    """The modified Bessel function ``I_v(x)``, as ``scipy.special.iv(v, x)``.

    The order ``v`` is a constant; the derivative is taken in ``x``.

    >>> print(round(float(iv(0.0, 0.0)), 12))
    1.0
    """
    return _iv(x, v=v)


@public_face(_jn)
def jn(v, x):
    """The Bessel function ``J_v(x)``, as ``scipy.special.jn(v, x)`` (scipy's ``jv``: any
    real order). The order is a constant; the derivative is taken in ``x``.

    >>> print(round(float(jn(2, 1.0)), 12))
    0.114903484932
    """
    return _jn(x, v=v)


@public_face(_yn)
def yn(n: int, x):
    """The Bessel function ``Y_n(x)`` of integer order, as ``scipy.special.yn(n, x)``.

    The order is a constant; the derivative is taken in ``x``.

    >>> print(round(float(yn(2, 1.0)), 12))
    -1.650682606816
    """
    return _yn(x, n=n)


@public_face(_ive)
def ive(v: float, x):
    """``iv(v, x) * exp(-|x|)``, as ``scipy.special.ive(v, x)`` (``v`` a constant).

    >>> print(round(float(ive(0.0, 0.0)), 12))
    1.0
    """
    return _ive(x, v=v)
