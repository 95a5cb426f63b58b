"""Sparsity detection: patterns found by index sets, checked against dense derivatives."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops import OPS, defop
from adcompare.sparsity import DenseFallbackWarning, hessian_pattern, jacobian_pattern

from .opcases import case_id, draw, op_cases

CASES = list(op_cases())


def packed(op, shapes, params):
    """``op`` as a function of one flat vector holding all its arguments."""
    sizes = [math.prod(s) for s in shapes]
    starts = np.cumsum([0, *sizes])

    def f(x):
        parts = [ad.reshape(x[a:b], s) for a, b, s in zip(starts, starts[1:], shapes)]
        return op.fn(*parts, **params)

    return f


def has_rule(op) -> bool:
    """Whether the op's pattern is its own (elementwise or a rule), not the dense fallback."""
    return op.elementwise or op.sparsity is not None


def flat_args(op, shapes, params, seed):
    args, params = draw(op, shapes, params, seed=seed)
    return np.concatenate([np.ravel(a) for a in args]), params


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_local_pattern_is_the_jacobians_nonzeros_and_global_covers_it(case):
    op, shapes, params = case
    x, params = flat_args(op, shapes, params, seed=11)
    f = packed(op, shapes, params)
    dense = np.asarray(ad.jacfwd(f)(x)).reshape(-1, x.size)
    # Entries at rounding level are zeros the algorithm did not cancel exactly (a Cholesky
    # factor's entry that does not read an input still gets 1e-20 of it through its JVP).
    nonzero = np.abs(dense) > 1e-12 * max(1.0, float(np.abs(dense).max(initial=0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DenseFallbackWarning)
        found = jacobian_pattern(f, x)
        local = jacobian_pattern(f, x, local=True)
    assert found.shape == local.shape == dense.shape
    assert not (local.toarray() & ~found.toarray()).any(), "local must lie inside global"
    if not has_rule(op):  # taken as dense: it must still hold every non-zero
        assert not (nonzero & ~local.toarray()).any(), op.name
        return
    # At a random point no derivative vanishes by accident: the local pattern is exact.
    np.testing.assert_array_equal(local.toarray(), nonzero, err_msg=op.name)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_hessian_pattern_is_the_hessians_nonzeros(case):
    op, shapes, params = case
    x, params = flat_args(op, shapes, params, seed=12)
    f = packed(op, shapes, params)
    weights = np.random.default_rng(3).uniform(0.5, 1.5, np.shape(f(x)))
    complex_output = np.iscomplexobj(f(x))

    def weighted(x):
        total = ad.sum(f(x) * weights)
        return ad.real(total) if complex_output else total  # grad needs a real output

    dense = np.asarray(ad.hessian(weighted)(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DenseFallbackWarning)
        found = hessian_pattern(weighted, x).toarray()
    if not has_rule(op):
        assert not ((np.abs(dense) > 1e-9) & ~found).any(), op.name
        return
    np.testing.assert_array_equal(found, np.abs(dense) > 1e-9, err_msg=op.name)


def test_products_interact_and_sums_do_not():
    x = np.array([1.0, 2.0, 3.0])
    assert hessian_pattern(lambda v: v[0] + v[1], x).nnz == 0
    assert sorted(zip(*hessian_pattern(lambda v: v[0] * v[1], x).nonzero())) == [(0, 1), (1, 0)]
    # Linear after nonlinear: sin(x0) + x1 touches only (0, 0).
    only = hessian_pattern(lambda v: ad.sin(v[0]) + v[1] * 2.0, x)
    assert sorted(zip(*only.nonzero())) == [(0, 0)]


def test_interactions_that_do_not_reach_the_output_are_dropped():
    """A product computed but then indexed away leaves no pair behind."""
    x = np.array([1.0, 2.0, 3.0])
    products = lambda v: ad.concatenate([v[:1] * v[1:2], v[2:] * 1.0])
    found = hessian_pattern(lambda v: products(v)[1], x)
    assert found.nnz == 0


def test_composites_need_no_rules():
    x = np.linspace(0.1, 1.0, 5)
    diff = jacobian_pattern(lambda v: np.diff(v), x).toarray()
    np.testing.assert_array_equal(diff, np.eye(4, 5, dtype=bool) | np.eye(4, 5, 1, dtype=bool))
    softmax = jacobian_pattern(ad.softmax, x).toarray()
    assert softmax.all()
    rosenbrock = hessian_pattern(
        lambda v: ad.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2), x
    ).toarray()
    band = np.abs(np.subtract.outer(np.arange(5), np.arange(5))) <= 1
    np.testing.assert_array_equal(rosenbrock, band)


def test_matmul_links_rows_to_columns():
    # Structural, as SparseConnectivityTracer.jl: zeros inside a matrix are not looked at.
    a = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 3.0]])
    assert jacobian_pattern(lambda v: a @ v, np.ones(3)).toarray().all()
    batched = jacobian_pattern(lambda v: ad.reshape(v, (2, 1, 2)) @ np.ones((2, 3)), np.ones(4))
    np.testing.assert_array_equal(
        batched.toarray(), np.repeat(np.eye(2, dtype=bool), 2, 1).repeat(3, 0)
    )
    # x @ y for x, y in one vector: out[i] = sum_j x[i, j] y[j] pairs x[i, j] with y[j] only.
    f = lambda v: ad.sum(ad.reshape(v[:6], (2, 3)) @ v[6:])
    pairs = set(zip(*hessian_pattern(f, np.ones(9)).nonzero()))
    expected = {(i * 3 + j, 6 + j) for i in range(2) for j in range(3)}
    assert pairs == expected | {(b, a) for a, b in expected}


