"""eigh and svd of complex matrices, in JAX's and autograd's convention, against differences.

A complex eigenvector or pair of singular vectors is numpy's only up to a phase, so
what is checked is functions the phases leave unchanged: the eigenvalues and singular
values, ``abs`` of the vectors, and the real and imaginary parts of ``V diag(c) Vᴴ``
and ``U diag(c) Vᴴ``. Each is checked along random complex directions: the JVP against
central differences, the gradient ``∂f/∂a − i ∂f/∂b`` through ``Re Σ grad · dz``,
and the two modes against each other by the dot-product test ``⟨ū, J dz⟩ = ⟨Jᵀ ū, dz⟩``
(the real pairing ``Re Σ u v`` of the convention). eigh reads one triangle (``UPLO``)
of a matrix that need not be Hermitian, and the imaginary part of its diagonal not at all.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad

RNG_SEED = 7


def complex_matrices(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def eigh_invariants(uplo):
    """The eigenvalues, |V| and the real and imaginary parts of V diag(c) Vᴴ, weighted."""

    def f(x):
        w, v = ad.eigh(x, uplo)
        n = v.shape[-1]
        c = np.arange(1.0, n + 1.0)
        weighted = ad.matmul(v * c, ad.conj(ad.swapaxes(v, -1, -2)))
        weights = np.linspace(-1.0, 2.0, n * n).reshape(n, n)
        return (
            ad.sum(w * c)
            + ad.sum(ad.abs(v) * weights)
            + 0.7 * ad.sum(ad.real(weighted) * weights)
            - 1.3 * ad.sum(ad.imag(weighted) * weights.T)
        )

    return f


def svd_invariants(x):
    """The singular values, |U|², |Vh| and the real and imaginary parts of U diag(c) Vh."""
    u, s, vh = ad.svd(x, full_matrices=False)
    k = s.shape[-1]
    c = np.arange(1.0, k + 1.0)
    product = ad.matmul(u * c, vh)
    weights = np.linspace(-1.0, 2.0, product.shape[-2] * product.shape[-1])
    weights = weights.reshape(product.shape[-2:])
    return (
        ad.sum(s * c)
        + ad.sum(ad.abs(u) ** 2 * np.arange(u.shape[-2] * k).reshape(-1, k))
        + ad.sum(ad.abs(vh) * np.linspace(0.5, 1.5, k * vh.shape[-1]).reshape(k, -1))
        + 0.7 * ad.sum(ad.real(product) * weights)
        - 1.3 * ad.sum(ad.imag(product) * weights[::-1])
    )


def svdvals_weighted(x):
    s = ad.svd(x, compute_uv=False)
    return ad.sum(s * s * np.arange(1.0, s.shape[-1] + 1.0))


def assert_matches_differences(f, x, seed, h=1e-6):
    """The JVP and the gradient along two random complex directions, against central
    differences."""
    rng = np.random.default_rng(seed)
    gradient = ad.grad(f)(x)
    assert gradient.dtype == np.complex128
    for _ in range(2):
        direction = rng.normal(size=x.shape) + 1j * rng.normal(size=x.shape)
        numeric = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
        _, tangent = ad.jvp(f, (x,), (direction,))
        scale = max(1.0, abs(numeric))
        assert abs(tangent - numeric) < 1e-6 * scale
        assert abs(np.real(np.sum(gradient * direction)) - numeric) < 1e-6 * scale


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh_of_a_complex_matrix_matches_differences(shape, uplo):
    assert_matches_differences(eigh_invariants(uplo), complex_matrices(shape, 1), seed=2)


def test_eigh_of_a_hermitian_matrix_matches_differences():
    a = complex_matrices((2, 3, 3), 3)
    hermitian = a + np.conj(np.swapaxes(a, -1, -2))
    assert_matches_differences(eigh_invariants("L"), hermitian, seed=4)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gradient_lands_on_the_triangle_read_and_the_real_diagonal(uplo):
    x = complex_matrices((4, 4), 5)
    gradient = ad.grad(eigh_invariants(uplo))(x)
    unread = np.triu(np.ones((4, 4)), 1) if uplo == "L" else np.tril(np.ones((4, 4)), -1)
    assert np.all(gradient[unread == 1] == 0)
    assert np.all(np.imag(np.diagonal(gradient)) == 0)
    assert np.any(np.abs(gradient[unread == 0]) > 1e-3)


@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (3, 3), (2, 3, 2), (2, 2, 3)])
def test_svd_of_a_complex_matrix_matches_differences(shape):
    assert_matches_differences(svd_invariants, complex_matrices(shape, 6), seed=8)


@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (2, 3, 3)])
def test_singular_values_of_a_complex_matrix_match_differences(shape):
    assert_matches_differences(svdvals_weighted, complex_matrices(shape, 9), seed=10)


@pytest.mark.parametrize(
    ("f", "shape"),
    [(eigh_invariants("U"), (3, 3)), (svd_invariants, (3, 2)), (svdvals_weighted, (2, 3))],
    ids=["eigh", "svd", "svdvals"],
)
def test_second_derivatives_match_differences_of_the_gradient(f, shape):
    # g = Re Σ c · grad f, a real function whose JVP and gradient differentiate the rules.
    weights = complex_matrices(shape, 15)
    assert_matches_differences(
        lambda x: ad.sum(ad.real(ad.grad(f)(x) * weights)), complex_matrices(shape, 16), seed=17
    )


def gauge_free_outputs(x):
    """A real vector of eigh's and svd's phase-free outputs."""
    w, v = ad.eigh(x)
    u, s, vh = ad.svd(x)
    pairs = ad.abs(u * ad.swapaxes(vh, -1, -2))
    return ad.concatenate([w.ravel(), ad.abs(v).ravel(), s.ravel(), pairs.ravel()])


def test_forward_and_reverse_agree_by_the_dot_product_test():
    rng = np.random.default_rng(RNG_SEED)
    x = complex_matrices((2, 3, 3), 11)
    out, pullback = ad.vjp(gauge_free_outputs, x)
    for _ in range(3):
        direction = rng.normal(size=x.shape) + 1j * rng.normal(size=x.shape)
        cotangent = rng.normal(size=out.shape)
        _, tangent = ad.jvp(gauge_free_outputs, (x,), (direction,))
        (x_bar,) = pullback(cotangent)
        np.testing.assert_allclose(
            np.sum(cotangent * tangent), np.real(np.sum(x_bar * direction)), rtol=1e-10
        )


def test_values_are_numpys_phases_included():
    for shape in [(3, 3), (4, 2), (2, 4), (2, 2, 3)]:
        x = complex_matrices(shape, 12)
        for ours, numpys in zip(ad.svd(x, full_matrices=False), np.linalg.svd(x, False)):
            np.testing.assert_allclose(ours, numpys, rtol=1e-12, atol=1e-12)
    x = complex_matrices((2, 3, 3), 13)
    for ours, numpys in zip(ad.eigh(x, "U"), np.linalg.eigh(x, "U")):
        np.testing.assert_allclose(ours, numpys, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "vectors",
    [lambda x: ad.eigh(x)[1], lambda x: ad.svd(x)[0], lambda x: ad.svd(x)[2]],
    ids=["eigh", "svd U", "svd Vh"],
)
def test_reverse_mode_refuses_a_function_of_the_arbitrary_phases(vectors):
    x = complex_matrices((3, 3), 14)
    with pytest.raises(ValueError, match="depends on the phases of complex vectors"):
        ad.grad(lambda a: ad.sum(ad.real(vectors(a))))(x)


def test_jacobian_by_reverse_mode_matches_differences():
    # jacrev pulls back every row at once: the phase check sees a batch of cotangents.
    x = complex_matrices((3, 3), 18)
    direction = complex_matrices((3, 3), 19)
    jacobian = ad.jacrev(gauge_free_outputs)(x)
    h = 1e-6
    numeric = (gauge_free_outputs(x + h * direction) - gauge_free_outputs(x - h * direction)) / (
        2 * h
    )
    along = np.real(np.tensordot(jacobian, direction, axes=2))
    np.testing.assert_allclose(along, numeric, rtol=1e-6, atol=1e-7)
