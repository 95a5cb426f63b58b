"""Values on valid input are numpy's and scipy's: at NaN and inf, for complex input, on
ill-conditioned matrices; symbolic references are finite wherever numpy's values and
derivatives are; Hessians at special points are symmetric and exact in all four
compositions; and arguments numpy refuses are refused. One test per mechanism, then
the examples of issue 35 that each mechanism would have caught."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats

import adcompare as ad
from adcompare.cli import main
from adcompare.ops import OPS
from adcompare.ops.registry import ComplexNotSupportedError

from .opcases import domain_of, draw, has_interval_domain, shape_combinations
from .test_composite import CASES, RECORDED, _numpy_function, _parts, _recorded_call, _recorded_id

EPS = np.finfo(float).eps
MODES = ("fwd-over-rev", "rev-over-rev", "fwd-over-fwd", "rev-over-fwd")
#: What refusing an input looks like: a clear error, never a number.
REFUSALS = (ValueError, TypeError, ComplexNotSupportedError, np.linalg.LinAlgError)


def _numpy_or_none(call, fn, *args):
    """numpy's result, or None where numpy itself refuses (then a refusal is fine too)."""
    try:
        with np.errstate(all="ignore"):
            return _parts(call(fn, *args))
    except (ValueError, TypeError, np.linalg.LinAlgError):
        return None


#: numpy documents the order of the elements around ``kth`` as undefined: compared sorted.
CANONICAL = {"partition": lambda out: np.sort(out, axis=-1)}


def _assert_same_or_refused(call, ours, theirs, args, canonical=lambda out: out):
    expected = _numpy_or_none(call, theirs, *args)
    try:
        with np.errstate(all="ignore"):
            got = _parts(call(ours, *args))
    except REFUSALS:
        return  # refused: not a wrong number
    assert expected is not None, "numpy refuses this input, adcompare gave a number"
    for g, e in zip(got, expected):
        assert np.iscomplexobj(g) == np.iscomplexobj(e), "real where numpy is complex, or back"
        g, e = canonical(np.asarray(g)), canonical(np.asarray(e))
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13, equal_nan=True)


# --- every composite at NaN and inf, and on complex input --------------------------------


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("case", RECORDED, ids=_recorded_id)
def test_every_composite_gives_numpys_value_with_nan_or_inf_in_its_input(case, special):
    name, _, shapes, params = case
    call, args = _recorded_call(name, shapes, params, seed=0)
    args[0] = args[0].copy()
    args[0].flat[1 % args[0].size] = special
    composite = ad.ops.COMPOSITES[name]
    reference = _numpy_function(composite.numpy[0])
    _assert_same_or_refused(call, composite.fn, reference, args, CANONICAL.get(name, np.asarray))


#: Elementwise primitives with a numpy counterpart: their values are numpy's functions,
#: and must stay so where an argument is NaN or infinite.
NUMPY_ELEMENTWISE = [
    op
    for op in OPS.values()
    if op.built_in and op.elementwise and op.numpy and op.nargs and op.test_params is None
]


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("op", NUMPY_ELEMENTWISE, ids=lambda op: op.name)
def test_every_elementwise_primitive_gives_numpys_value_with_nan_or_inf(op, special):
    args, _ = draw(op, shape_combinations(op)[0], None, seed=0)
    args = [np.atleast_1d(np.asarray(a, dtype=float)).copy() for a in args]
    args[0].flat[0] = special
    _assert_same_or_refused(lambda f, *xs: f(*xs), op.fn, _reference(op.numpy[0]), args)


@pytest.mark.parametrize(
    "op", [op for op in NUMPY_ELEMENTWISE if "complex128" in op.dtypes], ids=lambda op: op.name
)
def test_every_elementwise_primitive_declared_complex_gives_numpys_complex_value(op):
    args, _ = draw(op, shape_combinations(op)[0], None, seed=0)
    args = _complex([np.asarray(a, dtype=float) for a in args], seed=2)
    with np.errstate(all="ignore"):
        want = _reference(op.numpy[0])(*args)
        np.testing.assert_allclose(op.fn(*args), want, rtol=1e-12, atol=1e-13)


