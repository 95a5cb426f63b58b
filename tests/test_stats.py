"""adcompare.stats against scipy.stats: values, and gradients in every argument against
central differences of scipy's own values; Hessians against SymPy (symbolic mode)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import adcompare as ad
from adcompare.transforms import HESSIAN_MODES

X = np.array([0.3, 0.7, 1.6])

# name: (adcompare function, scipy function, arguments (every float one is differentiated))
CASES = {
    "norm.logpdf": (ad.stats.norm.logpdf, st.norm.logpdf, (X, 0.4, 1.3)),
    "norm.pdf": (ad.stats.norm.pdf, st.norm.pdf, (X, 0.4, 1.3)),
    "norm.cdf": (ad.stats.norm.cdf, st.norm.cdf, (X, 0.4, 1.3)),
    "norm.logcdf": (ad.stats.norm.logcdf, st.norm.logcdf, (X - 3.0, 0.4, 1.3)),
    "t.logpdf": (ad.stats.t.logpdf, st.t.logpdf, (X, 3.5, 0.2, 1.4)),
    "t.pdf": (ad.stats.t.pdf, st.t.pdf, (X, 3.5, 0.2, 1.4)),
    "t.cdf": (
        lambda x, loc, scale: ad.stats.t.cdf(x, 3.5, loc, scale),
        lambda x, loc, scale: st.t.cdf(x, 3.5, loc, scale),
        (X, 0.2, 1.4),
    ),
    "t.logcdf": (
        lambda x, loc, scale: ad.stats.t.logcdf(x, 3.5, loc, scale),
        lambda x, loc, scale: st.t.logcdf(x, 3.5, loc, scale),
        (X - 1.0, 0.2, 1.4),
    ),
    "gamma.logpdf": (ad.stats.gamma.logpdf, st.gamma.logpdf, (X + 0.5, 2.5, 0.1, 1.2)),
    "gamma.pdf": (ad.stats.gamma.pdf, st.gamma.pdf, (X + 0.5, 2.5, 0.1, 1.2)),
    "beta.logpdf": (ad.stats.beta.logpdf, st.beta.logpdf, (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
    "chi2.logpdf": (ad.stats.chi2.logpdf, st.chi2.logpdf, (X + 0.5, 3.5, 0.1, 1.2)),
    "poisson.logpmf": (
        lambda mu: ad.stats.poisson.logpmf(np.array([0.0, 2.0, 5.0]), mu),
        lambda mu: st.poisson.logpmf(np.array([0, 2, 5]), mu),
        (2.5,),
    ),
    "dirichlet.logpdf": (
        ad.stats.dirichlet.logpdf,
        st.dirichlet.logpdf,
        (np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.0, 3.0])),
    ),
    "multivariate_normal.logpdf": (
        lambda x, mean: ad.stats.multivariate_normal.logpdf(x, mean, COV),
        lambda x, mean: st.multivariate_normal.logpdf(x, mean, COV),
        (np.array([[0.3, -0.2], [1.0, 0.5]]), np.array([0.1, 0.4])),
    ),
}
COV = np.array([[1.5, 0.3], [0.3, 0.8]])


def _scalar(f, args, i):
    def g(value):
        parts = list(args)
        parts[i] = value
        return f(*parts)

    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy(name):
    ours, theirs, args = CASES[name]
    np.testing.assert_allclose(ours(*args), theirs(*args), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_in_every_argument_match_differences_of_scipy(name):
    ours, theirs, args = CASES[name]
    for i, arg in enumerate(args):
        weights = np.random.default_rng(i).standard_normal(np.shape(theirs(*args)))
        loss = lambda *a: ad.sum(ours(*a) * weights)
        grad = ad.grad(loss, argnums=i)(*args)
        direction = np.random.default_rng(10 + i).standard_normal(np.shape(arg))
        if name == "dirichlet.logpdf" and i == 0:
            direction -= direction.mean()  # scipy refuses points off the simplex
        h = 1e-6
        plus, minus = list(args), list(args)
        plus[i] = arg + h * direction
        minus[i] = arg - h * direction
        numeric = np.sum((theirs(*plus) - theirs(*minus)) * weights) / (2 * h)
        assert np.sum(grad * direction) == pytest.approx(numeric, rel=1e-6, abs=1e-8), i


@pytest.mark.parametrize(
    "name", ["norm.logpdf", "t.logpdf", "gamma.logpdf", "beta.logpdf", "dirichlet.logpdf"]
)
def test_hessians_in_the_parameters_match_sympy_in_all_four_modes(name):
    ours, _, args = CASES[name]
    last = len(args) - 1 if name != "beta.logpdf" else 1  # a shape parameter, not loc
    g = lambda p: ad.sum(_scalar(ours, args, last)(p))
    point = np.asarray(args[last], dtype=float)
    exact = ad.hessian(g, mode="symbolic")(point)
    for mode in HESSIAN_MODES:
        np.testing.assert_allclose(ad.hessian(g, mode=mode)(point), exact, rtol=1e-10)


def test_multivariate_normal_is_differentiable_in_its_covariance():
    # cov = A Aᵀ + I stays symmetric positive definite as A moves: compare with central
    # differences of scipy's own logpdf, in both modes.
    rng = np.random.default_rng(7)
    a, x, mean = rng.standard_normal((3, 3)), rng.standard_normal((4, 3)), rng.standard_normal(3)
    cov_of = lambda a: a @ a.T + np.eye(3)
    theirs = lambda a: st.multivariate_normal.logpdf(x, mean, cov_of(a)).sum()
    h, numeric = 1e-6, np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = h
        numeric[index] = (theirs(a + step) - theirs(a - step)) / (2 * h)
    ours = lambda a: ad.sum(ad.stats.multivariate_normal.logpdf(x, mean, cov_of(a)))
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(ad.grad(ours, mode=mode)(a), numeric, rtol=1e-6, atol=1e-8)


def test_t_cdf_refuses_traced_degrees_of_freedom():
    with pytest.raises(TypeError, match=r"t\.cdf: df must be a constant"):
        ad.grad(lambda df: ad.stats.t.cdf(0.5, df))(3.0)


def test_a_zero_scale_on_python_floats_is_nan_as_in_scipy_not_a_crash():
    with np.errstate(divide="ignore", invalid="ignore"):
        got = ad.stats.norm.logpdf(0.5, 0.0, 0.0)
        want = st.norm.logpdf(0.5, 0.0, 0.0)
    assert np.isnan(got) and np.isnan(want)
    np.testing.assert_allclose(ad.stats.norm.logpdf(0.5, 0.0, 2.0), st.norm.logpdf(0.5, 0.0, 2.0))
