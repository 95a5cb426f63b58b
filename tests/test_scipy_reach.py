"""What autograd's scipy users write, reached: scipy.stats' distribution functions
(through adcompare.stats, with scipy's signatures), scipy.special's functions called by
scipy's own names on boxes, and scipy.linalg's equations. Values against scipy, gradients
in both modes against central differences of scipy's own values, refusals by sentence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.special as sc
import scipy.stats as st

import adcompare as ad

X = np.array([0.3, 0.7, 1.6])
DF = np.array([1.5, 4.0, 30.0])  # an array of degrees of freedom, one per point
K = np.array([-1.0, 0.0, 2.0, 5.5])  # counts, below the support and between integers


def _distribution(name, differentiated, args):
    """(ours, scipy's, the differentiated arguments) of ``stats.<name>`` with ``args``,
    the arguments at the positions ``differentiated`` passed as variables."""

    def call(module, *variables):
        parts = list(args)
        for position, value in zip(differentiated, variables):
            parts[position] = value
        distribution, method = name.split(".")
        return getattr(getattr(module, distribution), method)(*parts)

    return (
        lambda *v: call(ad.stats, *v),
        lambda *v: call(st, *v),
        [args[i] for i in differentiated],
    )


# name: (positions differentiated, arguments); the other arguments are constants.
STATS = {
    "norm.sf": ((0, 1, 2), (X, 0.4, 1.3)),
    "norm.logsf": ((0, 1, 2), (X + 2.0, 0.4, 1.3)),
    "t.cdf": ((0, 2, 3), (X, DF, 0.2, 1.4)),
    "t.logcdf": ((0, 2, 3), (X - 1.0, DF, 0.2, 1.4)),
    "t.sf": ((0, 2, 3), (X, DF, 0.2, 1.4)),
    "t.logsf": ((0, 2, 3), (X, DF, 0.2, 1.4)),
    "gamma.cdf": ((0, 2, 3), (X + 0.5, np.array([0.7, 2.5, 4.0]), 0.1, 1.2)),
    "gamma.logcdf": ((0, 2, 3), (X + 0.5, 2.5, 0.1, 1.2)),
    "gamma.sf": ((0, 2, 3), (X + 0.5, 2.5, 0.1, 1.2)),
    "gamma.logsf": ((0, 2, 3), (X + 0.5, 2.5, 0.1, 1.2)),
    "beta.cdf": ((0, 3, 4), (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
    "beta.logcdf": ((0, 3, 4), (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
    "beta.sf": ((0, 3, 4), (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
    "beta.logsf": ((0, 3, 4), (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
    "chi2.cdf": ((0, 2, 3), (X + 0.5, 3.5, 0.1, 1.2)),
    "chi2.logcdf": ((0, 2, 3), (X + 0.5, 3.5, 0.1, 1.2)),
    "chi2.sf": ((0, 2, 3), (X + 0.5, 3.5, 0.1, 1.2)),
    "chi2.logsf": ((0, 2, 3), (X + 0.5, 3.5, 0.1, 1.2)),
    "poisson.cdf": ((1,), (K, 2.5)),
    "poisson.logcdf": ((1,), (K[1:], 2.5)),
    "poisson.sf": ((1,), (K, 2.5)),
    "poisson.logsf": ((1,), (K, 2.5)),
    "poisson.pmf": ((1,), (K, 2.5)),
    "chi2.pdf": ((0, 1, 2, 3), (X + 0.5, 3.5, 0.1, 1.2)),
    "beta.pdf": ((0, 1, 2, 3, 4), (X / 2.0, 2.5, 1.5, 0.0, 1.1)),
}


def _assert_gradients_match_differences(ours, theirs, variables, label):
    """Each variable's gradient of a weighted sum, by both modes, against central
    differences of scipy's values along a random direction."""
    weights = np.random.default_rng(0).standard_normal(np.shape(theirs(*variables)))
    for i, variable in enumerate(variables):
        direction = np.random.default_rng(10 + i).standard_normal(np.shape(variable))
        h = 1e-6
        plus, minus = list(variables), list(variables)
        plus[i], minus[i] = variable + h * direction, variable - h * direction
        numeric = np.sum((theirs(*plus) - theirs(*minus)) * weights) / (2 * h)
        for mode in ("reverse", "forward"):
            loss = lambda *v: ad.sum(ours(*v) * weights)
            grad = ad.grad(loss, argnums=i, mode=mode)(*variables)
            assert np.sum(grad * direction) == pytest.approx(numeric, rel=1e-6, abs=1e-8), (
                label,
                i,
                mode,
            )


@pytest.mark.parametrize("name", sorted(STATS))
def test_distribution_functions_match_scipy_in_value_and_gradient(name):
    ours, theirs, variables = _distribution(name, *STATS[name])
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ours(*variables), theirs(*variables), rtol=1e-12, atol=1e-14)
    _assert_gradients_match_differences(ours, theirs, variables, name)