def _reference(name: str):
    """numpy's or scipy's function of a dotted name (``"scipy.special.erf"``)."""
    if name.startswith("scipy.special."):
        return getattr(scipy.special, name.removeprefix("scipy.special."))
    return _numpy_function(name)


def _complex(args, seed):
    rng = np.random.default_rng(seed)
    return [a + 0.5j * rng.uniform(-1, 1, np.shape(a)) for a in args]


@pytest.mark.parametrize("case", RECORDED, ids=_recorded_id)
def test_every_composite_gives_numpys_value_on_complex_input_or_refuses(case):
    name, _, shapes, params = case
    call, args = _recorded_call(name, shapes, params, seed=0)
    composite = ad.ops.COMPOSITES[name]
    _assert_same_or_refused(
        call, composite.fn, _numpy_function(composite.numpy[0]), _complex(args, 1)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_listed_composite_gives_its_references_value_on_complex_input_or_refuses(name):
    ours, theirs, shapes, domain = CASES[name]
    rng = np.random.default_rng(3)
    args = []
    for i, shape in enumerate(shapes):
        draw = domain[i] if isinstance(domain, list) else domain
        args.append(draw(shape, rng) if callable(draw) else rng.uniform(*draw, shape))
    _assert_same_or_refused(lambda f, *xs: f(*xs), ours, theirs, _complex(args, 4))


@pytest.mark.parametrize("trans", [0, "T", "C", 2])
def test_solve_triangular_transposes_as_scipy_does_for_complex_matrices(trans):
    rng = np.random.default_rng(5)
    a = np.triu(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    want = scipy.linalg.solve_triangular(a, b, trans=trans)
    np.testing.assert_allclose(ad.solve_triangular(a, b, trans=trans), want, rtol=1e-13)


# --- linear algebra on ill-conditioned matrices ------------------------------------------


def ill_conditioned(shape, condition: float, seed: int) -> np.ndarray:
    """A matrix with singular values spread evenly in log scale from 1 to 1/condition."""
    rng = np.random.default_rng(seed)
    m, n = shape
    u = np.linalg.qr(rng.standard_normal((m, min(m, n))))[0]
    v = np.linalg.qr(rng.standard_normal((n, min(m, n))))[0]
    return (u * np.logspace(0, -np.log10(condition), min(m, n))) @ v.T


ILL = [(shape, c) for shape in [(5, 5), (6, 4), (4, 6)] for c in (1e4, 1e8)]


@pytest.mark.parametrize("shape,condition", ILL)
def test_pinv_lstsq_and_qr_match_numpy_within_the_condition_numbers_bound(shape, condition):
    """numpy's own error is about condition * eps; a route through aᵀa squares it."""
    a = ill_conditioned(shape, condition, seed=6)
    bound = 100 * condition * EPS
    want = np.linalg.pinv(a)
    assert np.abs(ad.pinv(a) - want).max() <= bound * np.abs(want).max()
    b = np.random.default_rng(7).standard_normal(shape[0])
    want_x = np.linalg.lstsq(a, b, rcond=None)[0]
    assert np.abs(ad.lstsq(a, b).x - want_x).max() <= bound * np.abs(want_x).max()
    q, r = ad.qr(a)
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=100 * EPS)
    np.testing.assert_allclose(q @ r, a, atol=100 * EPS)
    u, s, vh = ad.svd(a, full_matrices=False)
    np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=100 * EPS)
    np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=100 * EPS)
    np.testing.assert_allclose((u * s) @ vh, a, atol=100 * EPS)


