"""Composite ops: built from primitives, checked against numpy formulas and
finite differences in both modes, and stable where the naive formula is not."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import adcompare as ad
from adcompare.ops import COMPOSITES
from adcompare.ops.matrices import diagonally_dominant, full_rank, symmetric_positive_definite


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _logsumexp(x, axis=None):
    return np.log(np.sum(np.exp(x), axis=axis))


def _assigned(x, index, value):
    out = x.copy()
    out[index] = value
    return out


def _main_band_dominant(shape, rng):
    """The bands ``ab`` of a tridiagonal matrix far from singular (its diagonal is ab[1])."""
    return rng.uniform(-1.0, 1.0, shape) + 4.0 * (np.arange(shape[0]) == 1)[:, None]


# Linear algebra composites are here rather than in record cases: their references are
# scipy's, and symbolic mode on their Gram matrices is slow.
# name -> (call, reference formula on numpy arrays, argument shapes, domain): the domain
# is one (low, high) interval or input maker for every argument, or a list of them.
CASES = {
    "square": (ad.square, np.square, [(3, 4)], (-2, 2)),
    "multigammaln": (
        lambda a: ad.multigammaln(a, 3),
        lambda a: scipy.special.multigammaln(a, 3),
        [(2, 3)],
        (1.5, 4),
    ),
    "reciprocal": (ad.reciprocal, np.reciprocal, [(3, 4)], (0.5, 2)),
    "mean": (lambda x: ad.mean(x, axis=1), lambda x: x.mean(axis=1), [(3, 4)], (-2, 2)),
    "sigmoid": (ad.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [(3, 4)], (-4, 4)),
    "relu": (ad.relu, lambda x: np.maximum(x, 0), [(3, 4)], (-2, 2)),
    "softplus": (ad.softplus, lambda x: np.log1p(np.exp(x)), [(3, 4)], (-4, 4)),
    "logsumexp": (
        lambda x: ad.logsumexp(x, axis=0),
        lambda x: _logsumexp(x, axis=0),
        [(3, 4)],
        (-3, 3),
    ),
    "softmax": (lambda x: ad.softmax(x, axis=1), lambda x: _softmax(x, 1), [(3, 4)], (-3, 3)),
    "log_softmax": (
        lambda x: ad.log_softmax(x, axis=0),
        lambda x: np.log(_softmax(x, 0)),
        [(3, 4)],
        (-3, 3),
    ),
    "norm": (lambda x: ad.norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1), [(3, 4)], (-2, 2)),
    "stack": (
        lambda x, y: ad.stack([x, y], axis=1),
        lambda x, y: np.stack([x, y], axis=1),
        [(3, 4), (3, 4)],
        (-2, 2),
    ),
    "slogdet": (
        lambda x: ad.slogdet(x).logabsdet,
        lambda x: np.linalg.slogdet(x).logabsdet,
        [(2, 3, 3)],
        diagonally_dominant,
    ),
    "eigh": (
        lambda x: ad.eigh(x, "U").eigenvalues,
        lambda x: np.linalg.eigh(x, "U").eigenvalues,
        [(3, 3)],
        symmetric_positive_definite,
    ),
    "svd": (
        lambda x: ad.svd(x, full_matrices=False).U,
        lambda x: np.linalg.svd(x, full_matrices=False).U,
        [(4, 3)],
        full_rank,
    ),
    "pinv": (ad.pinv, np.linalg.pinv, [(2, 3)], full_rank),
    "lstsq": (
        lambda a, b: ad.lstsq(a, b).x,
        lambda a, b: np.linalg.lstsq(a, b)[0],
        [(4, 2), (4, 3)],
        [full_rank, (-2, 2)],
    ),
    "matrix_power": (
        lambda x: ad.matrix_power(x, -3),
        lambda x: np.linalg.matrix_power(x, -3),
        [(2, 2, 2)],
        diagonally_dominant,
    ),
    "qr": (
        lambda x: ad.stack(list(ad.qr(x))),
        lambda x: np.stack(list(np.linalg.qr(x))),
        [(3, 3)],
        full_rank,
    ),
    "solve_triangular": (
        lambda a, b: ad.solve_triangular(a, b, lower=True),
        lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True),
        [(3, 3), (3, 2)],
        [diagonally_dominant, (-2, 2)],
    ),
    "expm": (ad.expm, scipy.linalg.expm, [(3, 3)], (-2, 2)),
    "solve_sylvester": (
        ad.solve_sylvester,
        scipy.linalg.solve_sylvester,
        [(3, 3), (2, 2), (3, 2)],
        [diagonally_dominant, diagonally_dominant, (-2, 2)],
    ),
    "solve_banded": (
        lambda ab, b: ad.solve_banded((1, 1), ab, b),
        lambda ab, b: scipy.linalg.solve_banded((1, 1), ab, b),
        [(3, 4), (4, 2)],
        [_main_band_dominant, (-2, 2)],
    ),
    "outer": (ad.outer, np.outer, [(3,), (4,)], (-2, 2)),
    "flatten": (ad.flatten, lambda x: x.flatten(), [(3, 4)], (-2, 2)),
    "assign_at": (
        lambda x, v: ad.assign_at(x, (slice(None), [0, 2]), v),
        lambda x, v: _assigned(x, (slice(None), [0, 2]), v),
        [(3, 4), (3, 1)],
        (-2, 2),
    ),
    "eig": (
        lambda x: ad.real(ad.eig(x).eigenvectors),
        lambda x: np.real(np.linalg.eig(x).eigenvectors),
        [(3, 3)],
        full_rank,
    ),
    "eigvals": (
        lambda x: ad.real(ad.eigvals(x)),
        lambda x: np.real(np.linalg.eigvals(x)),
        [(2, 3, 3)],
        full_rank,
    ),
    "array": (
        lambda x, y: ad.array([[x, y], [y, 2.0 * x]]),
        lambda x, y: np.array([[x, y], [y, 2.0 * x]]),
        [(3,), (3,)],
        (-2, 2),
    ),
    "asarray": (lambda x: ad.asarray([x, x]), lambda x: np.asarray([x, x]), [(2, 3)], (-2, 2)),
    "r_": (
        lambda x, y: ad.r_[x, 0.5, y, 1:3],
        lambda x, y: np.r_[x, 0.5, y, 1:3],
        [(3,), (2,)],
        (-2, 2),
    ),
    "c_": (lambda x, y: ad.c_[x, y, x], lambda x, y: np.c_[x, y, x], [(3, 2), (3,)], (-2, 2)),
    "row_stack": (
        lambda x, y: ad.row_stack([x, y]),
        lambda x, y: np.vstack([x, y]),
        [(2, 3), (3,)],
        (-2, 2),
    ),
    "select": (
        lambda x, y: ad.select([x > 0.5, y > 0], [x, y], 0.25),
        lambda x, y: np.select([x > 0.5, y > 0], [x, y], 0.25),
        [(3, 4), (3, 4)],
        (-2, 2),
    ),
}


def test_every_composite_has_a_case():
    recorded = {name for name, composite in COMPOSITES.items() if composite.cases}
    assert set(COMPOSITES) == set(CASES) | recorded


def _draw(shapes, domain, seed=0):
    rng = np.random.default_rng(seed)
    domains = domain if isinstance(domain, list) else [domain] * len(shapes)
    return [d(s, rng) if callable(d) else rng.uniform(*d, size=s) for s, d in zip(shapes, domains)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_matches_the_numpy_formula(name):
    call, reference, shapes, domain = CASES[name]
    args = _draw(shapes, domain)
    np.testing.assert_allclose(call(*args), reference(*args), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_both_modes_match_central_differences(name):
    call, reference, shapes, domain = CASES[name]
    args = _draw(shapes, domain, seed=1)
    rng = np.random.default_rng(2)
    u = rng.standard_normal(np.shape(reference(*args)))
    for i in range(len(args)):

        def scalar(x, i=i):
            parts = list(args)
            parts[i] = x
            return ad.sum(call(*parts) * u)

        h = 1e-6
        numeric = np.zeros_like(args[i])
        for index in np.ndindex(args[i].shape):
            step = np.zeros_like(args[i])
            step[index] = h
            numeric[index] = (scalar(args[i] + step) - scalar(args[i] - step)) / (2 * h)
        for mode in ("reverse", "forward"):
            np.testing.assert_allclose(
                ad.grad(scalar, mode=mode)(args[i]), numeric, rtol=1e-6, atol=1e-8
            )


def test_stable_where_the_naive_formula_overflows():
    big = np.array([-1000.0, 0.0, 1000.0])
    np.testing.assert_allclose(ad.sigmoid(big), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(ad.softplus(big), [0.0, np.log(2.0), 1000.0])
    assert ad.logsumexp(np.array([1000.0, 1000.0])) == pytest.approx(1000.0 + np.log(2.0))
    np.testing.assert_allclose(ad.softmax(np.array([1000.0, 0.0])), [1.0, 0.0])
    np.testing.assert_allclose(ad.log_softmax(np.array([1000.0, 0.0])), [0.0, -1000.0])
    # gradients stay finite too
    np.testing.assert_allclose(ad.grad(lambda x: ad.sum(ad.sigmoid(x)))(big), [0.0, 0.25, 0.0])
    np.testing.assert_allclose(ad.grad(lambda x: ad.logsumexp(x))(big), [0.0, 0.0, 1.0])


TINY = np.finfo(np.float64).tiny


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_logsumexp_gives_a_subnormal_share_as_zero_and_keeps_a_normal_one_exactly(mode):
    # exp(−720) is subnormal: its share would make later products take the slow path.
    x = np.array([0.0, -720.0, -700.0, -1.0])
    softmax = _softmax(x, 0)
    assert 0.0 < softmax[1] < TINY <= softmax[2]
    gradient = ad.grad(lambda x: ad.logsumexp(x), mode=mode)(x)
    assert gradient[1] == 0.0
    # exp at −700 turns the rounding of x − logsumexp(x) into relative errors near 1e−14.
    np.testing.assert_allclose(gradient[[0, 2, 3]], softmax[[0, 2, 3]], rtol=1e-12, atol=0.0)


def test_a_replayed_logsumexp_decides_which_shares_are_subnormal_at_each_call():
    compiled = ad.compile(lambda x: ad.logsumexp(x), np.array([0.0, -1.0, -2.0]))
    for x in (np.array([0.0, -720.0, -2.0]), np.array([0.0, -1.0, -2.0])):
        expected = np.where(_softmax(x, 0) < TINY, 0.0, _softmax(x, 0))
        np.testing.assert_allclose(compiled.grad(x), expected, rtol=1e-15, atol=0.0)


def test_subgradient_conventions_at_the_kinks():
    assert ad.grad(ad.relu)(0.0) == 0.0  # as PyTorch
    assert ad.grad(ad.softplus)(0.0) == pytest.approx(0.5)  # the true derivative
    assert ad.grad(ad.softplus, mode="forward")(0.0) == pytest.approx(0.5)
    np.testing.assert_array_equal(ad.grad(ad.norm)(np.zeros(3)), np.zeros(3))
    assert ad.grad(lambda x: ad.maximum(x, 1.0))(1.0) == 0.5
    assert ad.grad(lambda x: ad.sum(ad.max(x)))(np.array([2.0, 2.0, 1.0])).tolist() == [
        0.5,
        0.5,
        0.0,
    ]
    assert ad.grad(lambda x: ad.clip(x, 0.0, 1.0))(1.0) == 1.0
    assert ad.grad(ad.abs)(0.0) == 0.0


def test_norm_orders():
    x = np.array([3.0, -4.0])
    assert ad.norm(x, ord=1) == 7.0 and ad.norm(x, ord=np.inf) == 4.0
    np.testing.assert_allclose(ad.grad(lambda v: ad.norm(v, ord=1))(x), [1.0, -1.0])


# --- composites whose records carry test cases: numpy is the reference -----------------

RECORDED = [
    (name, i, shapes, params)
    for name, composite in sorted(COMPOSITES.items())
    for i, (shapes, params) in enumerate(composite.cases)
]


def _recorded_call(name, shapes, params, seed):
    composite = COMPOSITES[name]
    args = _draw(shapes, composite.domain, seed)
    if composite.listed:
        return (lambda f, *xs: f(list(xs), **params)), args
    return (lambda f, *xs: f(*xs, **params)), args


def _numpy_function(name: str):
    """numpy's function of a dotted name (``"fft.fftshift"``)."""
    found = np
    for part in name.split("."):
        found = getattr(found, part)
    return found


