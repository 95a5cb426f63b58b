"""Log-densities of ``scipy.stats`` distributions, built from the op set (``adcompare.stats``).

Each distribution is a namespace of functions with scipy's signatures
(``adcompare.stats.norm.logpdf(x, loc=0.0, scale=1.0)``), composed from
primitives, so every argument (the point and the parameters) is
differentiable in every mode and to every order, except where noted: the
degrees of freedom of ``t.cdf``/``t.logcdf`` are constants. scipy's own ``scipy.stats`` objects
turn their arguments into numpy arrays, so they cannot carry a derivative.

>>> import adcompare as ad
>>> print(round(float(ad.grad(lambda m: ad.stats.norm.logpdf(1.0, m, 2.0))(0.0)), 12))
0.25
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from adcompare.ops.elementwise import divide, exp, log, log1p, multiply, subtract, where
from adcompare.ops.linalg_composite import solve_triangular
from adcompare.ops.matrix_functions import cholesky
from adcompare.ops.rearrange import diagonal
from adcompare.ops.reductions import sum
from adcompare.ops.registry import Box, ndim_of, raw, shape_of
from adcompare.ops.shape import reshape, transpose
from adcompare.ops.special import betaln, gammaln, log_ndtr, ndtr, stdtr, xlog1py, xlogy

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _standardize(x, loc, scale):
    # The op set's division: Python floats would raise at scale 0 where numpy gives inf.
    return divide(subtract(x, loc), scale)


def _on_support(z, outside, safe, log_density):
    """``log_density(z)`` where ``z`` lies in the support, -inf where ``outside``
    holds (as scipy), with a derivative of 0 there: the density is computed at
    ``safe`` instead, so no NaN from outside the support reaches a gradient."""
    inside = where(outside, safe, z)
    return where(outside, -np.inf, log_density(inside))


# --- norm ------------------------------------------------------------------------------


def _norm_logpdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logpdf``.

    >>> print(round(float(norm.logpdf(0.0)), 12))
    -0.918938533205
    """
    z = _standardize(x, loc, scale)
    return -0.5 * z * z - log(scale) - _HALF_LOG_2PI


def _norm_pdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.pdf``.

    >>> print(round(float(norm.pdf(0.0)), 12))
    0.398942280401
    """
    return exp(_norm_logpdf(x, loc, scale))


def _norm_cdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.cdf``.

    >>> print(norm.cdf(0.0))
    0.5
    """
    return ndtr(_standardize(x, loc, scale))


def _norm_logcdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logcdf``, accurate far into the lower tail.

    >>> print(round(float(norm.logcdf(-40.0)), 6))
    -804.608442
    """
    return log_ndtr(_standardize(x, loc, scale))


norm = SimpleNamespace(logpdf=_norm_logpdf, pdf=_norm_pdf, cdf=_norm_cdf, logcdf=_norm_logcdf)


# --- t ---------------------------------------------------------------------------------


def _t_logpdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.logpdf``.

    >>> print(round(float(t.logpdf(0.0, 3.0)), 10))
    -1.0008888496
    """
    z = _standardize(x, loc, scale)
    return (
        _log_gamma_ratio(0.5 * df)
        - 0.5 * log(df * math.pi)
        - log(scale)
        - 0.5 * (df + 1.0) * log1p(z * z / df)
    )


def _log_gamma_ratio(a):
    """``log Γ(a + 1/2) - log Γ(a)`` without the cancellation of two large logarithms:
    ``log √π - betaln(a, 1/2)`` below 50, the asymptotic series above (both within
    about 1e-15; ``gammaln(a + 1/2) - gammaln(a)`` loses all digits at ``a = 1e17``)."""
    large = np.asarray(raw(a)) >= 50.0
    a_large = where(large, a, 50.0)
    series = (
        0.5 * log(a_large)
        - 1.0 / (8.0 * a_large)
        + 1.0 / (192.0 * a_large**3)
        - 1.0 / (640.0 * a_large**5)
        + 17.0 / (14336.0 * a_large**7)
    )
    return where(large, series, 0.5 * math.log(math.pi) - betaln(where(large, 1.0, a), 0.5))


def _t_pdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.pdf``.

    >>> print(round(float(t.pdf(0.0, 3.0)), 10))
    0.3675525969
    """
    return exp(_t_logpdf(x, df, loc, scale))


def _t_cdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.cdf``; ``df`` is a constant.

    >>> print(t.cdf(0.0, 3.0))
    0.5
    """
    return stdtr(df, _standardize(x, loc, scale))


def _t_logcdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.logcdf``; ``df`` is a constant.

    >>> print(round(float(t.logcdf(0.0, 3.0)), 12))
    -0.69314718056
    """
    return log(_t_cdf(x, df, loc, scale))


t = SimpleNamespace(logpdf=_t_logpdf, pdf=_t_pdf, cdf=_t_cdf, logcdf=_t_logcdf)


# --- gamma, beta, chi2 ----------------------------------------------------------------


def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    """``scipy.stats.gamma.logpdf`` (shape ``a``); -inf below ``loc``.

    >>> print(round(float(gamma.logpdf(1.0, 2.0)), 12), gamma.logpdf(-1.0, 2.0))
    -1.0 -inf
    """
    z = _standardize(x, loc, scale)
    return _on_support(
        z, raw(z) < 0, 1.0, lambda z: xlogy(a - 1.0, z) - z - gammaln(a) - log(scale)
    )


def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    """``scipy.stats.beta.logpdf``; -inf outside ``[loc, loc + scale]``.

    >>> print(round(float(beta.logpdf(0.5, 2.0, 2.0)), 10), beta.logpdf(1.5, 2.0, 2.0))
    0.4054651081 -inf
    """
    z = _standardize(x, loc, scale)
    return _on_support(
        z,
        (raw(z) < 0) | (raw(z) > 1),
        0.5,
        lambda z: xlogy(a - 1.0, z) + xlog1py(b - 1.0, -z) - betaln(a, b) - log(scale),
    )


def _chi2_logpdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.chi2.logpdf``; -inf below ``loc``.

    >>> print(round(float(chi2.logpdf(1.0, 2.0)), 10), chi2.logpdf(-1.0, 2.0))
    -1.1931471806 -inf
    """
    z = _standardize(x, loc, scale)
    half = 0.5 * df
    return _on_support(
        z,
        raw(z) < 0,
        1.0,
        lambda z: (
            xlogy(half - 1.0, z) - 0.5 * z - gammaln(half) - half * math.log(2.0) - log(scale)
        ),
    )


