"""Throughput work pinned on deterministic counts, never on time.

Each fast path is checked twice: against exact derivatives (SymPy or a hand
formula), and against the element work it promises, counted by
``adcompare.count()``. Rules applied to plain arrays use numpy's operators,
which the counter does not see; running a pullback on a ``Tensor``
cotangent that records nothing routes every one of them through the op set,
so the counts below include all the arithmetic a sweep does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare.ops import OPS
from adcompare.ops.shape import _covered_ranges
from adcompare.transforms import HESSIAN_MODES, LANE_BUDGET, default_chunk

from .opcases import domain_of
from .test_transforms import rosenbrock, rosenbrock_gradient


def sweep_cost(f, x, cotangent) -> ad.Cost:
    """The counted work of one reverse sweep of ``f`` at ``x`` (recording excluded)."""
    _, pullback = ad.vjp(f, ad.Tensor(x))
    with ad.count() as cost:
        pullback(ad.Tensor(cotangent))
    return cost


def numpy_ops(cost: ad.Cost) -> dict[str, int]:
    return {name: n for (engine, name), n in cost.by_op.items() if engine == "numpy"}


# --- tangent lanes ------------------------------------------------------------------------

ELEMENTWISE_POSITIONS = [
    (op, i) for op in OPS.values() if op.elementwise for i in op.differentiable
]


@pytest.mark.parametrize(
    ("op", "position"), ELEMENTWISE_POSITIONS, ids=lambda p: getattr(p, "name", str(p))
)
def test_every_elementwise_jvp_touches_the_tangent_lanes_at_most_once(op, position):
    """Primal-shaped factors are multiplied together first, then once by the
    lanes: with k lanes of n elements, lane work is at most k·n, plus a few
    primal-sized ops. Tensors that record nothing carry the values, so every
    operation of the rule is counted."""
    n, k = 3, 1000
    rng = np.random.default_rng(5)
    args = [ad.Tensor(rng.uniform(*domain_of(op, i), size=n)) for i in range(op.nargs)]
    params = op.test_params((n,), rng) if op.test_params else {}
    lanes = rng.standard_normal((k, n))
    args[position] = ad.Dual(args[position], ad.Tensor(lanes))
    with ad.count() as cost:
        out = op.fn(*args, **params)
    assert cost.elements["numpy"] // (k * n) <= 1
    single = ad.jvp(
        lambda v: op.fn(*[v if i == position else a for i, a in enumerate(args)], **params),
        (args[position].primal.data,),
        (lanes[7],),
    )[1]
    np.testing.assert_allclose(np.asarray(out.tangent.data)[7], single, rtol=1e-14)


# --- power with a constant exponent ---------------------------------------------------

X = np.array([0.4, 1.3, 2.0])
EXPONENTS = [-2, -1, 0, 1, 2, 3, 2.5]


def exact_power_derivatives(k):
    s = sympy.Symbol("s")
    first, second = sympy.diff(s**k, s), sympy.diff(s**k, s, 2)
    return (
        np.array([float(first.subs(s, v)) for v in X]),
        np.diag([float(second.subs(s, v)) for v in X]),
    )


@pytest.mark.parametrize("k", EXPONENTS)
def test_power_with_a_constant_exponent_matches_sympy_to_second_order(k):
    f = lambda x: ad.sum(x**k)
    first, second = exact_power_derivatives(k)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(ad.grad(f, mode=mode)(X), first, rtol=1e-13, err_msg=mode)
    for mode in HESSIAN_MODES:
        np.testing.assert_allclose(
            ad.hessian(f, mode=mode)(X), second, rtol=1e-12, atol=1e-12, err_msg=mode
        )


def test_an_exponent_that_carries_a_derivative_is_not_treated_as_constant():
    """d/dy of d(x**y)/dx = x**(y-1) (1 + y log x): the exponent's box must flow
    through the rule even when its value is the integer 2."""
    x0 = 1.5
    inner = lambda y: ad.grad(lambda x: x**y)(x0)
    expected = x0 ** (2.0 - 1) * (1 + 2.0 * np.log(x0))
    assert ad.grad(inner)(2.0) == pytest.approx(expected, rel=1e-14)
    assert ad.grad(inner, mode="forward")(2.0) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize(
    ("k", "expected_ops"),
    [
        (1, {}),  # the cotangent passes through
        (2, {"multiply": 2}),  # 2·x, then times the cotangent
        (3, {"power": 1, "multiply": 2}),  # the cotangent times 3, times x²
    ],
)
def test_the_power_rule_for_a_constant_integer_does_the_fewest_array_operations(k, expected_ops):
    n = 50
    x, cotangent = np.linspace(0.5, 2.0, n), np.linspace(-1.0, 1.0, n)
    cost = sweep_cost(lambda x: x**k, x, cotangent)
    assert numpy_ops(cost) == expected_ops
    assert cost.elements["numpy"] == n * sum(expected_ops.values())


def test_the_tape_keeps_only_the_base_of_a_power_not_its_result():
    x = ad.Tensor(np.linspace(0.5, 2.0, 100), requires_grad=True)
    with ad.count() as cost:
        y = x**3
    # The base (800 bytes) and the exponent (one 8-byte integer); the result is not kept.
    assert cost.tape_bytes == x.data.nbytes + np.asarray(3).nbytes
    y.backward(np.ones(100))
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.data**2, rtol=1e-14)


def test_the_exponents_gradient_recomputes_the_power_it_no_longer_keeps():
    """d(x**y)/dy = x**y log x, with x and y both differentiated."""
    x = ad.Tensor(np.array([0.5, 1.5, 2.5]), requires_grad=True)
    y = ad.Tensor(np.array([-1.5, 0.5, 2.0]), requires_grad=True)
    ad.sum(x**y).backward()
    np.testing.assert_allclose(y.grad.numpy(), x.data**y.data * np.log(x.data), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), y.data * x.data ** (y.data - 1), rtol=1e-14)


def test_a_cotangent_from_a_sum_is_scaled_once_per_distinct_value():
    row = 2**17  # from this size on, scaling only the distinct values pays
    cotangent = np.broadcast_to(np.array([[0.5], [1.0], [2.0]]), (3, row))  # a row sum's
    scaled = OPS["multiply"].vjp_at(1)(None, 100.0, np.ones((3, row)), cotangent)
    assert scaled.strides[1] == 0  # three multiplications, broadcast back along the rows
    np.testing.assert_array_equal(scaled, np.repeat([[50.0], [100.0], [200.0]], row, axis=1))
    small = cotangent[:, :1000]  # below it, one full multiplication is cheaper
    assert OPS["multiply"].vjp_at(1)(None, 100.0, np.ones((3, 1000)), small).strides[1] != 0


def test_gradients_built_from_broadcast_cotangents_are_ordinary_writeable_arrays():
    x = np.linspace(-1.0, 1.0, 5)
    for f, expected in [
        (lambda x: ad.sum(x), np.ones(5)),
        (lambda x: ad.sum(100.0 * x), np.full(5, 100.0)),
        (lambda x: ad.mean(x**2), 2 * x / 5),
    ]:
        gradient = ad.grad(f)(x)
        np.testing.assert_allclose(gradient, expected, rtol=1e-15)
        gradient += 1.0  # the caller owns it
        np.testing.assert_allclose(gradient, expected + 1.0, rtol=1e-15)


def test_log_softmax_records_five_ops_and_never_adds_its_shift_back():
    logits = np.array([[1000.0, 999.0, 990.0], [-3.0, 0.5, 2.0]])
    x = ad.Tensor(logits, requires_grad=True)
    with ad.count() as cost:
        out = ad.log_softmax(x, axis=1)
    assert cost.tape_records == 5  # subtract, exp, sum, log, subtract
    shifted = logits - logits.max(axis=1, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out.data, expected, rtol=1e-15)
    weights = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]])
    ad.sum(out * weights).backward()
    softmax = np.exp(expected)
    # d/dx_j Σ_i w_i (x_i − lse(x)) = w_j − softmax_j Σ_i w_i
    hand = weights - softmax * weights.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.numpy(), hand, rtol=1e-13, atol=1e-15)


# --- scatter_add for basic indices --------------------------------------------------------

BASIC_INDICES = [
    ((7,), slice(1, None)),
    ((7,), slice(None, -1)),
    ((7,), slice(None, None, -1)),
    ((7,), slice(5, 1, -1)),
    ((7,), slice(None, None, 3)),
    ((7,), slice(4, 2)),
    ((3, 4), (1, slice(1, 3))),
    ((3, 4), (None, Ellipsis, -1)),
    ((2, 3, 4), (Ellipsis, slice(1, 3), None)),
    ((2, 3, 4), (0, Ellipsis, slice(None, None, 2))),
    ((), ()),
]


@pytest.mark.parametrize(("shape", "index"), BASIC_INDICES, ids=str)
def test_scatter_zeros_exactly_the_positions_a_basic_index_does_not_write(shape, index):
    index = OPS["getitem"].prepare(np.empty(shape), index)["index"]
    written = np.zeros(shape, dtype=bool)
    written[index] = True
    ranges = _covered_ranges(index, shape)
    if ranges is None:
        # Only a step that skips positions may leave the box: check that it does.
        assert any(isinstance(i, slice) and abs(i.step or 1) > 1 for i in index)
        return
    box = np.zeros(shape, dtype=bool)
    box[tuple(slice(lo, hi) for lo, hi in ranges)] = True
    np.testing.assert_array_equal(written, box)
    target_shape = np.empty(shape)[index].shape
    values = np.arange(1.0, 1.0 + np.prod(target_shape)).reshape(target_shape)
    expected = np.zeros(shape)
    expected[index] = values
    np.testing.assert_array_equal(ad.scatter_add(values, index=index, shape=shape), expected)


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((2**16 + 3,), slice(1, None)),
        ((2**16 + 3,), slice(None, -1)),
        ((3, 2**15), (slice(1, 3), slice(5, -5))),
        ((4, 2**15), (Ellipsis, 7)),
        ((2, 2**16), (slice(None), slice(None, None, -1))),
    ],
    ids=str,
)
def test_large_scatters_write_the_box_once_and_zeros_everywhere_else(shape, index):
    index = OPS["getitem"].prepare(np.empty(shape), index)["index"]
    assert _covered_ranges(index, shape) is not None  # the write-once path
    target_shape = np.empty(shape)[index].shape
    values = np.arange(1.0, 1.0 + np.prod(target_shape)).reshape(target_shape)
    expected = np.zeros(shape)
    expected[index] = values
    np.testing.assert_array_equal(ad.scatter_add(values, index=index, shape=shape), expected)


# --- jacfwd's default chunk ----------------------------------------------------------------


@pytest.mark.parametrize("n", [10, 1000])
def test_rosenbrocks_reverse_sweep_does_less_element_work_than_fourteen_tenths_of_f(n):
    """f does 11 counted ops (3 of them views); the sweep does 16, none a power.
    With the general power rule it did 19 and 1.64 times f's elements."""
    x = np.linspace(-1.2, 1.2, n)
    with ad.count() as f_cost:
        rosenbrock(ad.Tensor(x))
    sweep = sweep_cost(rosenbrock, x, 1.0)
    assert "power" not in numpy_ops(sweep)
    assert sweep.elements["numpy"] <= 1.4 * f_cost.elements["numpy"]
    _, pullback = ad.vjp(rosenbrock, x)
    np.testing.assert_allclose(pullback(1.0)[0], rosenbrock_gradient(x), rtol=1e-13)


