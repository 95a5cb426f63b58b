"""The eager engine's fast paths compute what the plain ways compute, with less work.

Each fast path is checked against the plain numpy computation it replaces, and
where it saves op applications, against a deterministic count of them.
"""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_logsumexp

import adcompare as ad
from adcompare.ops import OPS, reshape, scatter_add, transpose
from adcompare.ops.reductions import _REARRANGE_FROM, _sum_value
from adcompare.ops.registry import broadcast_view, normalize_axes
from adcompare.ops.shape import _inverse

# --- sum without numpy's short inner loops -----------------------------------------

# Shapes whose sums numpy runs with a short inner loop for some axes (a short last
# axis, kept or reduced), and one whose sums it runs well, all past _REARRANGE_FROM.
SHAPES = [(5, 1000, 2), (5, 1000, 1), (700, 7), (2, 3, 700, 2), (4, 300, 3, 2), (64, 80)]


def _all_axes(ndim: int):
    for r in range(1, ndim + 1):
        yield from itertools.combinations(range(ndim), r)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_over_any_axes_equals_numpys(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    assert x.size >= _REARRANGE_FROM
    for axes in _all_axes(len(shape)):
        axis = normalize_axes(axes, len(shape))
        for keepdims in (False, True):
            expected = np.add.reduce(x, axis=axis, keepdims=keepdims)
            found = _sum_value(x, axis, keepdims)
            assert found.shape == expected.shape and found.dtype == expected.dtype
            # The same additions, perhaps in another order: within a few roundings.
            scale = np.add.reduce(np.abs(x), axis=axis, keepdims=keepdims)
            assert np.all(np.abs(found - expected) <= 8 * np.finfo(float).eps * scale)
            assert not np.shares_memory(found, x)


def test_a_sum_over_a_short_last_axis_of_two_is_numpys_to_the_bit():
    # Two terms have one order: x0 + x1, as numpy adds them.
    x = np.random.default_rng(1).standard_normal((5, 1000, 2))
    np.testing.assert_array_equal(_sum_value(x, (-1,), False), np.add.reduce(x, axis=-1))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_sum_keeps_single_precision_and_complex_values(dtype):
    x = (np.arange(6000.0).reshape(1000, 3, 2) % 7).astype(dtype)
    for axis in [(-1,), (-2,), (-3, -1)]:
        found = _sum_value(x, axis, True)
        assert found.dtype == dtype
        np.testing.assert_allclose(found, np.add.reduce(x, axis=axis, keepdims=True))


def test_half_precision_sums_stay_numpys_which_accumulate_in_single_precision():
    # numpy adds float16 in float32 and rounds once; adding slice by slice would
    # round after every term (0.5 off at these magnitudes).
    x = (np.random.default_rng(5).standard_normal((1000, 7)) * 100).astype(np.float16)
    for axis in [(-1,), (-2,)]:
        np.testing.assert_array_equal(_sum_value(x, axis, False), np.add.reduce(x, axis=axis))


def test_the_gradient_of_a_broadcast_against_a_short_axis_sums_the_right_axis():
    # centred = x - mu broadcasts mu over 1000 points: its gradient sums axis 1 of
    # a (5, 1000, 2) array, the case numpy runs with an inner loop of two.
    points = np.random.default_rng(2).standard_normal((1000, 2))
    mu = np.random.default_rng(3).standard_normal((5, 1, 2))
    gradient = ad.grad(lambda m: ad.sum((points[None] - m) ** 2))(mu)
    expected = -2.0 * (points[None] - mu).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)


# --- broadcast_to from strides -------------------------------------------------------


@pytest.mark.parametrize(
    "source, shape",
    [((3, 1), (2, 3, 4)), ((), (3,)), ((4,), (3, 4)), ((1,), (0,)), ((2, 0), (3, 2, 0))],
    ids=str,
)
def test_broadcast_view_is_numpys_read_only_view(source, shape):
    x = np.arange(float(np.prod(source))).reshape(source)
    view = broadcast_view(x, shape)
    np.testing.assert_array_equal(view, np.broadcast_to(x, shape))
    assert view.shape == shape and not view.flags.writeable
    assert np.shares_memory(view, x) or view.size == 0


