"""Transforms: gradients, JVPs, VJPs and Jacobians by both modes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    """Hand-derived gradient of the extended Rosenbrock function."""
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_grad_matches_the_hand_derived_rosenbrock_gradient(mode):
    x = np.random.default_rng(0).uniform(-1.5, 1.5, size=17)
    np.testing.assert_allclose(
        ad.grad(rosenbrock, mode=mode)(x), rosenbrock_gradient(x), rtol=1e-12
    )


def test_value_and_grad_with_several_arguments():
    f = lambda x, y: ad.sum(x * y) + ad.sum(ad.sin(x))
    x, y = np.array([0.5, 1.0]), np.array([2.0, 3.0])
    for mode in ("reverse", "forward"):
        value, (gx, gy) = ad.value_and_grad(f, argnums=(0, 1), mode=mode)(x, y)
        assert value == pytest.approx(np.sum(x * y) + np.sum(np.sin(x)))
        np.testing.assert_allclose(gx, y + np.cos(x), rtol=1e-14)
        np.testing.assert_allclose(gy, x, rtol=1e-14)
    assert ad.grad(f, argnums=1)(x, y).tolist() == [0.5, 1.0]


def test_grad_of_a_non_scalar_function_points_to_jacobian():
    with pytest.raises(ValueError, match=r"shape \(3,\).*adcompare\.jacobian"):
        ad.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(ValueError, match="jacobian"):
        ad.grad(lambda x: x * 2, mode="forward")(np.ones(3))
    with pytest.raises(ValueError, match="argnums=2"):
        ad.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(ValueError, match="unknown mode 'sideways'"):
        ad.grad(lambda x: x, mode="sideways")


def test_jvp_and_vjp_agree_by_the_dot_product_test():
    f = lambda x: ad.tanh(ad.matmul(np.arange(12.0).reshape(3, 4) / 10, x * ad.sin(x)))
    rng = np.random.default_rng(1)
    x, v, u = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(3)
    out, jv = ad.jvp(f, (x,), (v,))
    out2, pullback = ad.vjp(f, x)
    (jtu,) = pullback(u)
    np.testing.assert_allclose(out, out2)
    assert np.dot(u, jv) == pytest.approx(np.dot(jtu, v), rel=1e-12)
    (again,) = pullback(2 * u)  # the recorded pass is kept for more pullbacks
    np.testing.assert_allclose(again, 2 * jtu)
    with pytest.raises(ValueError, match=r"cotangent has shape \(2,\).*\(3,\)"):
        pullback(np.ones(2))
    with pytest.raises(ValueError, match="one tangent per primal"):
        ad.jvp(f, (x,), ())


@pytest.mark.parametrize("chunk", [1, 3, 5, None])
def test_jacfwd_and_jacrev_take_ceil_n_over_k_passes_and_sweeps(chunk):
    f = lambda x: ad.sin(x) * x[0]
    x = np.linspace(0.1, 1.0, 5)
    with ad.count() as cost:
        forward = ad.jacfwd(f, chunk_size=chunk)(x)
    expected = 1 if chunk is None else math.ceil(5 / chunk)
    assert cost.passes == expected
    with ad.count() as cost:
        reverse = ad.jacrev(f, chunk_size=chunk)(x)
    assert cost.sweeps == expected  # rows batched by the same rule as forward's lanes
    exact = np.diag(np.cos(x) * x[0])
    exact[:, 0] += np.sin(x)
    np.testing.assert_allclose(forward, exact, rtol=1e-14)
    np.testing.assert_allclose(reverse, exact, rtol=1e-14)


def test_jacobian_shapes_follow_output_then_input():
    f = lambda x: ad.matmul(x, x.T)  # (2, 3) -> (2, 2)
    x = np.arange(6.0).reshape(2, 3)
    jf, jr = ad.jacfwd(f)(x), ad.jacrev(f)(x)
    assert jf.shape == jr.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(jf, jr)
    # d(x xᵀ)_ij / dx_kl = δ_ik x_jl + δ_jk x_il
    eye = np.eye(2)
    exact = np.einsum("ik,jl->ijkl", eye, x) + np.einsum("jk,il->ijkl", eye, x)
    np.testing.assert_allclose(jf, exact)


@pytest.mark.parametrize(
    ("n", "m", "mode"), [(1000, 1, "reverse"), (1, 1000, "forward"), (100, 100, "forward")]
)
def test_jacobian_auto_chooses_the_cheaper_mode_and_says_why(n, m, mode):
    weights = np.linspace(-1.0, 1.0, n * m).reshape(m, n)
    f = lambda x: ad.tanh(ad.matmul(weights, x))
    jac = ad.jacobian(f)
    x = np.linspace(0.0, 1.0, n)
    result = jac(x)
    assert jac.last_choice.mode == mode
    assert f"{n} input(s)" in jac.last_choice.reason
    np.testing.assert_allclose(result, (1 - np.tanh(weights @ x) ** 2)[:, None] * weights)


def test_transforms_work_inside_no_grad_and_on_integer_inputs():
    with ad.no_grad():
        assert ad.grad(lambda x: x * x)(3) == 6.0


def test_nested_perturbations_stay_apart():
    # d/dx [x * d/dy (x + y)] = 1: the inner derivative must not see x's perturbation.
    inner = lambda x: ad.grad(lambda y: x + y)(1.0)
    assert ad.grad(lambda x: x * inner(x))(2.0) == 1.0
    assert ad.grad(lambda x: x * inner(x), mode="forward")(2.0) == 1.0
    inner_fwd = lambda x: ad.grad(lambda y: x + y, mode="forward")(1.0)
    assert ad.grad(lambda x: x * inner_fwd(x))(2.0) == 1.0
    assert ad.grad(lambda x: x * inner_fwd(x), mode="forward")(2.0) == 1.0


def test_hessian_by_forward_over_reverse_matches_the_hand_formula():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    quadratic = lambda x: ad.sum(x * ad.matmul(a, x))
    hessian = ad.jacfwd(ad.grad(quadratic))(np.array([0.3, -0.7]))
    np.testing.assert_allclose(hessian, a + a.T, rtol=1e-14)
    assert ad.grad(ad.grad(ad.grad(lambda x: x**4)))(2.0) == pytest.approx(24 * 2.0)