@pytest.mark.parametrize("n", [7, 362, 363, 1000])
def test_jacfwd_splits_the_lanes_so_each_pass_holds_at_most_the_lane_budget(n):
    x = np.linspace(-1.2, 1.2, n)
    with ad.count() as cost:
        jac = ad.jacfwd(rosenbrock)(x)
    chunk = default_chunk(n)
    assert chunk * n <= LANE_BUDGET or chunk == 1
    assert chunk == n or (chunk + 1) * n > LANE_BUDGET  # no smaller split than needed
    assert cost.passes == math.ceil(n / chunk)
    np.testing.assert_allclose(jac, rosenbrock_gradient(x), rtol=1e-12)


# --- jacobian(mode="auto") -------------------------------------------------------------------


def test_auto_jacobian_probes_once_per_signature_then_costs_what_its_mode_costs():
    weights = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    f = lambda x: ad.tanh(ad.matmul(weights, x))
    x = np.linspace(0.0, 1.0, 4)
    auto = ad.jacobian(f)
    with ad.count() as first:
        auto(x)
    with ad.count() as again:
        jac = auto(x)
    with ad.count() as reverse:
        ad.jacrev(f)(x)
    assert auto.last_choice.mode == "reverse"
    assert again.as_dict() == reverse.as_dict()
    assert first.ops["numpy"] > again.ops["numpy"]  # the first call also probed f
    np.testing.assert_allclose(jac, (1 - np.tanh(weights @ x) ** 2)[:, None] * weights)


def test_auto_jacobian_remembers_its_choice_per_shape_for_plain_arrays_and_trees():
    # Plain arrays are keyed by shape and dtype without flattening a tree: the key
    # must still tell (1,) from (1000,), and a list of numbers from both.
    f = lambda x: ad.sum(x * x) * np.ones(3)  # 3 outputs
    auto = ad.jacobian(f)
    for x, mode in ((np.ones(1), "forward"), (np.ones(1000), "reverse"), (np.ones(1), "forward")):
        jac = auto(x)
        assert auto.last_choice.mode == mode
        np.testing.assert_allclose(jac, np.broadcast_to(2.0 * x, (3, x.size)))
    jac = auto([1.0, 2.0, 3.0, 4.0])
    assert auto.last_choice.mode == "reverse"
    np.testing.assert_allclose(jac, np.broadcast_to([2.0, 4.0, 6.0, 8.0], (3, 4)))