def test_a_broadcast_tensor_shares_its_sources_version_counter():
    # The view is built from strides, not by numpy: a write to its source after it
    # was saved must still be caught, not give a gradient of the new values.
    x = ad.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    u = x * 1.0
    spread = ad.broadcast_to(u, (3, 2))
    y = ad.sum(spread * spread)
    u += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_broadcast_of_a_strided_view_or_a_numpy_scalar_goes_through_numpy():
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(
        broadcast_view(strided, (2, 3, 2)), np.broadcast_to(strided, (2, 3, 2))
    )
    scalar = np.float64(2.5)
    np.testing.assert_array_equal(broadcast_view(scalar, (3,)), [2.5, 2.5, 2.5])


# --- rules call ops with parameters already prepared ------------------------------------


def test_prepared_calls_skip_preparation_and_give_the_same_value():
    x = np.arange(6.0)
    np.testing.assert_array_equal(reshape.prepared(x, shape=(2, 3)), reshape(x, (-1, 3)))
    m = np.arange(24.0).reshape(2, 3, 4)
    axes = (2, 0, 1)
    back = transpose.prepared(transpose(m, axes), axes=_inverse(axes))
    np.testing.assert_array_equal(back, m)
    spread = scatter_add.prepared(np.ones(2), index=(slice(1, 3),), shape=(4,))
    np.testing.assert_array_equal(spread, [0.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize("axes", list(itertools.permutations(range(4))), ids=str)
def test_inverse_permutation_undoes_the_permutation(axes):
    inverse = _inverse(axes)
    assert tuple(axes[i] for i in inverse) == tuple(range(4))


# --- slices of one vector accumulate into one array ---------------------------------


def test_slices_of_one_flat_vector_scatter_once_and_add_in_place():
    # GMM's parameters are slices of one vector: the first slice's cotangent is
    # scattered into zeros, the others add into that array where they land.
    p = ad.Tensor(np.linspace(0.1, 3.0, 30), requires_grad=True)
    a, b, c = p[:5], p[5:15], p[15:]
    total = ad.sum(a) + ad.sum(3.0 * b) + ad.sum(ad.exp(c))
    with ad.count() as cost:
        total.backward()
    assert cost.by_op.get(("numpy", "scatter_add"), 0) == 1
    assert cost.by_op.get(("numpy", "add"), 0) == 0
    expected = np.concatenate([np.ones(5), np.full(10, 3.0), np.exp(p.data[15:])])
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-15)


# --- logsumexp as one primitive -----------------------------------------------------------


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), ((0, 1), True)])
def test_logsumexp_of_real_input_is_one_record_with_softmax_as_its_gradient(axis, keepdims):
    x = np.random.default_rng(4).standard_normal((3, 4)) * 30.0  # exp would overflow unshifted
    t = ad.Tensor(x, requires_grad=True)
    with ad.count() as cost:
        value = ad.logsumexp(t, axis=axis, keepdims=keepdims)
    assert cost.tape_records == 1
    np.testing.assert_allclose(value.data, scipy_logsumexp(x, axis=axis, keepdims=keepdims))
    ad.sum(value).backward()
    softmax = np.exp(x - scipy_logsumexp(x, axis=axis, keepdims=True))
    np.testing.assert_allclose(t.grad.numpy(), softmax, rtol=1e-13, atol=1e-300)


def test_logsumexp_with_weights_signs_or_complex_input_stays_a_composite():
    x = np.array([0.5, 1.5, -1.0])
    weights = np.array([1.0, -2.0, 0.5])
    value, sign = ad.logsumexp(x, b=weights, return_sign=True)
    expected, expected_sign = scipy_logsumexp(x, b=weights, return_sign=True)
    np.testing.assert_allclose(value, expected)
    assert sign == expected_sign
    z = np.array([0.5 + 0.1j, 1.0 - 0.2j])
    np.testing.assert_allclose(ad.logsumexp(z), np.log(np.sum(np.exp(z))))
    assert OPS["_logsumexp"].complex != "holomorphic"