def _parts(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _recorded_id(case):
    name, i, _, _ = case
    return f"{name}[{i}]"


@pytest.mark.parametrize("case", RECORDED, ids=_recorded_id)
def test_recorded_composite_values_match_numpy(case):
    name, _, shapes, params = case
    call, args = _recorded_call(name, shapes, params, seed=0)
    expected = _parts(call(_numpy_function(COMPOSITES[name].numpy[0]), *args))
    got = _parts(call(COMPOSITES[name].fn, *args))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-14)


def _weights(part, rng):
    """Weights for a real loss Re(Σ w · part): complex for a complex output (the FFTs), so
    that its imaginary part counts too."""
    weights = rng.standard_normal(np.shape(part))
    return weights + 1j * rng.standard_normal(np.shape(part)) if np.iscomplexobj(part) else weights


@pytest.mark.parametrize("case", RECORDED, ids=_recorded_id)
def test_recorded_composite_derivatives_match_differences_in_every_mode(case):
    name, _, shapes, params = case
    call, args = _recorded_call(name, shapes, params, seed=1)
    rng = np.random.default_rng(2)
    weights = [_weights(p, rng) for p in _parts(call(COMPOSITES[name].fn, *args))]

    def scalar(*xs):
        parts = _parts(call(COMPOSITES[name].fn, *xs))
        return ad.real(sum(ad.sum(p * w) for p, w in zip(parts, weights)))

    for i in range(len(args)):
        h = 1e-6
        numeric = np.zeros_like(args[i])
        for index in np.ndindex(args[i].shape):
            up, down = list(args), list(args)
            up[i] = args[i].copy()
            down[i] = args[i].copy()
            up[i][index] += h
            down[i][index] -= h
            numeric[index] = (scalar(*up) - scalar(*down)) / (2 * h)
        for mode in ("reverse", "forward", "symbolic"):
            got = ad.grad(scalar, argnums=i, mode=mode)(*args)
            np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8, err_msg=mode)


