"""Densities and distribution functions of ``scipy.stats`` distributions, built from the
op set (``adcompare.stats``).

Each distribution is a namespace of functions with scipy's signatures
(``adcompare.stats.norm.logpdf(x, loc=0.0, scale=1.0)``): ``logpdf`` and ``pdf``
(``logpmf`` and ``pmf``), ``cdf``, ``logcdf``, ``sf`` and ``logsf``, and
``multivariate_normal.entropy``. They are composed from primitives, so every
argument (the point and the parameters) is differentiable in every mode and to
every order, except the shape parameters of the distribution functions (``df`` of
``t`` and ``chi2``, ``a`` and ``b`` of ``gamma`` and ``beta``): their derivatives
need special functions scipy lacks, so ``cdf``, ``sf`` and their logarithms are
differentiable in ``x``, ``loc`` and ``scale`` (``mu`` for ``poisson``), and a
shape parameter that carries a derivative is refused. scipy's own ``scipy.stats``
objects turn their arguments into numpy arrays, so they cannot carry a derivative:
called on a box they raise, naming the function here.

>>> import adcompare as ad
>>> print(round(float(ad.grad(lambda m: ad.stats.norm.logpdf(1.0, m, 2.0))(0.0)), 12))
0.25
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from adcompare.ops.distributions import betainc, gammainc, gammaincc, log_ndtr, ndtr, stdtr
from adcompare.ops.elementwise import (
    divide,
    exp,
    log,
    log1p,
    multiply,
    negative,
    subtract,
    where,
)
from adcompare.ops.linalg_composite import solve_triangular
from adcompare.ops.matrix_functions import cholesky
from adcompare.ops.rearrange import diagonal
from adcompare.ops.reductions import sum
from adcompare.ops.registry import Box, ndim_of, raw, shape_of
from adcompare.ops.shape import reshape, transpose
from adcompare.ops.special import betaln, gammaln, xlog1py, xlogy

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _standardize(x, loc, scale):
    # The op set's division: Python floats would raise at scale 0 where numpy gives inf.
    return divide(subtract(x, loc), scale)


def _on_support(z, outside, safe, log_density, value=-np.inf):
    """``log_density(z)`` where ``z`` lies in the support, ``value`` (-inf) where
    ``outside`` holds (as scipy), with a derivative of 0 there: the density is computed
    at ``safe`` instead, so no NaN from outside the support reaches a gradient."""
    inside = where(outside, safe, z)
    return where(outside, value, log_density(inside))


def _shape(function: str, name: str, value):
    """A shape parameter of a distribution function (``cdf``, ``sf``) as a constant: its
    derivative there needs functions scipy does not have, so a box is refused."""
    if isinstance(value, Box):
        raise TypeError(
            f"{function}: {name} must be a constant (a number or an array): {function} is "
            f"differentiable in x, loc and scale, not in {name}; pass {name} without its "
            "derivative (x.detach() of a Tensor, x.primal of a Dual) if you mean it as one"
        )
    return value


def _distribution_functions(cdf, sf, name: str) -> dict:
    """``cdf``, ``sf`` and their logarithms ``logcdf``, ``logsf`` (scipy's four
    distribution functions) of the distribution ``name``."""

    def logcdf(*args, **kwargs):
        with np.errstate(divide="ignore"):  # log(0) is -inf, as scipy gives it
            return log(cdf(*args, **kwargs))

    def logsf(*args, **kwargs):
        with np.errstate(divide="ignore"):
            return log(sf(*args, **kwargs))

    for function, of in ((logcdf, "cdf"), (logsf, "sf")):
        function.__doc__ = f"``scipy.stats.{name}.log{of}``: the log of ``{name}.{of}``."
        function.__qualname__ = function.__name__ = f"_{name}_{function.__name__}"
    return {"cdf": cdf, "logcdf": logcdf, "sf": sf, "logsf": logsf}


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


def _norm_sf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.sf``: ``1 - cdf``, accurate far into the upper tail.

    >>> print(float(norm.sf(10.0)) > 0.0, 1.0 - norm.cdf(10.0))
    True 0.0
    """
    return ndtr(negative(_standardize(x, loc, scale)))