@pytest.mark.parametrize("condition", [1e4, 1e8])
def test_the_derivatives_of_pinv_and_qr_keep_their_identities_on_ill_conditioned_matrices(
    condition,
):
    """Hand-derived checks: pinv's derivative is Golub and Pereyra's formula evaluated with
    numpy's pinv; QR's keeps Qᵀ Q = I and Q R = a to first order, with Ṙ upper triangular."""
    a = ill_conditioned((6, 4), condition, seed=8)
    d = np.random.default_rng(9).standard_normal(a.shape)
    p = np.linalg.pinv(a)
    want = -p @ d @ p + p @ p.T @ d.T @ (np.eye(6) - a @ p) + (np.eye(4) - p @ a) @ d.T @ p.T @ p
    found = ad.jvp(ad.pinv, (a,), (d,))[1]
    assert np.abs(found - want).max() <= 100 * condition * EPS * np.abs(want).max()
    weights = np.random.default_rng(10).standard_normal(p.shape)
    reverse = ad.vjp(ad.pinv, a)[1](weights)[0]
    np.testing.assert_allclose(np.sum(reverse * d), np.sum(weights * found), rtol=1e-9)
    (q, r), (q_dot, r_dot) = ad.jvp(ad.qr, (a,), (d,))
    scale = 100 * condition * EPS * np.abs(d).max()
    assert np.abs(q_dot.T @ q + q.T @ q_dot).max() <= scale
    assert np.abs(q_dot @ r + q @ r_dot - d).max() <= scale
    np.testing.assert_array_equal(np.tril(r_dot, -1), 0.0)


def test_eigh_and_svd_vectors_are_numpys_signs_included():
    """A function of the vectors has numpy's value (issue 35: 63.5 where numpy gives 41.3)."""
    rng = np.random.default_rng(11)
    h = rng.standard_normal((5, 5))
    h = h + h.T
    weights = np.arange(25.0).reshape(5, 5)
    assert ad.sum(ad.eigh(h)[1] * weights) == np.sum(np.linalg.eigh(h)[1] * weights)
    for shape in [(5, 3), (3, 5)]:
        x = rng.standard_normal(shape)
        for ours, theirs in zip(ad.svd(x, full_matrices=False), np.linalg.svd(x, False)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


def test_svd_vectors_of_a_rank_deficient_matrix_are_numpys_not_nan():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 2)) @ rng.standard_normal((2, 4))
    for ours, theirs in zip(ad.svd(x), np.linalg.svd(x)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


# --- the symbolic reference is finite where numpy's value and derivative are ------------

UNARY = [
    op
    for op in OPS.values()
    if op.built_in
    and op.elementwise
    and op.nargs == 1
    and op.sym is not None
    and op.test_params is None
    and has_interval_domain(op)
]
GRID = (-1000.0, -40.0, -3.0, -0.7, -0.25, 0.0, 0.25, 0.7, 3.0, 40.0)


def _finite_derivative(op, x) -> float | None:
    """numpy's value and the engines' derivative at ``x``, or None where either is not a
    finite real number (outside the domain)."""
    with np.errstate(all="ignore"):
        value = np.asarray(op.value(np.float64(x)))
        if np.iscomplexobj(value) or not np.isfinite(value):
            return None
        slope = float(ad.grad(op.fn)(x))
    return slope if np.isfinite(slope) else None


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_every_ops_symbolic_derivative_is_finite_where_numpys_value_and_slope_are(op):
    low, high = domain_of(op, 0)
    points = sorted({*GRID, *op.special, (low + high) / 2})
    for x in points:
        slope = _finite_derivative(op, x)
        if slope is None:
            continue
        with np.errstate(all="ignore"):
            exact = float(ad.grad(op.fn, mode="symbolic")(x))
        np.testing.assert_allclose(exact, slope, rtol=1e-6, atol=1e-12, err_msg=f"at {x}")


# --- Hessians at special points: symmetric and exact in all four compositions ----------

REDUCING = [
    (op, shapes[0], params)
    for op in OPS.values()
    if op.built_in and not op.elementwise and op.nargs == 1 and has_interval_domain(op)
    for shapes, params in op.cases[:1]
    if domain_of(op, 0)[0] < 0 < domain_of(op, 0)[1] and 3 <= np.prod(shapes[0]) <= 12
]


@pytest.mark.parametrize("zeros", [1, 2])
@pytest.mark.parametrize("case", REDUCING, ids=lambda case: case[0].name)
def test_every_ops_hessian_with_zeros_in_its_input_is_symmetric_and_exact(case, zeros):
    """Zeros are special points of products and powers; the reference is central
    differences of the reverse-mode gradient."""
    op, shape, params = case
    rng = np.random.default_rng(13)
    x = rng.uniform(*domain_of(op, 0), shape)
    x.flat[:zeros] = 0.0
    weights = rng.standard_normal(np.shape(op.fn(x, **params)))

    def loss(v):
        return ad.real(ad.sum(op.fn(v, **params) * weights))  # the FFTs' outputs are complex

    gradient = ad.grad(loss)
    h = 1e-6
    numeric = np.stack(
        [
            (gradient(x + h * e.reshape(shape)) - gradient(x - h * e.reshape(shape))) / (2 * h)
            for e in np.eye(x.size)
        ]
    ).reshape(x.size, x.size)
    for mode in MODES:
        found = np.asarray(ad.hessian(loss, mode=mode)(x)).reshape(x.size, x.size)
        np.testing.assert_allclose(found, found.T, atol=1e-12, err_msg=mode)
        np.testing.assert_allclose(found, numeric, rtol=1e-6, atol=1e-6, err_msg=mode)


# --- the examples of issue 35 ------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.median([1.0, np.nan, 3.0]),
        lambda f: f.quantile([1.0, np.nan, 3.0], 0.3),
        lambda f: f.percentile([[1.0, np.nan], [2.0, 3.0]], 40.0, axis=1),
    ],
)
def test_order_statistics_of_values_with_nan_are_nan_as_numpys(call):
    np.testing.assert_array_equal(call(ad), call(np))


