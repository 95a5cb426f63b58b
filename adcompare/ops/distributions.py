"""Distribution functions of ``scipy.special``: the normal's (``ndtr``, ``log_ndtr``),
Student's t (``stdtr``) and the regularised incomplete gamma and beta functions
(``gammainc``, ``gammaincc``, ``betainc``), from which ``adcompare.stats`` builds the
cdfs and survival functions of its distributions.

Each is differentiated in its point ``x`` (``t`` for ``stdtr``), where the derivative
is the density. The shape parameters (the degrees of freedom ``df``, the shapes ``a``
and ``b``) are constants, a number or an array that broadcasts against ``x``: their
derivatives need functions scipy does not provide, so a value that carries a
derivative there is refused, naming what is differentiable. Calling scipy's ufunc on
a box (``scipy.special.gammainc(a, t)``) runs the op here.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc
import sympy

from adcompare.ops.elementwise import exp, log1p, negative, unary
from adcompare.ops.registry import ARRAY_ONLY, REAL_ONLY, Box, defop, public_face
from adcompare.ops.special import xlog1py, xlogy
from adcompare.runtime.dtypes import float_dtype

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

ndtr = unary(
    "ndtr",
    sc.ndtr,
    lambda out, x: _INV_SQRT_2PI * exp(-0.5 * x * x),
    sym=lambda x: (1 + sympy.erf(x / sympy.sqrt(2))) / 2,
    domain=(-3.0, 3.0),
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    numpy=("scipy.special.ndtr",),
    doc="The standard normal distribution function, elementwise.",
    example="ndtr(0.0) -> 0.5",
)


class _Erfcx(sympy.Function):
    """SymPy's scaled complementary error function ``exp(z²) erfc(z)``, which SymPy
    lacks: finite where ``erfc`` underflows, evaluated by scipy's ``erfcx``."""

    _imp_ = staticmethod(sc.erfcx)

    def fdiff(self, argindex=1):
        (z,) = self.args
        return 2 * z * _Erfcx(z) - 2 / sympy.sqrt(sympy.pi)

    def _eval_evalf(self, prec):
        (z,) = self.args
        return (sympy.exp(z**2) * sympy.erfc(z))._eval_evalf(prec)

    def _eval_is_finite(self):
        return self.args[0].is_extended_real


def _sym_log_ndtr(x):
    """``log((1 + erf(x/√2)) / 2)``, through ``erfcx`` below 0, where ``1 + erf``
    underflows to 0 far into the tail (log_ndtr(-1000) is -500007, not -inf)."""
    tail = sympy.log(_Erfcx(-x / sympy.sqrt(2)) / 2) - x**2 / 2
    return sympy.Piecewise((tail, x < 0), (sympy.log((1 + sympy.erf(x / sympy.sqrt(2))) / 2), True))


log_ndtr = unary(
    "log_ndtr",
    sc.log_ndtr,
    # pdf / cdf, formed in logs: exp(-x²/2 - log_ndtr(x)) / sqrt(2 pi) never overflows.
    lambda out, x: _INV_SQRT_2PI * exp(-0.5 * x * x - out),
    sym=_sym_log_ndtr,
    domain=(-3.0, 3.0),
    replay=ARRAY_ONLY,
    complex=REAL_ONLY,
    numpy=("scipy.special.log_ndtr",),
    special=(-40.0, -1000.0),
    saves=("args", "out"),
    doc="``log(ndtr(x))``, elementwise, accurate far into the lower tail.",
    example="log_ndtr(0.0) -> -0.6931471805599453",
)


# --- functions with constant shape parameters ------------------------------------------


def _constant(function: str, name: str, value, point: str = "x"):
    """A shape parameter as a constant: a float, or a float array that broadcasts against
    the point. A box is refused: the derivative is taken in the point only."""
    if isinstance(value, Box):
        raise TypeError(
            f"{function}: {name} must be a constant (a number or an array): {function} is "
            f"differentiable in {point} only, not in {name}; pass {name} without its "
            "derivative (x.detach() of a Tensor, x.primal of a Dual) if you mean it as one"
        )
    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array


def _of_constant(function, *values):
    """``function(*values)`` of constants, a Python float where it is one number (so that
    a float32 point stays float32)."""
    found = function(*values)
    return float(found) if np.ndim(found) == 0 else found


def _power(shape, x):
    """``shape - 1``, the power of ``x`` in a density, in ``x``'s dtype where ``shape`` is
    one number: scipy's ``xlogy`` turns a float32 ``x`` float64 beside a Python float."""
    return shape - 1.0 if np.ndim(shape) else np.asarray(shape - 1.0, dtype=float_dtype(x))


def _shapes(*names):
    """The registry tests' shape parameters: one number each."""
    return lambda shape, rng: {name: float(rng.uniform(0.7, 3.0)) for name in names}


def _in_x(name, value, density, *, prepare, **fields):
    """An elementwise op of the point whose derivative is ``density(x, **params)``, the
    params being its constant shape parameters."""
    return defop(
        name,
        value,
        jvp=lambda out, x, x_dot, **params: density(x, **params) * x_dot,
        vjp=lambda out, x, out_bar, **params: out_bar * density(x, **params),
        replay=ARRAY_ONLY,
        complex=REAL_ONLY,
        elementwise=True,
        saves=("args",),
        prepare=prepare,
        numpy=(f"scipy.special.{name}",),
        **fields,
    )


# --- Student's t -----------------------------------------------------------------------


