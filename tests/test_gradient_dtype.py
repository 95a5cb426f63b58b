"""A gradient has its input's floating dtype, in every mode (PyTorch's and JAX's rule).

float16 stays float16 and float32 stays float32, whether the gradient comes
from ``grad``, ``jacrev``, ``jacfwd``, forward-mode ``grad``, a Hessian, or
``Tensor.backward``; and ``grad`` gives the same numbers as ``backward``.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.transforms import HESSIAN_MODES

DTYPES = [np.float16, np.float32, np.float64]


def scalar_f(x):
    return ad.sum(ad.sin(x) * x)


def vector_f(x):
    return ad.sin(x) * x


def scalar_f_derivative(x):
    return np.cos(x) * x + np.sin(x)


GRADIENTS = {
    "grad": lambda x: ad.grad(scalar_f)(x),
    "grad forward": lambda x: ad.grad(scalar_f, mode="forward")(x),
    "value_and_grad": lambda x: ad.value_and_grad(scalar_f)(x)[1],
    "vjp": lambda x: ad.vjp(scalar_f, x)[1](np.ones((), x.dtype))[0],
    "jacrev": lambda x: ad.jacrev(scalar_f)(x),
    "jacfwd": lambda x: ad.jacfwd(scalar_f)(x),
    "jacobian auto": lambda x: ad.jacobian(scalar_f)(x),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("mode", list(GRADIENTS))
def test_a_gradient_has_its_inputs_dtype(mode, dtype):
    x = np.array([0.5, 1.0, 1.5], dtype=dtype)
    gradient = GRADIENTS[mode](x)
    assert gradient.dtype == dtype
    tolerance = {np.float16: 4e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(
        gradient.astype(np.float64), scalar_f_derivative(x.astype(np.float64)), rtol=tolerance
    )


@pytest.mark.parametrize("jacobian", [ad.jacrev, ad.jacfwd], ids=["jacrev", "jacfwd"])
def test_a_jacobian_has_its_inputs_dtype(jacobian):
    x = np.array([0.5, 1.0, 1.5], dtype=np.float16)
    result = jacobian(vector_f)(x)
    assert result.dtype == np.float16
    expected = np.diag(scalar_f_derivative(x.astype(np.float64)))
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=4e-3, atol=0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("mode", HESSIAN_MODES)
def test_a_hessian_has_its_inputs_dtype(mode, dtype):
    x = np.array([0.5, 1.0], dtype=dtype)
    result = ad.hessian(scalar_f, mode=mode)(x)
    assert result.dtype == dtype
    x64 = x.astype(np.float64)
    expected = np.diag(2 * np.cos(x64) - x64 * np.sin(x64))
    tolerance = {np.float16: 1e-2, np.float32: 1e-5}[dtype]
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=tolerance, atol=tolerance)


def test_grad_gives_what_backward_gives_in_float16():
    x = np.array([0.5, 1.0, 1.5], dtype=np.float16)
    leaf = ad.Tensor(x, requires_grad=True)
    scalar_f(leaf).backward()
    assert leaf.grad.dtype == np.float16
    np.testing.assert_array_equal(ad.grad(scalar_f)(x), leaf.grad.numpy())


def test_a_wider_constant_does_not_widen_the_gradient():
    # The output is float64 (the weights are), but the gradient has x's dtype, as
    # Tensor.backward gives it.
    weights = np.array([1.0, 2.0, 3.0])
    f = lambda x: ad.sum(ad.sin(x) * weights)
    x = np.array([0.5, 1.0, 1.5], dtype=np.float32)
    expected = np.cos(x.astype(np.float64)) * weights
    for gradient in [ad.grad(f)(x), ad.grad(f, mode="forward")(x), ad.jacrev(f)(x)]:
        assert gradient.dtype == np.float32
        np.testing.assert_allclose(gradient, expected, rtol=1e-6)
    leaf = ad.Tensor(x, requires_grad=True)
    (by_autograd_grad,) = ad.autograd_grad(f(leaf), [leaf])
    f(leaf).backward()
    for gradient in [leaf.grad, by_autograd_grad]:
        assert gradient.dtype == np.float32
        np.testing.assert_allclose(gradient.numpy(), expected, rtol=1e-6)


def test_a_gradient_that_does_not_reach_the_input_has_its_dtype():
    x = np.array([0.5, 1.0], dtype=np.float16)
    for gradient in [ad.grad(lambda x: ad.sum(x) * 0.0 + 1.0)(x), ad.jacrev(lambda x: 2.0)(x)]:
        assert gradient.dtype == np.float16
        np.testing.assert_array_equal(gradient, 0.0)


def test_integers_get_float64_gradients():
    gradient = ad.grad(scalar_f)(np.array([1, 2]))
    assert gradient.dtype == np.float64
    np.testing.assert_allclose(gradient, scalar_f_derivative(np.array([1.0, 2.0])), rtol=1e-14)
