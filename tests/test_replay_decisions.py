"""Decisions taken from values are recomputed or guarded by ``compile``, for every op.

An op record lists in ``decided_by_values`` what its arguments' values decide
(``sort``'s permutation, ``take``'s positions, ``slogdet``'s sign). Every op of
the registry (primitives and composites) is recorded at one point and
replayed at another where each declared decision differs (an index argument
takes other positions; every other op at a second random point, where its
masks and branches differ too), in both replay modes; value, gradient and
Jacobian must equal eager execution's there, dtypes included.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops import COMPOSITES, OPS
from adcompare.ops.registry import INDEX, Decision, composite, defop, raw
from adcompare.ops.registry.decisions import ORDER
from tests.opcases import EVERY_OP, second_point


def _loss(call, static, index_names, count, weights):
    def loss(*xs):
        arrays, indices = xs[:count], xs[count:]
        out = call(*arrays, **static, **dict(zip(index_names, indices)))
        parts = list(out) if isinstance(out, (tuple, list)) else [out]
        total = 0.0
        for part, w in zip(parts, weights):
            total = total + ad.sum(ad.real(part) * w)
        return total

    return loss


def _weights(call, args, params, rng):
    out = call(*args, **params)
    parts = list(out) if isinstance(out, (tuple, list)) else [out]
    return [rng.standard_normal(np.shape(p)) for p in parts if not isinstance(p, (int, str))]


def _assert_same(got, expected, what):
    got_leaves = got if isinstance(got, tuple) else (got,)
    expected_leaves = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got_leaves, expected_leaves, strict=True):
        assert np.result_type(g) == np.result_type(e), f"{what}: dtype {np.result_type(g)}"
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", sorted(EVERY_OP))
def test_a_replay_at_a_point_where_decisions_differ_equals_eager(name):
    call, arguments, decisions = EVERY_OP[name]
    first, second, index_names, indices, moved, static = second_point(arguments, decisions)
    weights = _weights(
        call, first, {**static, **dict(zip(index_names, indices))}, np.random.default_rng(3)
    )
    loss = _loss(call, static, index_names, len(first), weights)
    argnums = tuple(range(len(first)))
    at_first = (*first, *indices)
    at_second = (*second, *(moved[n] for n in index_names))
    reverse = ad.compile(loss, *at_first, argnums=argnums)
    value, gradient = reverse.value_and_grad(*at_second)
    _assert_same(value, loss(*at_second), f"{name}: value")
    _assert_same(gradient, ad.grad(loss, argnums=argnums)(*at_second), f"{name}: gradient")
    forward = ad.compile(loss, *at_first, argnums=argnums, mode="forward")
    value, jacobian = forward.value_and_jacobian(*at_second)
    _assert_same(value, loss(*at_second), f"{name}: forward value")
    _assert_same(jacobian, ad.jacfwd(loss, argnums=argnums)(*at_second), f"{name}: Jacobian")


# --- the examples that found them ---------------------------------------------------------

WEIGHTS = np.array([1.0, 10.0, 100.0])


@pytest.mark.parametrize(
    "f",
    [
        lambda x: ad.sum(ad.sort(x) * WEIGHTS),
        lambda x: ad.sum(ad.partition(x, 1) * WEIGHTS),
        lambda x: ad.median(x) * ad.sum(x),
        lambda x: ad.quantile(x, 0.25) + ad.percentile(x, 90.0),
    ],
    ids=["sort", "partition", "median", "quantile"],
)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_an_order_recorded_at_one_point_is_not_replayed_at_another(f, mode):
    compiled = ad.compile(f, np.array([1.0, 2.0, 3.0]), mode=mode)
    x = np.array([2.0, 3.0, 1.0])  # every element moves: the median too
    value, derivative = (
        compiled.value_and_grad(x) if mode == "reverse" else compiled.value_and_jacobian(x)
    )
    expected = ad.grad(f)(x) if mode == "reverse" else ad.jacfwd(f)(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-14)
    np.testing.assert_allclose(derivative, expected, rtol=1e-14)
    assert compiled.recordings == 1  # recomputed at replay, not recorded again


def test_sort_replayed_at_the_reversed_point_gives_its_value():
    compiled = ad.compile(lambda x: ad.sum(ad.sort(x) * WEIGHTS), np.array([1.0, 2.0, 3.0]))
    value, gradient = compiled.value_and_grad(np.array([3.0, 2.0, 1.0]))
    assert value == 321.0
    np.testing.assert_array_equal(gradient, [100.0, 10.0, 1.0])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_index_arguments_of_take_and_take_along_axis_are_read_at_replay(mode):
    def f(x, i, j):
        return ad.sum(ad.take(x, i) * WEIGHTS[:2]) + ad.sum(ad.take_along_axis(x, j, 0))

    x = np.array([1.0, 2.0, 3.0])
    compiled = ad.compile(f, x, np.array([0, 1]), np.array([2]), mode=mode)
    args = (x, np.array([2, 0]), np.array([1]))
    assert compiled(*args) == 3.0 + 10.0 + 2.0
    derivative = compiled.grad(*args) if mode == "reverse" else compiled.jacobian(*args)
    np.testing.assert_array_equal(derivative, [10.0, 1.0, 1.0])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_sign_of_slogdet_follows_the_replayed_matrix(mode):
    def f(x):
        sign, logabsdet = ad.slogdet(x)
        return sign * logabsdet

    compiled = ad.compile(f, np.diag([2.0, 1.0]), mode=mode)
    x = np.array([[0.0, -2.0], [-1.0, 0.0]])  # determinant -2
    assert compiled(x) == -np.log(2.0)
    derivative = compiled.grad(x) if mode == "reverse" else compiled.jacobian(x)
    np.testing.assert_allclose(derivative, -np.linalg.inv(x).T, rtol=1e-14)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_float16_input_gets_a_float16_derivative_from_the_replay(mode):
    f = lambda x: ad.sum(ad.sin(x) * np.array([1.0, 2.0]))
    x = np.array([0.5, 1.5], dtype=np.float16)
    compiled = ad.compile(f, x, mode=mode)
    got = compiled.grad(x) if mode == "reverse" else compiled.jacobian(x)
    expected = ad.grad(f)(x) if mode == "reverse" else ad.jacfwd(f)(x)
    assert got.dtype == expected.dtype == np.float16
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("example", [1.0, np.ones(3)], ids=["number", "array"])
def test_the_derivative_of_abs_at_nan_replays_as_nan(mode, example):
    f = lambda x: ad.sum(ad.abs(x))
    compiled = ad.compile(f, example, mode=mode)
    x = np.full(np.shape(example), np.nan)
    got = compiled.grad(x) if mode == "reverse" else compiled.jacobian(x)
    expected = ad.grad(f)(x) if mode == "reverse" else ad.jacfwd(f)(x)
    assert np.isnan(expected).all()
    np.testing.assert_array_equal(got, expected)


def test_a_decision_the_recording_cannot_follow_is_guarded():
    """A composite that freezes its decision (taken from a plain copy of the values, which
    no recording sees) is recorded again where the decision it declares differs."""

    @composite(numpy=(), decided_by_values=(ORDER,))
    def frozen_sort(x):
        return ad.take(x, np.argsort(np.array(raw(x))))

    try:
        f = lambda x: ad.sum(frozen_sort(x) * WEIGHTS)
        compiled = ad.compile(f, np.array([1.0, 2.0, 3.0]))
        assert compiled.program.guards == 1
        x = np.array([3.0, 2.0, 1.0])
        assert compiled(x) == 321.0 and compiled.recordings == 2
        np.testing.assert_array_equal(compiled.grad(np.array([5.0, 4.0, 6.0])), [10.0, 1.0, 100.0])
    finally:
        del COMPOSITES["frozen_sort"]


@pytest.mark.parametrize(
    "decision",
    [
        Decision("order", "x", np.argsort),  # no such kind
        Decision(INDEX, "indices", None),  # decide is not callable
        Decision(INDEX, "indices", np.asarray),  # the op has no parameter of that name
    ],
)
def test_a_record_refuses_a_decision_it_cannot_check(decision):
    with pytest.raises(ValueError, match=r"decided_by_values holds .*; give Decision\("):
        defop(
            "decided_badly",
            np.sin,
            jvp=lambda out, x, x_dot: x_dot,
            vjp=lambda out, x, out_bar: out_bar,
            numpy=(),
            decided_by_values=(decision,),
        )
    with pytest.raises(ValueError, match=r"decided_by_values holds"):
        composite(numpy=(), decided_by_values=(decision,))(lambda x: x)
    assert "decided_badly" not in OPS and "<lambda>" not in COMPOSITES