def _t_density(x, df):
    """Student's t density at ``x`` with ``df`` (constant) degrees of freedom."""
    log_norm = _of_constant(
        lambda d: sc.gammaln((d + 1) / 2) - sc.gammaln(d / 2) - 0.5 * np.log(d * math.pi), df
    )
    return exp(log_norm - (df + 1) / 2 * log1p(x * x / df))


class _SymStudentCdf(sympy.Function):
    """Student's t distribution function for SymPy: its derivative in ``x`` is the density.

    SymPy's closed form (a hypergeometric function) has no numeric evaluator here,
    so the oracle is the density written out in SymPy: the CDF's defining identity.
    """

    _imp_ = staticmethod(lambda x, df: sc.stdtr(df, x))
    is_extended_real = True
    is_real = True

    def fdiff(self, argindex=1):
        x, df = self.args
        if argindex != 1:
            raise sympy.ArgumentIndexError(self, argindex)
        scale = sympy.gamma((df + 1) / 2) / (sympy.sqrt(df * sympy.pi) * sympy.gamma(df / 2))
        return scale * (1 + x**2 / df) ** (-(df + 1) / 2)


_stdtr = _in_x(
    "stdtr",
    lambda x, df: sc.stdtr(df, x),
    _t_density,
    prepare=lambda x, df: {"df": _constant("stdtr", "df", df, "t")},
    sym=lambda x, df: _SymStudentCdf(x, df),
    domain=(-3.0, 3.0),
    test_params=_shapes("df"),
    doc="Student's t distribution function; the degrees of freedom ``df`` are constants.",
)


@public_face(_stdtr)
def stdtr(df, t):
    """Student's t distribution function at ``t``, as ``scipy.special.stdtr(df, t)``.

    The degrees of freedom ``df`` (a number, or an array that broadcasts against
    ``t``) are constants; the derivative is taken in ``t``.

    >>> print(stdtr(3.0, 0.0), stdtr([1.0, 30.0], 0.0))
    0.5 [0.5 0.5]
    """
    return _stdtr(t, df=df)


# --- the regularised incomplete gamma functions ------------------------------------------


def _gamma_density(x, a):
    """``x^(a-1) e^(-x) / gamma(a)``: the slope of ``gammainc(a, x)`` in ``x``."""
    return exp(xlogy(_power(a, x), x) - x - _of_constant(sc.gammaln, a))


_gammainc = _in_x(
    "gammainc",
    lambda x, a: sc.gammainc(a, x),
    _gamma_density,
    prepare=lambda x, a: {"a": _constant("gammainc", "a", a)},
    sym=lambda x, a: sympy.lowergamma(a, x) / sympy.gamma(a),
    domain=(0.1, 3.0),
    test_params=_shapes("a"),
    doc="The regularised lower incomplete gamma function ``P(a, x)`` (``a`` a constant).",
)

_gammaincc = _in_x(
    "gammaincc",
    lambda x, a: sc.gammaincc(a, x),
    lambda x, a: negative(_gamma_density(x, a)),
    prepare=lambda x, a: {"a": _constant("gammaincc", "a", a)},
    sym=lambda x, a: sympy.uppergamma(a, x) / sympy.gamma(a),
    domain=(0.1, 3.0),
    test_params=_shapes("a"),
    doc="The regularised upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.",
)


@public_face(_gammainc)
def gammainc(a, x):
    """``P(a, x)``, as ``scipy.special.gammainc(a, x)``: the gamma distribution function.

    Differentiable in ``x``; the shape ``a`` (a number or an array) is a constant.

    >>> print(round(float(gammainc(1.0, 1.0)), 12))  # 1 - exp(-1)
    0.632120558829
    """
    return _gammainc(x, a=a)


@public_face(_gammaincc)
def gammaincc(a, x):
    """``Q(a, x) = 1 - P(a, x)``, as ``scipy.special.gammaincc(a, x)``, accurate where
    ``P`` is near 1. Differentiable in ``x``; the shape ``a`` is a constant.

    >>> print(round(float(gammaincc(1.0, 1.0)), 12))  # exp(-1)
    0.367879441171
    """
    return _gammaincc(x, a=a)


# --- the regularised incomplete beta function --------------------------------------------


def _beta_density(x, a, b):
    """``x^(a-1) (1-x)^(b-1) / beta(a, b)``: the slope of ``betainc(a, b, x)`` in ``x``."""
    log_density = xlogy(_power(a, x), x) + xlog1py(_power(b, x), negative(x))
    return exp(log_density - _of_constant(sc.betaln, a, b))


def _prepare_betainc(x, a, b):
    return {"a": _constant("betainc", "a", a), "b": _constant("betainc", "b", b)}


_betainc = _in_x(
    "betainc",
    lambda x, a, b: sc.betainc(a, b, x),
    _beta_density,
    prepare=_prepare_betainc,
    sym=lambda x, a, b: sympy.betainc_regularized(a, b, 0, x),
    domain=(0.05, 0.95),
    test_params=_shapes("a", "b"),
    doc="The regularised incomplete beta function ``I_x(a, b)`` (``a``, ``b`` constants).",
)


@public_face(_betainc)
def betainc(a, b, x):
    """``I_x(a, b)``, as ``scipy.special.betainc(a, b, x)``: the beta distribution function.

    Differentiable in ``x``; the shapes ``a`` and ``b`` are constants.

    >>> print(round(float(betainc(2.0, 1.0, 0.5)), 12))  # x**2
    0.25
    """
    return _betainc(x, a=a, b=b)
