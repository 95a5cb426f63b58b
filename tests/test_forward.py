"""The forward engine: dual numbers, tangent lanes, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad


def test_one_direction_per_pass_on_the_worked_example():
    f = lambda x, y: 3 * x**2 + x * y + 5 * y**2
    dx = f(ad.Dual(2.0, 1.0), ad.Dual(3.0, 0.0))
    dy = f(ad.Dual(2.0, 0.0), ad.Dual(3.0, 1.0))
    assert (dx.primal, dx.tangent, dy.tangent) == (63.0, 15.0, 32.0)


def test_lanes_give_k_directional_derivatives_in_one_pass():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(4, 3))
    directions = rng.standard_normal((5, 4, 3))
    dual = ad.Dual(x, directions)
    out = ad.sum(ad.tanh(dual) * dual, axis=1)
    assert out.lanes == 5 and out.tangent.shape == (5, 4)
    # d/dx sum_j tanh(x_ij) x_ij = (1 - tanh²) x + tanh, contracted with each direction
    local = (1 - np.tanh(x) ** 2) * x + np.tanh(x)
    np.testing.assert_allclose(out.tangent, np.sum(local * directions, axis=2), rtol=1e-13)


def test_lanes_combine_with_single_direction_duals():
    lanes = ad.Dual([1.0, 2.0], [[1.0, 0.0], [0.0, 1.0]])
    single = ad.Dual([3.0, 4.0], [1.0, 1.0])
    out = lanes * single
    # each lane: d(a*b) = da*b + a*db
    np.testing.assert_array_equal(out.tangent, [[3.0 + 1.0, 2.0], [1.0, 4.0 + 2.0]])


def test_tangent_shape_errors_say_what_fits():
    with pytest.raises(ValueError, match=r"shape \(2,\) for one direction, or \(k, \*\(2,\)\)"):
        ad.Dual([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="would drop its tangent"):
        np.asarray(ad.Dual(1.0, 1.0))


def test_integers_promote_and_float32_stays():
    assert ad.Dual(2, 1).primal.dtype == np.float64
    d = ad.Dual(np.float32(2.0), np.float32(1.0))
    out = ad.exp(d) * 3.0
    assert out.primal.dtype == np.float32 and out.tangent.dtype == np.float32


def test_constant_output_has_zero_tangent():
    out = ad.Dual(1.0, 1.0) * 0.0 + ad.Dual(2.0, 0.0)
    assert out.tangent == 0.0
    _, tangent = ad.jvp(lambda x: np.float64(3.0), (1.0,), (1.0,))
    assert tangent == 0.0


def test_concatenate_joins_lanes_singles_and_constants_in_one_step():
    lanes = ad.Dual([1.0, 2.0], [[1.0, 0.0], [0.0, 1.0]])
    single = ad.Dual([3.0], [5.0])
    with ad.count() as cost:
        out = ad.concatenate([lanes, np.array([9.0]), single])
    np.testing.assert_array_equal(out.primal, [1.0, 2.0, 9.0, 3.0])
    np.testing.assert_array_equal(out.tangent, [[1.0, 0.0, 0.0, 5.0], [0.0, 1.0, 0.0, 5.0]])
    # one concatenate of primals and one of tangents, however many pieces
    assert cost.by_op["numpy", "concatenate"] == 2
