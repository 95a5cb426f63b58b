"""The Fourier transforms of ``numpy.fft``: values, and derivatives in JAX's convention.

The references are independent of the rules: numpy's own transforms for the
values, central finite differences (along the real and the imaginary
direction of complex inputs), hand formulas (Parseval's theorem, the inverse
undoing the transform), and the dot-product test with complex cotangents.
SymPy's sums of exponentials check the primitives in tests/test_symbolic.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops.registry import ComplexNotSupportedError, raw

RNG = np.random.default_rng(0)

# (numpy name, input shape, complex input, parameters): a sample of s/n, axes and norm.
CALLS = [
    ("fft", (6,), False, {}),
    ("fft", (3, 4), True, {"n": 6, "axis": 0, "norm": "ortho"}),
    ("ifft", (5,), True, {"n": 3, "norm": "forward"}),
    ("rfft", (7,), False, {"norm": "ortho"}),
    ("rfft", (4, 3), False, {"n": 6, "axis": 0}),
    ("irfft", (4,), True, {}),
    ("irfft", (3, 4), True, {"n": 5, "norm": "ortho"}),
    ("irfft", (5,), True, {"n": 4, "norm": "forward"}),
    ("fft2", (3, 4), True, {"s": (2, 5)}),
    ("ifft2", (2, 3, 2), False, {"axes": (0, 2), "norm": "ortho"}),
    ("rfft2", (3, 4), False, {"norm": "forward"}),
    ("irfft2", (3, 3), True, {"s": (4, 4)}),
    ("fftn", (2, 3, 2), True, {"axes": (2, 0)}),
    ("ifftn", (2, 3), False, {"s": (3, 2), "axes": (0, 1), "norm": "forward"}),
    ("rfftn", (2, 3, 4), False, {"axes": (0, 1), "s": (3, 2)}),
    ("irfftn", (2, 3, 3), True, {"axes": (1, 2), "norm": "ortho"}),
    ("irfftn", (2, 3), True, {"s": (2, 3), "axes": (0, 1)}),
]


def call_id(call):
    name, shape, is_complex, params = call
    kind = "complex" if is_complex else "real"
    return f"{name}[{'x'.join(map(str, shape))},{kind},{','.join(params)}]"


def draw(shape, is_complex, rng=RNG):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if is_complex else x


def transform(name):
    return getattr(np.fft, name)


def real_loss(name, params, weights):
    """Re(Σ w · f(x)): a real function of the transform that reads every output."""
    return lambda x: ad.real(ad.sum(transform(name)(x, **params) * weights))


def weights_for(name, shape, is_complex, params, rng):
    out = getattr(np.fft, name)(draw(shape, is_complex, rng), **params)
    return draw(out.shape, np.iscomplexobj(out), rng)


def gradient_from_slopes(slope, x):
    """∂f/∂a - i ∂f/∂b at x = a + ib (just ∂f/∂a for real x), from ``slope(direction)``, the
    directional derivative along each real coordinate."""
    gradient = np.zeros_like(x)
    directions = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for index in np.ndindex(x.shape):
        for direction in directions:
            step = np.zeros_like(x)
            step[index] = direction
            gradient[index] += slope(step) * np.conj(direction)
    return gradient


def gradient(f, x, mode):
    """The gradient of a real ``f``; in forward mode one JVP per real coordinate, since
    ``ad.grad(mode="forward")`` seeds only the real direction of a complex input."""
    if mode == "reverse":
        return ad.grad(f)(x)
    return gradient_from_slopes(lambda step: ad.jvp(f, (x,), (step,))[1], x)


def central_gradient(f, x, h=1e-6):
    """The gradient of a real ``f`` by central differences along every real coordinate."""
    return gradient_from_slopes(lambda step: (f(x + h * step) - f(x - h * step)) / (2 * h), x)


@pytest.mark.parametrize("call", CALLS, ids=call_id)
def test_values_match_numpy_through_numpy_dispatch(call):
    name, shape, is_complex, params = call
    x = draw(shape, is_complex)
    want = transform(name)(x, **params)
    for boxed in (ad.Tensor(x, requires_grad=not is_complex), ad.Dual(x, np.ones_like(x))):
        got = transform(name)(boxed, **params)
        assert type(got) is type(boxed)
        np.testing.assert_allclose(raw(got), want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("call", CALLS, ids=call_id)
def test_real_loss_gradients_match_differences_in_both_modes(call):
    name, shape, is_complex, params = call
    rng = np.random.default_rng(1)
    x = draw(shape, is_complex, rng)
    loss = real_loss(name, params, weights_for(name, shape, is_complex, params, rng))
    numeric = central_gradient(loss, x)
    for mode in ("reverse", "forward"):
        got = gradient(loss, x, mode)
        assert np.iscomplexobj(got) == is_complex, "a real input's cotangent is real"
        np.testing.assert_allclose(got, numeric, rtol=1e-7, atol=1e-8, err_msg=mode)


@pytest.mark.parametrize("call", CALLS, ids=call_id)
def test_forward_and_reverse_jacobians_agree(call):
    name, shape, _, params = call
    x = draw(shape, False)  # the Jacobian transforms take real inputs
    # jacrev of a complex output seeds real cotangents only, so compare part by part.
    for part in (ad.real, ad.imag):
        f = lambda x, part=part: part(transform(name)(x, **params))
        np.testing.assert_allclose(ad.jacfwd(f)(x), ad.jacrev(f)(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [c for c in CALLS if c[2]], ids=call_id)
def test_complex_dot_product_test(call):
    # Re(Σ u · J v) = Re(Σ (Jᵀu) · v) for complex u and v: the VJP is the transpose.
    name, shape, _, params = call
    rng = np.random.default_rng(3)
    x, v = draw(shape, True, rng), draw(shape, True, rng)
    f = lambda x: transform(name)(x, **params)
    out, tangent = ad.jvp(f, (x,), (v,))
    u = draw(np.shape(out), np.iscomplexobj(out), rng)
    _, pullback = ad.vjp(f, x)
    (cotangent,) = pullback(u)
    forward, reverse = np.real(np.sum(u * tangent)), np.real(np.sum(cotangent * v))
    assert abs(forward - reverse) <= 1e-12 * (abs(forward) + abs(reverse))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_power_spectrum_gradient_is_2n_x(mode):
    # Parseval: Σ|fft(x)|² = n Σ x², so its gradient is 2 n x.
    x = np.random.default_rng(4).standard_normal(7)
    loss = lambda x: ad.sum(ad.abs(np.fft.fft(x)) ** 2)
    got = gradient(loss, x, mode)
    np.testing.assert_allclose(got, 2 * 7 * x, rtol=1e-12)
    np.testing.assert_allclose(got, central_gradient(loss, x), rtol=1e-6)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_parseval_differentiated_through(mode):
    # Σ|X|²/n for X = fftn(z) is Σ|z|², whose gradient at z = a + ib is 2a - 2ib; for the
    # orthonormal 2-D transform of a real x the energy itself is kept, gradient 2x.
    rng = np.random.default_rng(5)
    z = draw((3, 4), True, rng)
    energy = lambda z: ad.sum(ad.abs(np.fft.fftn(z)) ** 2) / 12
    np.testing.assert_allclose(gradient(energy, z, mode), 2 * np.conj(z), rtol=1e-12)
    x = draw((3, 4), False, rng)
    kept = lambda x: ad.sum(ad.abs(np.fft.fft2(x, norm="ortho")) ** 2)
    np.testing.assert_allclose(gradient(kept, x, mode), 2 * x, rtol=1e-12)
    hessian = ad.hessian(lambda x: ad.sum(ad.abs(np.fft.fft(x)) ** 2), mode="fwd-over-rev")
    np.testing.assert_allclose(hessian(x[0]), 2 * 4 * np.eye(4), atol=1e-12)


@pytest.mark.parametrize("n", [6, 7])
def test_the_inverse_undoes_the_transform_differentiated_through(n):
    # ifft(fft(x)) = x and irfft(rfft(x), n) = x: both Jacobians are the identity.
    x = np.random.default_rng(6).standard_normal(n)
    round_trips = [
        lambda x: ad.real(np.fft.ifft(np.fft.fft(x, norm="ortho"), norm="ortho")),
        lambda x: np.fft.irfft(np.fft.rfft(x), n),
        lambda x: np.fft.irfftn(np.fft.rfftn(x, norm="forward"), (n,), axes=(0,), norm="forward"),
    ]
    for f in round_trips:
        np.testing.assert_allclose(f(x), x, atol=1e-13)
        for jacobian in (ad.jacfwd, ad.jacrev):
            np.testing.assert_allclose(jacobian(f)(x), np.eye(n), atol=1e-13)


@pytest.mark.parametrize("n", [6, 7])
def test_irfft_weights_each_kept_frequency_by_how_often_it_counts(n):
    # Hand formula: y = irfft(X, n) has y_t = (1/n) Σ_k w_k Re(X_k e^{2πikt/n}), so the
    # gradient of Σ y_t is w_k (1/n) Σ_t e^{2πikt/n}: w_0 = 1 at k = 0 and 0 elsewhere.
    m = n // 2 + 1
    spectrum = draw((m,), True)
    spike = np.zeros(m, complex)
    spike[0] = 1.0
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(
            gradient(lambda z: ad.sum(np.fft.irfft(z, n)), spectrum, mode), spike, atol=1e-14
        )
    # y_1 = (1/n) Σ_k w_k Re(X_k e^{2πik/n}): its gradient is w_k e^{2πik/n} / n.
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    want = weights * np.exp(2j * np.pi * np.arange(m) / n) / n
    for mode in ("reverse", "forward"):
        got = gradient(lambda z: np.fft.irfft(z, n)[1], spectrum, mode)
        np.testing.assert_allclose(got, want, atol=1e-14)


def test_rfft_refuses_complex_input_and_bad_arguments_are_named():
    with pytest.raises(ComplexNotSupportedError, match="use fftn"):
        np.fft.rfft(ad.Dual(np.array([1.0 + 1j, 2.0]), np.ones(2)))
    with pytest.raises(ValueError, match="norm='unitary' is not one of"):
        ad.fftn(np.ones(3), norm="unitary")
    with pytest.raises(ValueError, match="one positive length per transformed axis"):
        ad.fftn(np.ones((2, 3)), s=(2, 3, 4), axes=(0, 1))
    with pytest.raises(ValueError, match="name the same axis twice"):
        ad.fftn(np.ones((2, 3)), axes=(1, -1))