def _norm_logsf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logsf``.

    >>> print(round(float(norm.logsf(40.0)), 6))
    -804.608442
    """
    return log_ndtr(negative(_standardize(x, loc, scale)))


norm = SimpleNamespace(
    logpdf=_norm_logpdf,
    pdf=_norm_pdf,
    cdf=_norm_cdf,
    logcdf=_norm_logcdf,
    sf=_norm_sf,
    logsf=_norm_logsf,
)


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
    """``scipy.stats.t.cdf``; ``df`` (a number or an array) is a constant.

    >>> print(t.cdf(0.0, 3.0), t.cdf([0.0, 0.0], [1.0, 30.0]))
    0.5 [0.5 0.5]
    """
    return stdtr(_shape("t.cdf", "df", df), _standardize(x, loc, scale))


def _t_sf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.sf``; ``df`` is a constant.

    >>> print(round(float(t.sf(1.0, 1.0)), 12))
    0.25
    """
    return stdtr(_shape("t.sf", "df", df), negative(_standardize(x, loc, scale)))


t = SimpleNamespace(logpdf=_t_logpdf, pdf=_t_pdf, **_distribution_functions(_t_cdf, _t_sf, "t"))


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


def _gamma_cdf(x, a, loc=0.0, scale=1.0):
    """``scipy.stats.gamma.cdf``; the shape ``a`` is a constant; 0 below ``loc``.

    >>> print(round(float(gamma.cdf(1.0, 1.0)), 12), gamma.cdf(-1.0, 2.0))
    0.632120558829 0.0
    """
    a, z = _shape("gamma.cdf", "a", a), _standardize(x, loc, scale)
    return _on_support(z, raw(z) < 0, 1.0, lambda z: gammainc(a, z), 0.0)


def _gamma_sf(x, a, loc=0.0, scale=1.0):
    """``scipy.stats.gamma.sf``; the shape ``a`` is a constant; 1 below ``loc``.

    >>> print(round(float(gamma.sf(1.0, 1.0)), 12), gamma.sf(-1.0, 2.0))
    0.367879441171 1.0
    """
    a, z = _shape("gamma.sf", "a", a), _standardize(x, loc, scale)
    return _on_support(z, raw(z) < 0, 1.0, lambda z: gammaincc(a, z), 1.0)


def _beta_cdf(x, a, b, loc=0.0, scale=1.0):
    """``scipy.stats.beta.cdf``; the shapes are constants; 0 and 1 outside the support.

    >>> print(round(float(beta.cdf(0.5, 2.0, 1.0)), 12), beta.cdf(1.5, 2.0, 2.0))
    0.25 1.0
    """
    a, b = _shape("beta.cdf", "a", a), _shape("beta.cdf", "b", b)
    return _beta_on_support(_standardize(x, loc, scale), lambda z: betainc(a, b, z), 0.0)


def _beta_sf(x, a, b, loc=0.0, scale=1.0):
    """``scipy.stats.beta.sf``: ``I_(1-x)(b, a)``, accurate near 1; shapes constant.

    >>> print(round(float(beta.sf(0.5, 2.0, 1.0)), 12), beta.sf(1.5, 2.0, 2.0))
    0.75 0.0
    """
    a, b = _shape("beta.sf", "a", a), _shape("beta.sf", "b", b)
    return _beta_on_support(_standardize(x, loc, scale), lambda z: betainc(b, a, 1.0 - z), 1.0)


def _beta_on_support(z, inside, below):
    """``inside(z)`` on ``[0, 1]``, ``below`` left of it and ``1 - below`` right of it."""
    return _on_support(
        z,
        raw(z) < 0,
        0.5,
        lambda z: _on_support(z, raw(z) > 1, 0.5, inside, 1.0 - below),
        below,
    )