def test_var_and_std_of_complex_values_are_numpys_real_numbers():
    z = np.array([1 + 2j, 3 - 1j, -2 + 0.5j])
    for name in ("var", "std"):
        got = getattr(ad, name)(z)
        assert not np.iscomplexobj(got)
        np.testing.assert_allclose(got, getattr(np, name)(z), rtol=1e-15)


def test_complex_pinv_and_lstsq_conjugate_transpose():
    rng = np.random.default_rng(14)
    a = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    b = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    np.testing.assert_allclose(ad.pinv(a), np.linalg.pinv(a), rtol=1e-13)
    x, residuals, _, _ = ad.lstsq(a, b)
    want = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x, want[0], rtol=1e-13)
    np.testing.assert_allclose(residuals, want[1], rtol=1e-12)


def test_prod_hessian_at_a_zero_is_exact_in_all_four_compositions():
    x = np.array([0.0, 2.0, 3.0])
    # prod = x0 x1 x2: the Hessian has x_k at (i, j) for {i, j, k} = {0, 1, 2}.
    want = np.array([[0.0, 3.0, 2.0], [3.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    for mode in MODES:
        np.testing.assert_array_equal(ad.hessian(ad.prod, mode=mode)(x), want)


def test_i1_slope_at_zero_is_one_half_so_i0s_curvature_is_too():
    for mode in ("forward", "reverse"):
        assert ad.grad(ad.i1, mode=mode)(0.0) == 0.5
        assert ad.grad(ad.grad(ad.i0, mode=mode), mode=mode)(0.0) == 0.5


@pytest.mark.parametrize(
    "ours,theirs,x",
    [
        (lambda x: ad.stats.gamma.logpdf(x, 2.0), lambda x: scipy.stats.gamma.logpdf(x, 2.0), -1.0),
        (
            lambda x: ad.stats.beta.logpdf(x, 2.0, 3.0),
            lambda x: scipy.stats.beta.logpdf(x, 2.0, 3.0),
            1.5,
        ),
        (lambda x: ad.stats.chi2.logpdf(x, 3.0), lambda x: scipy.stats.chi2.logpdf(x, 3.0), -0.5),
        (
            lambda x: ad.stats.poisson.logpmf(x, 3.0),
            lambda x: scipy.stats.poisson.logpmf(x, 3.0),
            2.5,
        ),
        (
            lambda x: ad.stats.poisson.logpmf(x, 3.0),
            lambda x: scipy.stats.poisson.logpmf(x, 3.0),
            -1.0,
        ),
    ],
)
def test_log_densities_outside_the_support_are_minus_infinity_with_zero_slope(ours, theirs, x):
    assert ours(x) == theirs(x) == -np.inf
    if not isinstance(x, float) or x != 2.5:
        assert ad.grad(ours)(x) == 0.0


def test_dirichlet_off_the_simplex_is_refused_as_scipy_does():
    with pytest.raises(ValueError, match="simplex"):
        scipy.stats.dirichlet.logpdf([0.5, 0.6], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"dirichlet\.logpdf: x must lie on the simplex"):
        ad.stats.dirichlet.logpdf([0.5, 0.6], [1.0, 2.0])


@pytest.mark.parametrize("df", [3.0, 99.0, 101.0, 5e3, 1e6, 1e12, 1e20])
def test_t_logpdf_keeps_its_accuracy_at_large_degrees_of_freedom(df):
    """Against the density evaluated with mpmath at 40 digits."""
    mpmath.mp.dps = 40
    d, x = mpmath.mpf(df), mpmath.mpf(0.3)
    exact = (
        mpmath.loggamma((d + 1) / 2)
        - mpmath.loggamma(d / 2)
        - mpmath.log(d * mpmath.pi) / 2
        - (d + 1) / 2 * mpmath.log1p(x * x / d)
    )
    np.testing.assert_allclose(ad.stats.t.logpdf(0.3, df), float(exact), rtol=1e-14)


def test_arguments_numpy_refuses_are_refused():
    x = np.ones((2, 3))
    for call in (lambda f: f.flip(x, axis=2), lambda f: f.diff(x, n=-1)):
        with pytest.raises(ValueError):
            call(np)
        with pytest.raises(ValueError, match=r"axis 2 is out of range|non-negative integer"):
            call(ad)


def test_a_custom_vjp_cotangent_of_the_wrong_shape_is_refused():
    @ad.custom_vjp
    def total(x):
        return ad.sum(x)

    total.defvjp(lambda x: (ad.sum(x), None), lambda _, g: (np.ones(5),))
    with pytest.raises(ValueError, match=r"shape \(5,\), but the argument has shape \(3,\)"):
        ad.grad(total)(np.ones(3))


def test_a_parameter_listed_twice_is_refused_rather_than_stepped_twice():
    p, q = (ad.Tensor(np.ones(2), requires_grad=True) for _ in range(2))
    for optimizer in (ad.optim.SGD, ad.optim.Adam):
        with pytest.raises(ValueError, match="parameter 2 is parameter 0 again"):
            optimizer([p, q, p], lr=0.1)


@pytest.mark.parametrize(
    "fn,x",
    [(ad.cbrt, -0.7), (ad.sinc, 0.0), (ad.log_ndtr, -1000.0), (ad.log_ndtr, -40.0)],
)
def test_check_grad_passes_correct_engines_where_the_reference_was_nan(fn, x):
    assert ad.check_grad(fn, x, against="symbolic").passed


@pytest.mark.parametrize("expression,at", [("cbrt(x)", "x=-0.7"), ("sinc(x)", "x=0")])
def test_verify_passes_correct_engines_where_the_reference_was_nan(expression, at, capsys):
    assert main(["verify", expression, "--at", at]) == 0
    assert "MISMATCH" not in capsys.readouterr().out


def test_the_symbolic_log_ndtr_slope_is_exact_far_in_the_tail():
    """log_ndtr' = pdf / cdf, evaluated with mpmath at 30 digits."""
    mpmath.mp.dps = 30
    x = mpmath.mpf(-1000)
    exact = mpmath.npdf(x) / mpmath.ncdf(x)
    np.testing.assert_allclose(
        ad.grad(ad.log_ndtr, mode="symbolic")(-1000.0), float(exact), rtol=1e-13
    )