def test_outside_the_support_the_functions_are_scipys_constants_with_zero_gradient():
    for name, point, args in [
        ("gamma.cdf", -1.0, (2.0,)),
        ("gamma.sf", -1.0, (2.0,)),
        ("beta.cdf", 1.5, (2.0, 3.0)),
        ("beta.sf", -0.5, (2.0, 3.0)),
        ("chi2.cdf", -2.0, (3.0,)),
    ]:
        distribution, method = name.split(".")
        ours = getattr(getattr(ad.stats, distribution), method)
        theirs = getattr(getattr(st, distribution), method)
        assert ours(point, *args) == theirs(point, *args), name
        assert ad.grad(lambda x: ours(x, *args))(point) == 0.0, name


def test_shape_parameters_of_distribution_functions_are_refused_when_traced():
    cases = [
        ("gamma.cdf: a must be a constant", lambda a: ad.stats.gamma.cdf(1.0, a)),
        ("beta.sf: b must be a constant", lambda b: ad.stats.beta.sf(0.5, 2.0, b)),
        ("chi2.cdf: df must be a constant", lambda df: ad.stats.chi2.logcdf(1.0, df)),
        ("t.sf: df must be a constant", lambda df: ad.stats.t.sf(0.5, df)),
    ]
    for expected, f in cases:
        for mode in ("reverse", "forward"):
            with pytest.raises(TypeError, match=expected):
                ad.grad(f, mode=mode)(2.0)


# --- multivariate_normal ------------------------------------------------------------------


def test_multivariate_normal_entropy_matches_scipy_and_differences_in_the_covariance():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3))
    cov_of = lambda a: a @ a.T + np.eye(3)
    theirs = lambda a: st.multivariate_normal.entropy(cov=cov_of(a))
    ours = lambda a: ad.stats.multivariate_normal.entropy(cov=cov_of(a))
    np.testing.assert_allclose(ours(a), theirs(a), rtol=1e-13)
    np.testing.assert_allclose(
        ad.stats.multivariate_normal.entropy(np.zeros(3), 2.0),
        st.multivariate_normal.entropy(np.zeros(3), 2.0),
        rtol=1e-13,
    )
    _assert_gradients_match_differences(ours, theirs, [a], "entropy")


SINGULAR = np.diag([1.0, 2.0, 0.0, 0.0])  # autograd's test: rank 2 of 4