def _chi2_cdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.chi2.cdf``: ``gammainc(df/2, x/2)``; ``df`` is a constant.

    >>> print(round(float(chi2.cdf(2.0, 2.0)), 12))  # 1 - exp(-1)
    0.632120558829
    """
    half = np.asarray(_shape("chi2.cdf", "df", df), dtype=float) / 2.0
    return _gamma_cdf(x, half, loc, 2.0 * scale)


def _chi2_sf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.chi2.sf``: ``gammaincc(df/2, x/2)``; ``df`` is a constant.

    >>> print(round(float(chi2.sf(2.0, 2.0)), 12))  # exp(-1)
    0.367879441171
    """
    half = np.asarray(_shape("chi2.sf", "df", df), dtype=float) / 2.0
    return _gamma_sf(x, half, loc, 2.0 * scale)


def _from_log(log_density):
    """The density ``exp(log_density(...))``, named and documented as scipy's."""

    def density(*args, **kwargs):
        return exp(log_density(*args, **kwargs))

    name = log_density.__name__.replace("_log", "_")
    density.__name__ = density.__qualname__ = name
    density.__doc__ = f"``scipy.stats.{name[1:].replace('_', '.', 1)}``: exp of the log form."
    return density


gamma = SimpleNamespace(
    logpdf=_gamma_logpdf,
    pdf=_from_log(_gamma_logpdf),
    **_distribution_functions(_gamma_cdf, _gamma_sf, "gamma"),
)
beta = SimpleNamespace(
    logpdf=_beta_logpdf,
    pdf=_from_log(_beta_logpdf),
    **_distribution_functions(_beta_cdf, _beta_sf, "beta"),
)
chi2 = SimpleNamespace(
    logpdf=_chi2_logpdf,
    pdf=_from_log(_chi2_logpdf),
    **_distribution_functions(_chi2_cdf, _chi2_sf, "chi2"),
)


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


def _poisson_cdf(k, mu, loc=0.0):
    """``scipy.stats.poisson.cdf``: ``gammaincc(floor(k - loc) + 1, mu)``, differentiable
    in ``mu`` (its derivative is ``-pmf(floor(k - loc), mu)``); 0 below ``loc``.

    >>> print(round(float(poisson.cdf(0.0, 1.0)), 12), poisson.cdf(-1.0, 1.0))
    0.367879441171 0.0
    """
    k = np.floor(np.asarray(raw(k), dtype=float) - raw(loc))
    return _on_support(mu, k < 0, 1.0, lambda mu: gammaincc(np.maximum(k, 0.0) + 1.0, mu), 0.0)


def _poisson_sf(k, mu, loc=0.0):
    """``scipy.stats.poisson.sf``: ``gammainc(floor(k - loc) + 1, mu)``; 1 below ``loc``.

    >>> print(round(float(poisson.sf(0.0, 1.0)), 12), poisson.sf(-1.0, 1.0))
    0.632120558829 1.0
    """
    k = np.floor(np.asarray(raw(k), dtype=float) - raw(loc))
    return _on_support(mu, k < 0, 1.0, lambda mu: gammainc(np.maximum(k, 0.0) + 1.0, mu), 1.0)