def test_logsumexp_second_derivative_is_the_softmax_covariance():
    x = np.array([0.1, 0.5, -0.3])
    p = np.exp(x - scipy_logsumexp(x))
    np.testing.assert_allclose(ad.hessian(ad.logsumexp)(x), np.diag(p) - np.outer(p, p), atol=1e-15)


# --- numpy's functions called on a tensor ----------------------------------------------


def test_a_numpy_ufunc_on_a_tensor_finds_its_op_every_time():
    x = ad.Tensor([0.5, 2.0], requires_grad=True)
    points = np.array([1.0, 1.0])
    for _ in range(3):  # the first call looks the ufunc's op up; later calls find it
        y = ad.sum((points - x) * np.exp(x))
    y.backward()
    # d/dx (1 - x) e^x = -e^x + (1 - x) e^x = -x e^x
    np.testing.assert_allclose(x.grad.numpy(), -x.data * np.exp(x.data), rtol=1e-15)
    assert isinstance(np.less(points, x), np.ndarray)  # comparisons stay plain


# --- x * x: one rule for both positions ------------------------------------------------------


def test_a_square_written_as_a_product_takes_one_product_in_the_sweep():
    x = ad.Tensor(np.linspace(-1.0, 2.0, 7), requires_grad=True)
    y = ad.sum(0.5 * (x * x))
    with ad.count() as cost:
        y.backward()
    # 0.5's rule scales the cotangent (one product), the square's rule is one more;
    # no sum of two contributions.
    assert cost.by_op[("numpy", "multiply")] == 2
    assert cost.by_op.get(("numpy", "add"), 0) == 0
    # (2x) · g is exactly g · x + g · x: doubling is exact.
    np.testing.assert_array_equal(x.grad.numpy(), 0.5 * x.data + 0.5 * x.data)


def test_a_large_square_under_a_sum_doubles_the_sums_cotangent_not_the_values():
    # The sum's cotangent is a broadcast view of one number: doubling it (exact) and
    # multiplying once by x takes one full pass and no x-sized temporary; doubling x
    # first allocated one (the peak was x's size: 1.0 below, where 0.002 is left).
    values = np.linspace(-1.0, 2.0, 2**18).reshape(512, 512)
    x = ad.Tensor(values, requires_grad=True)
    y = ad.sum(x * x)
    tracemalloc.start()
    try:
        y.backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * values.nbytes
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * values)


def test_a_product_of_two_different_values_keeps_both_rules():
    x = ad.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = ad.Tensor(np.array([3.0, 5.0]), requires_grad=True)
    ad.sum(x * y).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0])
    second = ad.hessian(lambda v: ad.sum(v * v * v))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(second, np.diag([6.0, 12.0]))


# --- what the sweep may assume -------------------------------------------------------

UNARY_ELEMENTWISE = sorted(
    name for name, op in OPS.items() if op.elementwise and op.nargs == 1 and op.differentiable
)


@pytest.mark.parametrize("name", UNARY_ELEMENTWISE)
def test_a_one_argument_elementwise_rule_returns_its_inputs_shape(name):
    # The sweep skips the unbroadcast test for these ops (OpDef.unbroadcasts): each
    # rule must give the input's cotangent in the input's shape, here at a shape of
    # two axes and at a single number.
    op = OPS[name]
    assert not op.unbroadcasts
    low, high = op.domain[0] if isinstance(op.domain[0], tuple) else op.domain
    for shape in [(3, 4), ()]:
        x = np.random.default_rng(7).uniform(low, high, shape)
        params = op.test_params(shape, np.random.default_rng(8)) if op.test_params else {}
        params = op.prepare(x, **params) if op.prepare else params
        out = op.value(x, **params)
        cotangent = np.ones(np.shape(out))
        contribution = op.vjp_at(0)(out, x, cotangent, **params)
        assert np.shape(contribution) == shape


