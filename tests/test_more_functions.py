"""What the registry's generated tests do not reach for the added functions: special
points, static parameters, dtypes, the ``%`` operator, scipy's names and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sc
import sympy

import adcompare as ad
from adcompare.transforms import HESSIAN_MODES


def test_sinc_derivatives_at_zero_match_its_taylor_series():
    # sinc(x) = 1 - (pi x)²/6 + (pi x)⁴/120 - ...: sinc'(0) = 0, sinc''(0) = -pi²/3,
    # sinc''''(0) = pi⁴/5; the closed form of the slope is 0/0 there.
    x = sympy.Symbol("x")
    series = sympy.series(sympy.sin(sympy.pi * x) / (sympy.pi * x), x, 0, 6).removeO()
    for order, nesting in enumerate([ad.grad, lambda f: ad.grad(ad.grad(f))], start=1):
        exact = float(sympy.diff(series, x, order).subs(x, 0))
        assert nesting(ad.sinc)(0.0) == pytest.approx(exact, abs=1e-12)
    fourth = ad.grad(ad.grad(ad.grad(ad.grad(ad.sinc))))(0.0)
    assert fourth == pytest.approx(math.pi**4 / 5, rel=1e-10)
    for mode in HESSIAN_MODES:
        h = ad.hessian(lambda v: ad.sum(ad.sinc(v)), mode=mode)(np.array([0.0, 0.05, 0.5]))
        np.testing.assert_allclose(np.diag(h)[0], -(math.pi**2) / 3, rtol=1e-12)


def test_the_mod_operator_and_its_derivatives():
    x = ad.Tensor([-1.3, 2.6], requires_grad=True)
    y = ad.Tensor([1.5, 1.5], requires_grad=True)
    out = x % y
    np.testing.assert_allclose(out.detach().numpy(), np.mod([-1.3, 2.6], 1.5))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(y.grad.numpy(), -np.floor(np.array([-1.3, 2.6]) / 1.5))
    assert ad.grad(lambda v: 7.0 % v)(2.0) == -3.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_astype_to_floats_keeps_the_derivative_and_returns_it_in_the_input_dtype(dtype):
    x = np.array([0.5, 1.5])
    g = ad.grad(lambda v: ad.sum(v.astype(dtype) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x.astype(dtype), rtol=1e-3)
    t = ad.Tensor(x.astype(np.float32), requires_grad=True)
    (t.astype(np.float64) * 3.0).sum().backward()
    assert t.grad.dtype == np.float32
    _, tangent = ad.jvp(lambda v: v.astype(dtype), (x,), (np.ones(2),))
    assert tangent.dtype == dtype


@pytest.mark.parametrize("target", [np.int64, "int32", bool, np.complex128])
def test_astype_refuses_targets_that_cannot_carry_a_real_derivative(target):
    with pytest.raises(TypeError, match="cannot carry a real derivative"):
        ad.Tensor([1.5], requires_grad=True).astype(target)


def test_scipy_ufuncs_reach_the_ops_by_scipys_names():
    t = ad.Tensor([0.7, 1.9], requires_grad=True)
    for call, op in [
        (sc.psi, ad.digamma),
        (sc.digamma, ad.digamma),
        (sc.gammaln, ad.gammaln),
        (sc.erf, ad.erf),
        (lambda v: sc.iv(1.5, v), lambda v: ad.iv(1.5, v)),
        (lambda v: sc.xlogy(2.0, v), lambda v: ad.xlogy(2.0, v)),
    ]:
        out = call(t)
        assert isinstance(out, ad.Tensor) and out.requires_grad
        np.testing.assert_allclose(out.detach().numpy(), op(np.array([0.7, 1.9])), rtol=1e-15)


def test_scipy_functions_that_are_not_ufuncs_refuse_instead_of_dropping_the_derivative():
    t = ad.Tensor([0.7, 1.9], requires_grad=True)
    for call in [sc.softmax, sc.log_softmax, lambda v: sc.polygamma(1, v)]:
        with pytest.raises(RuntimeError, match=r"would (silently )?drop (its|the) derivative"):
            call(t)
    # Where adcompare has the function, the message names it (in both modes).
    for box in (t, ad.Dual(np.array([0.7, 1.9]), np.ones(2))):
        with pytest.raises((RuntimeError, TypeError), match=r"call adcompare\.logsumexp"):
            sc.logsumexp(box)


def test_orders_and_degrees_of_freedom_are_constants():
    with pytest.raises(TypeError, match="Bessel order v must be one constant"):
        ad.grad(lambda v: ad.iv(v, 1.0))(1.5)
    with pytest.raises(ValueError, match=r"order n=1\.5 must be a nonnegative integer"):
        ad.polygamma(1.5, 1.0)


def test_fabs_refuses_complex_input_and_radians_reach_deg2rad():
    with pytest.raises(ad.ComplexNotSupportedError, match="fabs is computed for real numbers"):
        ad.fabs(np.array([1 + 1j]))
    t = ad.Tensor([90.0], requires_grad=True)
    np.radians(t).sum().backward()
    assert t.grad.numpy()[0] == pytest.approx(math.pi / 180, rel=1e-15)


def test_rounding_has_zero_derivative_in_both_modes():
    x = np.array([-1.5, 0.4, 2.5])
    for f in [ad.floor, ad.ceil, ad.trunc, ad.sign, ad.round, np.fix, np.around]:
        for mode in ("reverse", "forward"):
            np.testing.assert_array_equal(ad.grad(lambda v: ad.sum(f(v) * v), mode=mode)(x), f(x))