poisson = SimpleNamespace(
    logpmf=_poisson_logpmf,
    pmf=_from_log(_poisson_logpmf),
    **_distribution_functions(_poisson_cdf, _poisson_sf, "poisson"),
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


dirichlet = SimpleNamespace(logpdf=_dirichlet_logpdf, pdf=_from_log(_dirichlet_logpdf))


# --- multivariate_normal ---------------------------------------------------------------


def _mvn_logpdf(x, mean=None, cov=1.0, allow_singular: bool = False):
    """``scipy.stats.multivariate_normal.logpdf`` for points along the last axis of ``x``.

    Differentiable in ``x``, ``mean`` and ``cov`` (through its Cholesky
    factor L: the quadratic form is ``|L⁻¹(x - mean)|²`` and the log
    determinant ``2·Σ log diag(L)``). ``cov`` is a matrix or a number (times
    the identity); as numpy's Cholesky factorisation, only its lower triangle
    is read. With ``allow_singular=True`` a singular constant ``cov`` is taken
    as scipy takes it (its pseudo-inverse and pseudo-determinant; -inf off its
    support), differentiable in ``x`` and ``mean``.

    >>> print(round(float(multivariate_normal.logpdf([0.0, 0.0], cov=np.eye(2))), 10))
    -1.8378770664
    """
    x = x if isinstance(x, Box) else np.asarray(x, dtype=float)
    n = shape_of(x)[-1] if ndim_of(x) else 1
    cov = cov if ndim_of(cov) == 2 else multiply(cov, np.eye(n))
    centred = x if mean is None else x - mean
    points = reshape(centred, (-1, n))  # one point a row
    spectrum = None if isinstance(cov, Box) else _singular_spectrum(np.asarray(cov))
    if spectrum is None:
        factor = cholesky(cov)
        whitened = transpose(solve_triangular(factor, transpose(points), lower=True))
        log_det, rank, outside = 2.0 * sum(log(diagonal(factor, 0, -2, -1)), axis=-1), n, None
    elif allow_singular:
        whitened, log_det, rank, outside = _pseudo_whitened(points, *spectrum)
    else:
        raise np.linalg.LinAlgError(
            "multivariate_normal.logpdf: cov is singular; pass allow_singular=True to use "
            "its pseudo-inverse and pseudo-determinant, as scipy does"
        )
    quadratic = reshape(sum(whitened * whitened, axis=-1), shape_of(centred)[:-1])
    out = -0.5 * (quadratic + log_det + rank * math.log(2.0 * math.pi))
    if outside is None:
        return out
    return where(reshape(outside, shape_of(out)), -np.inf, out)


def _singular_spectrum(cov):
    """``(eigenvalues, eigenvectors, eps)`` of a singular constant ``cov`` by scipy's rule
    (eigenvalues at most ``eps`` are zero), or ``None`` where it is not singular."""
    values, vectors = np.linalg.eigh(cov)
    eps = {"f": 1e3, "d": 1e6}[values.dtype.char.lower()] * np.finfo(values.dtype).eps
    eps *= np.max(np.abs(values))
    if np.min(values) < -eps:
        raise ValueError(
            "multivariate_normal: cov must be symmetric positive semidefinite; it has the "
            f"eigenvalue {np.min(values)!r}"
        )
    return (values, vectors, eps) if np.any(values <= eps) else None


def _pseudo_whitened(points, values, vectors, eps):
    """The points whitened by the pseudo-inverse, the log pseudo-determinant, the rank and
    which points lie off the support (scipy's tolerance: 1e3 eps off the range of cov)."""
    kept = values > eps
    whitened = points @ (vectors[:, kept] / np.sqrt(values[kept]))
    residual = np.linalg.norm(np.asarray(raw(points)) @ vectors[:, ~kept], axis=-1)
    return whitened, float(np.sum(np.log(values[kept]))), int(kept.sum()), residual >= 1e3 * eps


def _mvn_entropy(mean=None, cov=1.0):
    """``scipy.stats.multivariate_normal.entropy``: ``(n (1 + log 2π) + log det cov) / 2``,
    differentiable in ``cov``.

    >>> print(round(float(multivariate_normal.entropy(cov=np.eye(2))), 10))
    2.8378770664
    """
    n = shape_of(cov)[-1] if ndim_of(cov) == 2 else (shape_of(mean)[-1] if ndim_of(mean) else 1)
    cov = cov if ndim_of(cov) == 2 else multiply(cov, np.eye(n))
    log_det = 2.0 * sum(log(diagonal(cholesky(cov), 0, -2, -1)), axis=-1)
    return 0.5 * (n * (1.0 + math.log(2.0 * math.pi)) + log_det)


multivariate_normal = SimpleNamespace(
    logpdf=_mvn_logpdf, pdf=_from_log(_mvn_logpdf), entropy=_mvn_entropy
)