def test_logsumexp_with_scales_and_signs_matches_the_formula_and_differences():
    rng = np.random.default_rng(5)
    x, b = rng.uniform(-2, 2, (3, 4)), np.array([0.5, -2.0, 1.0, 3.0])
    total = np.sum(b * np.exp(x), axis=1)
    value, sign = ad.logsumexp(x, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(value, np.log(np.abs(total)), rtol=1e-14)
    np.testing.assert_array_equal(sign, np.sign(total))
    # d/dx_ij log|s_i| = b_j exp(x_ij) / s_i; d/db_j = sum_i exp(x_ij) / s_i
    f = lambda x, b: ad.sum(ad.logsumexp(x, axis=1, b=b, return_sign=True)[0])
    for mode in ("reverse", "forward"):
        gx, gb = ad.grad(f, argnums=(0, 1), mode=mode)(x, b)
        np.testing.assert_allclose(gx, b * np.exp(x) / total[:, None], rtol=1e-12)
        np.testing.assert_allclose(gb, np.sum(np.exp(x) / total[:, None], axis=0), rtol=1e-12)


def test_expm_of_a_matrix_with_inf_or_nan_is_nan_not_a_crash():
    for bad in (np.inf, np.nan):
        with np.errstate(invalid="ignore"):
            value = ad.expm(np.array([[bad, 0.0], [0.0, 1.0]]))
            gradient = ad.grad(lambda a: ad.sum(ad.expm(a)))(np.array([[1.0, bad], [0.0, 1.0]]))
        assert np.isnan(value).any() and not np.isfinite(gradient).all()


def test_concatenate_with_axis_none_joins_the_flattened_arrays():
    a, b = np.arange(4.0).reshape(2, 2), np.array([7.0, 8.0, 9.0])
    np.testing.assert_array_equal(
        ad.concatenate([a, b], axis=None), np.concatenate([a, b], axis=None)
    )
    weights = np.arange(1.0, 8.0)
    gradient = ad.grad(lambda x: ad.sum(ad.concatenate([x, b], axis=None) * weights))(a)
    np.testing.assert_array_equal(gradient, weights[:4].reshape(2, 2))


@pytest.mark.parametrize("axis", [(0, 2), (2, 0), (-1, 1), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_median_and_quantile_over_a_tuple_of_axes_match_numpy(axis, keepdims):
    x = np.random.default_rng(7).standard_normal((2, 3, 4))
    np.testing.assert_allclose(
        ad.median(x, axis=axis, keepdims=keepdims),
        np.median(x, axis=axis, keepdims=keepdims),
        rtol=1e-15,
    )
    np.testing.assert_allclose(
        ad.quantile(x, [0.2, 0.9], axis=axis, keepdims=keepdims),
        np.quantile(x, [0.2, 0.9], axis=axis, keepdims=keepdims),
        rtol=1e-15,
    )
    # The derivative of a median of an odd count is 1 at the middle element.
    gradient = ad.grad(lambda v: ad.sum(ad.median(v, axis=(0, 2))))(x[:, :, :3][:1])
    assert np.array_equal(gradient.sum(axis=(0, 2)), np.ones(3))