def test_gmm_records_thirty_seven_ops_and_its_gradient_takes_forty_eight_more():
    # The objective's forward pass: the split into α, μ, q and l (7), the precision
    # factors (4), Q_k(x_i − μ_k) as one product of the points (x_i, 1) with
    # [Q_kᵀ; −(Q_k μ_k)ᵀ] (6), Σq (1), the log-likelihood's terms (11), the prior from
    # the factors' Frobenius norm (6) and two sums with the constant (2).
    # Its backward carries the negations its subtractions make: each is folded
    # into a sum of shares (a subtraction instead of an addition) or computed on a
    # scalar before a sum spreads it, one numpy call fewer than computing them. Against
    # the centred form (35 and 41) the sweep takes Q_k μ_k's product and transposition,
    # the two slices of the joined matrix's cotangent, the sum of the factors' two
    # cotangents and μ's negated share, one sum fewer (the column of ones sums over the
    # points), and a where in each logsumexp (subnormal shares as 0); the product over
    # the points it saves is in test_adbench_references.py.
    from adcompare import adbench
    from adcompare.adbench.plain import gmm_objective_numpy

    gmm = adbench.bundled("gradbench-gmm-1k")
    x = ad.Tensor(gmm.params, requires_grad=True)
    with ad.count() as forward:
        value = gmm.objective(x)
    assert forward.tape_records == 37
    with ad.count() as backward:
        value.backward()
    assert backward.sweeps == 1 and backward.ops["numpy"] == 48
    assert backward.by_op["numpy", "negative"] == 0
    plain = gmm_objective_numpy(gmm, gmm.params)  # the formula written again in numpy
    np.testing.assert_allclose(value.detach().numpy(), plain, rtol=1e-12)
    # GradBench's recorded gradient is checked in test_adbench_references.py; here the
    # forward engine, whose JVP rules share no code with these VJP rules, is the oracle.
    forward_gradient = ad.grad(gmm.objective, mode="forward")(gmm.params)
    np.testing.assert_allclose(x.grad.numpy(), forward_gradient, rtol=1e-8, atol=1e-10)


def test_a_one_argument_op_whose_parameters_broadcast_sums_its_cotangent_down():
    # clip's bounds are static parameters wider than x: the output, and the rule's
    # cotangent, have the bounds' shape, so the sweep still sums it down to x's.
    lo, hi = np.zeros((3, 2)), np.ones((3, 2))
    x0 = np.array([0.2, 0.5])
    x = ad.Tensor(x0, requires_grad=True)
    ad.sum(ad.clip(x, lo, hi)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(ad.grad(lambda z: ad.sum(ad.clip(z, lo, hi)))(x0), [3.0, 3.0])
    compiled = ad.compile(lambda z: ad.sum(ad.clip(z, lo, hi)), x0)
    np.testing.assert_array_equal(compiled.grad(x0), [3.0, 3.0])
    jacobian = ad.jacrev(lambda z: ad.clip(z, lo, hi))(x0)
    np.testing.assert_array_equal(jacobian, np.broadcast_to(np.eye(2), (3, 2, 2)))


# --- the gradient of a gather of rows, by bincount -----------------------------------


@pytest.mark.parametrize(
    ("index", "shape"),
    [
        ((np.array([3, 0, 3, -1, 2, 3]),), (5, 4)),  # repeats and a negative position
        ((np.array([1, 1, 0]), slice(None)), (2, 3, 2)),
        ((np.array([2, 0, 2, 2]),), (4,)),
        ((np.array([0, 2, 0]), Ellipsis, slice(None)), (3, 2, 2)),  # a tangent's lane axis
        ((np.array([0, 2, 0]), np.array([1, 0, 1])), (3, 2)),  # not rows: numpy's add.at
    ],
)
def test_rows_gathered_scatter_back_as_numpys_add_at_to_the_bit(index, shape):
    rng = np.random.default_rng(3)
    picked = np.zeros(shape)[index].shape
    values = rng.standard_normal(picked) * 10.0 ** rng.uniform(-8, 8, picked)
    expected = np.zeros(shape)
    np.add.at(expected, index, values)
    np.testing.assert_array_equal(scatter_add(values, index=index, shape=shape), expected)
    # the gradient of x[rows] is that scatter: each row's cotangents summed in turn
    gradient = ad.grad(lambda x: ad.sum(x[index] * values))(np.ones(shape))
    np.testing.assert_array_equal(gradient, expected)