gamma = SimpleNamespace(
    logpdf=_gamma_logpdf, pdf=lambda *args, **kw: exp(_gamma_logpdf(*args, **kw))
)
beta = SimpleNamespace(logpdf=_beta_logpdf, pdf=lambda *args, **kw: exp(_beta_logpdf(*args, **kw)))
chi2 = SimpleNamespace(logpdf=_chi2_logpdf, pdf=lambda *args, **kw: exp(_chi2_logpdf(*args, **kw)))


# --- poisson ---------------------------------------------------------------------------


def _poisson_logpmf(k, mu, loc=0.0):
    """``scipy.stats.poisson.logpmf``; the count ``k`` is data, ``mu`` differentiable;
    -inf where ``k - loc`` is not a non-negative integer.

    >>> print(round(float(poisson.logpmf(2.0, 3.0)), 10), poisson.logpmf(2.5, 3.0))
    -1.4959226032 -inf
    """
    k = np.asarray(raw(k), dtype=float) - raw(loc)
    return _on_support(
        k, (k < 0) | (k != np.floor(k)), 0.0, lambda k: xlogy(k, mu) - mu - gammaln(k + 1.0)
    )


poisson = SimpleNamespace(
    logpmf=_poisson_logpmf, pmf=lambda *args, **kw: exp(_poisson_logpmf(*args, **kw))
)


# --- dirichlet -------------------------------------------------------------------------


def _check_simplex(points) -> None:
    """Refuse, as scipy does, points off the simplex: the density is not defined there."""
    if np.any((points < 0) | (points > 1)) or np.any(np.abs(np.sum(points, axis=0) - 1) > 1e-9):
        raise ValueError(
            "dirichlet.logpdf: x must lie on the simplex (entries in [0, 1] summing to 1 "
            f"along the first axis), got {points!r}; normalise x first"
        )


def _dirichlet_logpdf(x, alpha):
    """``scipy.stats.dirichlet.logpdf``: ``x`` of shape ``(K,)``, or ``(K, N)`` for N points.

    >>> print(round(float(dirichlet.logpdf([0.2, 0.3, 0.5], [1.0, 2.0, 3.0])), 10))
    1.5040773968
    """
    alpha = alpha if isinstance(alpha, Box) else np.asarray(alpha, dtype=float)
    if ndim_of(alpha) != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be a vector, not shape {shape_of(alpha)}")
    _check_simplex(np.asarray(raw(x)))
    if ndim_of(x) == 2:
        weights = xlogy(alpha[:, None] - 1.0, x)
        return sum(weights, axis=0) + gammaln(sum(alpha)) - sum(gammaln(alpha))
    return sum(xlogy(alpha - 1.0, x)) + gammaln(sum(alpha)) - sum(gammaln(alpha))


dirichlet = SimpleNamespace(
    logpdf=_dirichlet_logpdf, pdf=lambda *args, **kw: exp(_dirichlet_logpdf(*args, **kw))
)


# --- multivariate_normal ---------------------------------------------------------------


def _mvn_logpdf(x, mean=None, cov=1.0):
    """``scipy.stats.multivariate_normal.logpdf`` for points along the last axis of ``x``.

    Differentiable in ``x``, ``mean`` and ``cov`` (through its Cholesky
    factor L: the quadratic form is ``|L⁻¹(x - mean)|²`` and the log
    determinant ``2·Σ log diag(L)``). ``cov`` is a matrix or a number (times
    the identity); as numpy's Cholesky factorisation, only its lower triangle
    is read.

    >>> print(round(float(multivariate_normal.logpdf([0.0, 0.0], cov=np.eye(2))), 10))
    -1.8378770664
    """
    x = x if isinstance(x, Box) else np.asarray(x, dtype=float)
    n = shape_of(x)[-1] if ndim_of(x) else 1
    if ndim_of(cov) < 2:
        cov = multiply(cov, np.eye(n))
    factor = cholesky(cov)
    centred = x if mean is None else x - mean
    points = reshape(centred, (-1, n))  # one point a row
    whitened = solve_triangular(factor, transpose(points), lower=True)
    quadratic = reshape(sum(whitened * whitened, axis=0), shape_of(centred)[:-1])
    log_det = 2.0 * sum(log(diagonal(factor, 0, -2, -1)), axis=-1)
    return -0.5 * (quadratic + log_det + n * math.log(2.0 * math.pi))


multivariate_normal = SimpleNamespace(
    logpdf=_mvn_logpdf, pdf=lambda *args, **kw: exp(_mvn_logpdf(*args, **kw))
)