def test_multivariate_normal_with_a_singular_covariance_is_scipys_given_allow_singular():
    points = np.array([[0.3, 0.5, 0.0, 0.0], [0.3, 0.5, 0.1, 0.0]])  # the second off support
    mean = np.array([0.1, -0.2, 0.0, 0.0])
    for method in ("logpdf", "pdf"):
        ours = getattr(ad.stats.multivariate_normal, method)(points, mean, SINGULAR, True)
        theirs = getattr(st.multivariate_normal, method)(points, mean, SINGULAR, True)
        np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    assert ad.stats.multivariate_normal.logpdf(points[1], mean, SINGULAR, True) == -np.inf
    # In the support, along it: the gradient in x and in the mean, by both modes.
    along = lambda v: np.concatenate([v, np.zeros(2)])
    ours = lambda x, m: ad.stats.multivariate_normal.logpdf(
        ad.concatenate([x, np.zeros(2)]), ad.concatenate([m, np.zeros(2)]), SINGULAR, True
    )
    theirs = lambda x, m: st.multivariate_normal.logpdf(along(x), along(m), SINGULAR, True)
    _assert_gradients_match_differences(ours, theirs, [points[0, :2], mean[:2]], "singular")


def test_a_singular_covariance_without_allow_singular_is_refused_as_scipy_refuses_it():
    with pytest.raises(np.linalg.LinAlgError, match="pass allow_singular=True"):
        ad.stats.multivariate_normal.logpdf(np.zeros(4), None, SINGULAR)
    with pytest.raises(ValueError, match="positive semidefinite"):
        ad.stats.multivariate_normal.logpdf(np.zeros(2), None, np.diag([1.0, -1.0]), True)


# --- scipy's own names on boxes --------------------------------------------------------


def _tensor_and_dual(x):
    return [ad.Tensor(x, requires_grad=True), ad.Dual(x, np.ones_like(x))]


@pytest.mark.parametrize(
    "call,adcompare_name",
    [
        (lambda x: st.norm.cdf(x), "adcompare.stats.norm.cdf"),
        (lambda x: st.t.logsf(x, 3.0), "adcompare.stats.t.logsf"),
        (lambda x: st.multivariate_normal.logpdf(x, cov=np.eye(3)), "multivariate_normal.logpdf"),
        (lambda x: st.norm(0.0, 2.0).sf(x), "adcompare.stats.norm.sf"),
        (lambda x: st.norm.ppf(x), "adcompare.stats.norm has cdf, logcdf, logpdf, logsf"),
        (lambda x: st.laplace.cdf(x), "adcompare.stats has beta, chi2"),
        (lambda x: sc.logsumexp(x, b=np.ones(3)), "adcompare.logsumexp"),
        (lambda x: scipy.linalg.solve_banded((0, 0), x[None], x), "adcompare.solve_banded"),
        (lambda x: scipy.linalg.solve_sylvester(np.diag(x), np.eye(1), x[:, None]), "sylvester"),
        (lambda x: scipy.linalg.solve_triangular(np.diag(x), x), "adcompare.solve_triangular"),
        (lambda x: scipy.linalg.sqrtm(np.diag(x)), "adcompare.sqrtm"),
    ],
)
def test_scipy_functions_that_convert_to_numpy_name_adcompares_own(call, adcompare_name):
    for box in _tensor_and_dual(np.array([0.3, 0.5, 0.7])):
        with pytest.raises((TypeError, RuntimeError)) as raised:
            call(box)
        assert adcompare_name in str(raised.value)


# (scipy's ufunc called on a box, its order/shape arguments first, the point, its slope)
SPECIAL = [
    (lambda x: sc.gammainc(2.5, x), X),
    (lambda x: sc.gammainc(np.array([0.5, 1.5, 3.0]), x), X),
    (lambda x: sc.gammaincc(1.5, x), X),
    (lambda x: sc.betainc(2.5, 0.7, x), X / 2.0),
    (lambda x: sc.betainc(np.array([0.6, 1.0, 3.0]), 2.0, x), X / 2.0),
    (lambda x: sc.jn(2, x), X),
    (lambda x: sc.jv(1.5, x), X),
    (lambda x: sc.yn(1, x), X),
    (lambda x: sc.stdtr(DF, x), X - 1.0),
    (lambda x: sc.rgamma(x), np.array([-2.5, -0.4, 0.3, 1.7])),
    (lambda x: sc.gammasgn(x), np.array([-2.5, -1.5, 0.3])),
]