def test_local_pattern_keeps_the_branch_taken():
    x = np.array([1.0, -1.0])
    f = lambda v: ad.where(v > 0, v * 2.0, v[::-1])
    assert jacobian_pattern(f, x).toarray().all()
    np.testing.assert_array_equal(jacobian_pattern(f, x, local=True).toarray(), [[1, 0], [1, 0]])


def test_an_op_without_a_rule_is_dense_with_a_warning():
    rolled = defop(
        "rolled_example",
        lambda x: np.roll(x, 1),
        numpy=(),
        jvp=lambda out, x, x_dot: x_dot,
        vjp=lambda out, x, out_bar: out_bar,
    )
    try:
        with pytest.warns(DenseFallbackWarning, match="rolled_example"):
            found = jacobian_pattern(lambda v: rolled(v * v), np.ones(3))
        assert found.toarray().all()
        with pytest.warns(DenseFallbackWarning, match="rolled_example"):
            pairs = hessian_pattern(lambda v: ad.sum(rolled(v)), np.ones(3))
        assert pairs.toarray().all()
    finally:
        del OPS["rolled_example"]


def test_hessian_pattern_refuses_a_vector_output():
    with pytest.raises(ValueError, match="scalar"):
        hessian_pattern(lambda v: v * v, np.ones(3))


def test_an_elementwise_op_with_a_zero_derivative_links_nothing():
    """Derived from the record's JVP rule: it does not read the tangent."""
    stepped = defop(
        "stepped_example",
        np.floor,
        numpy=(),
        elementwise=True,
        jvp=lambda out, x, x_dot: 0.0,
        vjp=lambda out, x, out_bar: 0.0,
    )
    try:
        x = np.array([1.5, 2.5, 3.5])
        found = jacobian_pattern(lambda v: stepped(v) * v[0], x).toarray()
        np.testing.assert_array_equal(found, [[1, 0, 0]] * 3)
        np.testing.assert_array_equal(
            found, np.asarray(ad.jacfwd(lambda v: stepped(v) * v[0])(x)) != 0
        )
    finally:
        del OPS["stepped_example"]


def test_an_elementwise_op_whose_rule_cannot_be_traced_is_taken_as_fully_nonlinear():
    opaque = defop(
        "opaque_example",
        np.sinh,
        numpy=(),
        elementwise=True,
        jvp=lambda out, x, x_dot: np.cosh(np.asarray(x)) * x_dot,
        vjp=lambda out, x, out_bar: out_bar * np.cosh(np.asarray(x)),
    )
    try:
        with pytest.warns(DenseFallbackWarning, match="opaque_example"):
            pairs = hessian_pattern(lambda v: ad.sum(opaque(v)), np.ones(3))
        np.testing.assert_array_equal(pairs.toarray(), np.eye(3, dtype=bool))
    finally:
        del OPS["opaque_example"]
