"""The MLP target's eager backward does no numpy work it does not need.

Each rule change is pinned twice: on the counts of ``adcompare.count()``
(op applications by name, element work), never on time, and on exact
derivatives (the hand-written backprop of ``make_mlp`` or a hand formula).
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.problems.mlp import make_mlp

from .test_throughput import numpy_ops, sweep_cost


def test_max_vjp_scales_the_shares_without_broadcasting_the_cotangent():
    """d max(x, axis=1) / dx is the winner indicator (ties share it evenly): the
    row cotangents multiply it by broadcasting, in one x-sized op."""
    x = np.array([[1.0, 5.0, 2.0], [4.0, 4.0, 0.0]])
    row_bar = np.array([3.0, -2.0])
    cost = sweep_cost(lambda v: ad.max(v, axis=1), x, row_bar)
    (x_bar,) = ad.vjp(lambda v: ad.max(v, axis=1), x)[1](row_bar)
    np.testing.assert_allclose(x_bar, [[0.0, 3.0, 0.0], [-1.0, -1.0, 0.0]])
    assert "broadcast_to" not in numpy_ops(cost)
    assert cost.elements["numpy"] <= 2 * x.size  # the shares times the cotangent, once


@pytest.mark.parametrize("axis", [0, (0, 1)])
def test_reductions_over_leading_axes_broadcast_without_a_reshape(axis):
    """A cotangent reduced over leading axes already broadcasts against x
    (numpy pads shapes on the left), so sum's VJP is one broadcast_to."""
    x = np.arange(1.0, 13.0).reshape(3, 4)
    reduced_bar = np.ones(np.sum(x, axis=axis).shape) * 2.5
    cost = sweep_cost(lambda v: ad.sum(v, axis=axis), x, reduced_bar)
    (x_bar,) = ad.vjp(lambda v: ad.sum(v, axis=axis), x)[1](reduced_bar)
    np.testing.assert_allclose(x_bar, np.full(x.shape, 2.5))
    assert numpy_ops(cost) == {"broadcast_to": 1}


def test_prod_vjp_over_leading_axis_multiplies_by_broadcasting():
    """d prod(x, axis=0)_j / dx_ij is the product of the column's other entries."""
    x = np.array([[2.0, -1.0], [3.0, 0.5], [0.5, 4.0]])
    column_bar = np.array([1.5, -2.0])
    (x_bar,) = ad.vjp(lambda v: ad.prod(v, axis=0), x)[1](column_bar)
    others = np.array([[1.5, 2.0], [1.0, -4.0], [6.0, -0.5]])
    np.testing.assert_allclose(x_bar, others * column_bar)
    cost = sweep_cost(lambda v: ad.prod(v, axis=0), x, column_bar)
    assert "broadcast_to" not in numpy_ops(cost)
    assert "reshape" not in numpy_ops(cost)


def test_mlp_backward_matches_backprop_by_hand_with_one_broadcast_per_sum():
    """The target's loss at small sizes: the gradient is the hand-written one,
    and the sweep broadcasts once per ``sum`` in the loss (max needs none)."""
    instance, gradient = make_mlp(batch=5, inputs=7, hidden=6, classes=4)
    weights = ad.Tensor(instance.x, requires_grad=True)
    with ad.count() as recording:
        loss = instance.f(ad, weights)
    with ad.count() as sweep:
        loss.backward()
    np.testing.assert_allclose(weights.grad.numpy(), gradient(instance.x), rtol=1e-12, atol=1e-15)
    recorded = {name: n for (engine, name), n in recording.by_op.items() if engine == "reverse"}
    assert recorded["max"] == 1
    assert numpy_ops(sweep)["broadcast_to"] == recorded["sum"]


# --- the cheaper checks of broadcast_to and reshape keep numpy's rules ---------------------

SOURCE_SHAPES = [(), (1,), (3,), (1, 3), (2, 1), (2, 3), (0, 3)]
TARGET_SHAPES = [(3,), (1,), (2, 3), (4, 2, 3), (2, 1), (3, 2), (0, 3), (-1, 3), ()]


def _numpy_accepts(make) -> bool:
    try:
        make()
    except ValueError:
        return False
    return True


def assert_accepts_what_numpy_accepts(ours, numpys, x, targets, error):
    """``ours(x, t)`` equals ``numpys(x, t)`` where numpy accepts ``t``, and raises
    a ValueError matching ``error`` where numpy refuses it."""
    for target in targets:
        if _numpy_accepts(lambda: numpys(x, target)):
            np.testing.assert_array_equal(ours(x, target), numpys(x, target))
        else:
            with pytest.raises(ValueError, match=error):
                ours(x, target)


@pytest.mark.parametrize("source", SOURCE_SHAPES, ids=str)
def test_broadcast_to_accepts_exactly_the_shapes_numpy_accepts(source):
    x = np.arange(float(np.prod(source, dtype=int))).reshape(source)
    assert_accepts_what_numpy_accepts(
        ad.broadcast_to, np.broadcast_to, x, TARGET_SHAPES, r"broadcast_to: cannot broadcast shape"
    )


@pytest.mark.parametrize("source", [(6,), (2, 3), (0, 4)], ids=str)
def test_reshape_accepts_exactly_the_shapes_numpy_accepts(source):
    x = np.arange(float(np.prod(source))).reshape(source)
    targets = [(6,), (3, 2), (-1,), (-1, 3), (2, -1, 1), (4, -1), (-1, -1), (0, -1), (5,), (0, 2)]
    assert_accepts_what_numpy_accepts(
        ad.reshape, np.reshape, x, targets, r"reshape: .*(cannot reshape|more than one -1)"
    )


@pytest.mark.parametrize(
    ("shape", "target", "ops"),
    [
        ((4, 3), (3,), {"sum": 1}),  # a bias: leading axis summed away, nothing to reshape
        ((2, 4, 3), (3,), {"sum": 1}),
        ((4, 3), (4, 1), {"sum": 1}),  # kept as size 1: keepdims gives the shape directly
        ((2, 4, 3), (4, 1), {"sum": 1, "reshape": 1}),
    ],
)
def test_unbroadcast_sums_each_broadcast_axis_once_and_reshapes_only_when_it_must(
    shape, target, ops
):
    """The adjoint of broadcasting sums the broadcast axes: every entry of the
    result is the sum of the entries it was broadcast to."""
    from adcompare.ops.registry import unbroadcast

    value = np.arange(float(np.prod(shape))).reshape(shape)
    with ad.count() as cost:
        summed = unbroadcast(value, target)
    lead = len(shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1
    )
    np.testing.assert_array_equal(summed, value.sum(axis=axes).reshape(target))
    assert numpy_ops(cost) == ops


def test_jacrev_of_one_output_is_its_gradient_without_stacking_the_row():
    instance, gradient = make_mlp(batch=3, inputs=5, hidden=4, classes=3)
    with ad.count() as cost:
        jacobian = ad.jacrev(instance.on(ad))(instance.x)
    np.testing.assert_allclose(jacobian, gradient(instance.x), rtol=1e-12, atol=1e-15)
    assert jacobian.shape == instance.x.shape
    assert "concatenate" not in numpy_ops(cost)  # stack copies its rows by concatenating