@pytest.mark.parametrize("case", range(len(SPECIAL)))
def test_scipy_special_ufuncs_on_boxes_give_scipys_values_and_derivatives(case):
    f, x = SPECIAL[case]
    for box in _tensor_and_dual(x):
        out = f(box)
        assert isinstance(out, type(box))
        value = out.detach().numpy() if isinstance(out, ad.Tensor) else out.primal
        np.testing.assert_array_equal(value, f(x))
    _assert_gradients_match_differences(f, f, [x], case)


def test_rgammas_slope_at_the_poles_of_gamma_is_finite_and_exact():
    # 1/gamma(x) = (-1)^n n! (x + n) + O((x + n)^2) near x = -n.
    for n in range(5):
        for mode in ("reverse", "forward"):
            slope = ad.grad(ad.rgamma, mode=mode)(float(-n))
            assert slope == pytest.approx((-1) ** n * math.factorial(n), rel=1e-14)
    # The second derivative at 0: 1/gamma(x) = x + euler_gamma x^2 + ...
    assert ad.grad(ad.grad(ad.rgamma))(0.0) == pytest.approx(2 * np.euler_gamma, rel=1e-12)


def test_shape_parameters_of_the_special_functions_are_refused_when_traced():
    cases = [
        ("gammainc: a must be a constant", lambda a: sc.gammainc(a, 0.5)),
        ("gammaincc: a must be a constant", lambda a: ad.gammaincc(a, 0.5)),
        ("betainc: a must be a constant", lambda a: sc.betainc(a, 2.0, 0.5)),
        ("betainc: b must be a constant", lambda b: ad.betainc(2.0, b, 0.5)),
        ("stdtr: df must be a constant", lambda df: sc.stdtr(df, 0.5)),
        ("the Bessel order v must be one constant", lambda v: sc.jv(v, 0.5)),
        ("yn: the order n=", lambda n: ad.yn(n, 0.5)),
    ]
    for expected, f in cases:
        for mode in ("reverse", "forward"):
            with pytest.raises(TypeError, match=expected):
                ad.grad(f, mode=mode)(2.0)
    with pytest.raises(TypeError, match="must be one constant integer"):
        ad.yn(1.5, 0.5)


@pytest.mark.parametrize("axis", [None, 1])
def test_logsumexp_with_b_and_return_sign_matches_scipy(axis):
    rng = np.random.default_rng(8)
    x, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    value, sign = ad.logsumexp(x, axis=axis, b=b, return_sign=True)
    want_value, want_sign = sc.logsumexp(x, axis=axis, b=b, return_sign=True)
    np.testing.assert_allclose(value, want_value, rtol=1e-13)
    np.testing.assert_array_equal(sign, want_sign)
    ours = lambda x, b: ad.logsumexp(x, axis=axis, b=b, return_sign=True)[0]
    theirs = lambda x, b: sc.logsumexp(x, axis=axis, b=b, return_sign=True)[0]
    _assert_gradients_match_differences(ours, theirs, [x, b], "logsumexp")


# --- JAX, where it is installed -----------------------------------------------------------


def test_incomplete_gamma_and_beta_derivatives_match_jax():
    # JAX in its default float32 (x64 is a process-wide switch other tests would see).
    jax = pytest.importorskip("jax", reason="JAX is not installed: scipy is the reference")
    jsc = jax.scipy.special
    point = np.array([0.2, 0.9, 2.5])
    pairs = [
        (lambda x: ad.gammainc(1.7, x), lambda x: jsc.gammainc(1.7, x)),
        (lambda x: ad.betainc(1.7, 2.2, x / 3.0), lambda x: jsc.betainc(1.7, 2.2, x / 3.0)),
    ]
    for ours, theirs in pairs:
        want = jax.grad(lambda x: theirs(x).sum())(point.astype(np.float32))
        got = ad.grad(lambda x: ad.sum(ours(x)))(point)
        np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5)
