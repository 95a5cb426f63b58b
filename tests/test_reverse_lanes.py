"""Reverse mode batched as forward mode is: ``jacrev`` carries rows as cotangent lanes.

Forward mode seeds ``k`` columns of the identity per pass; reverse mode now
seeds ``k`` rows per sweep (``vmap`` over the pullback), chunked by the same
rule, so a comparison of the modes no longer compares batching too.
"""

import math

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.problems import get_problem
from adcompare.transforms import default_chunk


def tanh_map(n, m):
    instance = get_problem("tanh_map").build(n=n, m=m)
    return instance.on(ad), instance.x


def counted(jacobian, x):
    with ad.count() as cost:
        value = jacobian(x)
    return value, cost


def test_a_square_map_costs_reverse_a_few_times_forwards_ops_in_ceil_m_over_k_sweeps():
    f, x = tanh_map(256, 256)
    forward, forward_cost = counted(ad.jacfwd(f), x)
    reverse, reverse_cost = counted(ad.jacrev(f), x)
    one_row, one_row_cost = counted(ad.jacrev(f, chunk_size=1), x)
    np.testing.assert_allclose(reverse, forward, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(one_row, forward, rtol=1e-12, atol=1e-15)
    k = default_chunk(256)
    assert (reverse_cost.sweeps, reverse_cost.cotangent_seeds) == (math.ceil(256 / k), 256)
    assert (forward_cost.passes, forward_cost.seeds) == (math.ceil(256 / k), 256)
    applications = lambda cost: sum(cost.ops.values())
    # The recorded pass plus its sweep, against one pass of dual numbers: the same order.
    assert applications(reverse_cost) <= 3 * applications(forward_cost)
    assert reverse_cost.elements["numpy"] <= 1.1 * forward_cost.elements["numpy"]
    # One row a sweep applies every rule once per row: what batching buys.
    assert one_row_cost.sweeps == 256
    assert applications(one_row_cost) >= 100 * applications(reverse_cost)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 8, None])
def test_every_chunk_gives_the_exact_jacobian_in_ceil_m_over_k_sweeps(chunk):
    f = lambda x: ad.concatenate([ad.sin(x) * x[0], ad.cumsum(x**2)[1:]])  # R^5 -> R^9
    x = np.linspace(0.2, 1.0, 5)
    jacobian, cost = counted(ad.jacrev(f, chunk_size=chunk), x)
    exact = np.zeros((9, 5))
    exact[:5] = np.diag(np.cos(x) * x[0])
    exact[:5, 0] += np.sin(x)
    exact[5:] = np.tril(2 * x[None, :] * np.ones((5, 5)))[1:]
    np.testing.assert_allclose(jacobian, exact, rtol=1e-14, atol=1e-15)
    k = chunk or default_chunk(9)
    assert cost.sweeps == math.ceil(9 / k)
    assert cost.cotangent_seeds == 9


def test_lanes_keep_pytrees_aux_dtypes_and_several_outputs():
    def f(p):
        out = {"y": ad.tanh(p["w"]) * p["b"], "s": ad.sum(p["w"] ** 2)}
        return out, "aux"

    p = {"w": np.array([0.1, 0.2, 0.3], dtype=np.float32), "b": np.float32(2.0)}
    jacobian, aux = ad.jacrev(f, has_aux=True, chunk_size=2)(p)
    assert aux == "aux"
    w = p["w"].astype(np.float64)
    dy_dw = np.diag((1 - np.tanh(w) ** 2) * 2.0)
    np.testing.assert_allclose(jacobian["y"]["w"], dy_dw, rtol=1e-6)
    np.testing.assert_allclose(jacobian["y"]["b"], np.tanh(w), rtol=1e-6)
    np.testing.assert_allclose(jacobian["s"]["w"], 2 * w, rtol=1e-6)
    assert jacobian["y"]["w"].dtype == np.float32 and jacobian["s"]["b"].dtype == np.float32
    assert jacobian["y"]["w"].flags.writeable


@pytest.mark.parametrize("mode", ["rev-over-rev", "rev-over-fwd"])
def test_hessians_that_end_in_reverse_sweep_rows_in_lanes(mode):
    f = lambda x: ad.sum(ad.sin(x) * x[0]) + x[1] ** 3
    x = np.linspace(0.3, 1.2, 6)
    with ad.count() as cost:
        hessian = ad.hessian(f, mode=mode)(x)
    np.testing.assert_allclose(hessian, ad.hessian(f, mode="fwd-over-fwd")(x), rtol=1e-12)
    outer_sweeps = 1 if mode == "rev-over-fwd" else 2  # the inner gradient's sweep, then its rows
    assert cost.sweeps == outer_sweeps


def test_a_chunk_that_is_not_a_positive_integer_is_refused():
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        ad.jacrev(ad.sin, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        ad.jacobian(ad.sin, mode="reverse", chunk_size=2.5)


def test_rows_that_no_lane_changed_come_back_as_fresh_writeable_arrays():
    # vmap broadcasts an output that does not depend on the lanes: an unreached input's
    # zero block and a sum's cotangent came back as read-only, stride-0 views.
    unreached = ad.jacrev(lambda x, y: x * 2.0, argnums=(0, 1))(np.ones(3), np.ones(2))
    summed = ad.jacrev(lambda x: np.zeros(3) + ad.sum(x))(np.ones(3))
    for jacobian, expected in [
        (unreached[0], 2.0 * np.eye(3)),
        (unreached[1], np.zeros((3, 2))),
        (summed, np.ones((3, 3))),
    ]:
        np.testing.assert_array_equal(jacobian, expected)
        assert jacobian.flags.writeable and 0 not in jacobian.strides
        jacobian += 1.0
        np.testing.assert_array_equal(jacobian, expected + 1.0)
