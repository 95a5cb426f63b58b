"""Linear algebra, contractions and norms beyond the registry's generated tests:
numpy's norm for every ord and axis, identities differentiated through
(A·inv(A) = I, L·Lᵀ = A, A·v = λ·v, U·S·Vh = A, Q·R = A, sqrtm(A)² = A),
einsum's subscript forms, and numpy dispatch to them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import adcompare as ad
from adcompare.ops.matrices import diagonally_dominant, full_rank, symmetric_positive_definite

RNG = np.random.default_rng(0)


def assert_directional_derivatives_match(f, x, seed=0, rtol=1e-6, atol=1e-8):
    """Forward and reverse mode against central differences along one random direction."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(np.shape(x))
    u = rng.standard_normal(np.shape(f(x)))
    scalar = lambda z: ad.sum(f(z) * u)
    h = 1e-6
    numeric = (scalar(x + h * v) - scalar(x - h * v)) / (2 * h)
    for mode in ("forward", "reverse"):
        got = np.sum(ad.grad(scalar, mode=mode)(x) * v)
        assert got == pytest.approx(numeric, rel=rtol, abs=atol), mode


# --- norm ---------------------------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, 3, 4, 0.5, -1, -3, np.inf, -np.inf, 0]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("order", VECTOR_ORDS, ids=str)
def test_vector_norms_match_numpy_with_every_axis(order):
    x = RNG.uniform(-2, 2, (2, 3, 4))
    for axis, keepdims in [(0, False), (-1, True), (1, False)]:
        want = np.linalg.norm(x, order, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(ad.norm(x, order, axis, keepdims), want, rtol=1e-13)
    np.testing.assert_allclose(ad.norm(x[0, 0], order), np.linalg.norm(x[0, 0], order), rtol=1e-13)
    assert_directional_derivatives_match(lambda z: ad.norm(z, order, axis=1), x)


@pytest.mark.parametrize("order", MATRIX_ORDS, ids=str)
def test_matrix_norms_match_numpy_with_every_axis_pair(order):
    x = RNG.uniform(-2, 2, (2, 3, 4))
    for axis, keepdims in [((1, 2), False), ((2, 0), True), ((-1, -3), False)]:
        want = np.linalg.norm(x, order, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(ad.norm(x, order, axis, keepdims), want, rtol=1e-13)
    np.testing.assert_allclose(ad.norm(x[0], order), np.linalg.norm(x[0], order), rtol=1e-13)
    assert_directional_derivatives_match(lambda z: ad.norm(z, order, axis=(2, 0)), x)


def test_the_spectral_norm_of_a_matrix_has_the_top_singular_pair_as_gradient():
    # Its gradient is u₁ v₁ᵀ; the elementwise 2-norm's (x / ‖x‖_F) was returned before.
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    u, s, vh = np.linalg.svd(x)
    t = ad.Tensor(x, requires_grad=True)
    value = np.linalg.norm(t, 2)
    value.backward()
    assert float(value.item()) == pytest.approx(s[0], rel=1e-14)
    np.testing.assert_allclose(t.grad.numpy(), np.outer(u[:, 0], vh[0]), rtol=1e-12)
    np.testing.assert_allclose(
        ad.grad(lambda z: ad.norm(z, -2))(x), np.outer(u[:, 1], vh[1]), rtol=1e-12
    )
    np.testing.assert_allclose(ad.grad(lambda z: ad.norm(z, "nuc"))(x), u @ vh, rtol=1e-12)


def test_the_norm_of_everything_is_euclidean_and_keeps_dims():
    x = RNG.uniform(-2, 2, (2, 3, 4))
    assert ad.norm(x) == pytest.approx(np.linalg.norm(x), rel=1e-14)
    assert ad.norm(x, keepdims=True).shape == (1, 1, 1)
    np.testing.assert_allclose(ad.grad(ad.norm)(x), x / np.linalg.norm(x), rtol=1e-13)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ad.norm(np.ones(3), "fro"), "matrix norm"),
        (lambda: ad.norm(np.ones((2, 2)), 3), "not a matrix norm"),
        (lambda: ad.norm(np.ones((2, 2, 2)), 2), "1-D or 2-D"),
        (lambda: ad.norm(np.ones((2, 2, 2)), axis=(0, 1, 2)), "give one or two"),
        (lambda: ad.norm(np.ones((2, 2)), axis=(1, 1)), "same axis twice"),
    ],
)
def test_norms_numpy_refuses_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_the_zero_vector_has_a_zero_subgradient_for_p_norms():
    for order in (2, 3, 4):
        np.testing.assert_array_equal(ad.grad(lambda z: ad.norm(z, order))(np.zeros(3)), 0.0)


# --- identities differentiated through ---------------------------------------------------


def test_a_times_its_inverse_stays_the_identity():
    a = diagonally_dominant((3, 3), RNG)
    for jacobian in (ad.jacfwd, ad.jacrev):
        np.testing.assert_allclose(jacobian(lambda z: z @ ad.inv(z))(a), 0.0, atol=1e-14)


def test_cholesky_factor_times_its_transpose_moves_with_the_matrix():
    a = symmetric_positive_definite((3, 3), RNG)
    d = RNG.standard_normal((3, 3))
    d = d + d.T
    lower = lambda z: ad.cholesky(z)
    _, tangent = ad.jvp(lambda z: lower(z) @ ad.transpose(lower(z)), (a,), (d,))
    np.testing.assert_allclose(tangent, d, rtol=1e-12)


def test_eigenpairs_keep_solving_the_eigenproblem():
    def residual(s):
        a = s + s.T  # symmetric, so both triangles agree
        w, v = ad.eigh(a)
        return a @ v - v * w

    s = symmetric_positive_definite((3, 3), RNG) / 2
    for jacobian in (ad.jacfwd, ad.jacrev):
        np.testing.assert_allclose(jacobian(residual)(s), 0.0, atol=1e-12)


def test_eigenvectors_are_numpys_signs_included():
    a = symmetric_positive_definite((2, 4, 4), RNG)
    w, v = ad.eigh(a)
    want = np.linalg.eigh(a)
    np.testing.assert_allclose(w, want.eigenvalues, rtol=1e-14)
    np.testing.assert_array_equal(v, want.eigenvectors)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_singular_vectors_and_qr_rebuild_the_matrix_to_first_order(shape):
    a = full_rank(shape, RNG)
    d = RNG.standard_normal(shape)
    rebuilt = lambda z: (lambda u, s, vh: (u * ad.expand_dims(s, -2)) @ vh)(
        *ad.svd(z, full_matrices=False)
    )
    for f in (rebuilt, lambda z: ad.matmul(*ad.qr(z))):
        value, tangent = ad.jvp(f, (a,), (d,))
        np.testing.assert_allclose(value, a, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tangent, d, rtol=1e-10, atol=1e-11)


def test_qr_matches_numpy_on_wide_matrices_and_refuses_complete_mode():
    a = full_rank((2, 4), RNG)
    for got, want in zip(ad.qr(a), np.linalg.qr(a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="'reduced' or 'r'"):
        ad.qr(a, mode="complete")


def test_sqrtm_squared_is_the_matrix_and_expm_moves_along_its_generator():
    a = diagonally_dominant((3, 3), RNG)
    d = RNG.standard_normal((3, 3))
    _, tangent = ad.jvp(lambda z: ad.sqrtm(z) @ ad.sqrtm(z), (a,), (d,))
    np.testing.assert_allclose(tangent, d, rtol=1e-11, atol=1e-12)
    # d/dt expm(t a) = a expm(t a).
    _, tangent = ad.jvp(lambda t: ad.expm(t * a), (0.3,), (1.0,))
    np.testing.assert_allclose(tangent, a @ scipy.linalg.expm(0.3 * a), rtol=1e-12)
    np.testing.assert_allclose(ad.sqrtm(a), scipy.linalg.sqrtm(a), rtol=1e-12)


def test_rank_deficient_and_non_unique_decompositions_are_refused():
    with pytest.raises(ValueError, match="rank-deficient"):
        ad.lstsq(np.ones((3, 2)), np.ones(3))
    # pinv takes numpy's rank (issue 36): only an rcond deciding another rank is refused
    np.testing.assert_allclose(ad.pinv(np.ones((3, 2))), np.linalg.pinv(np.ones((3, 2))))
    with pytest.raises(ValueError, match="another rank"):
        ad.pinv(np.diag([1.0, 1e-3]), rcond=1e-2)
    with pytest.raises(ValueError, match="full_matrices=False"):
        ad.svd(np.ones((3, 2)))
    with pytest.raises(ValueError, match="upper=True"):
        ad.cholesky(np.eye(2), upper=True)
    with pytest.raises(ValueError, match="square matrices"):
        ad.inv(np.ones((2, 3)))


def test_matrix_power_of_zero_is_the_identity_with_zero_derivative():
    a = diagonally_dominant((2, 3, 3), RNG)
    np.testing.assert_array_equal(ad.matrix_power(a, 0), np.broadcast_to(np.eye(3), a.shape))
    assert_directional_derivatives_match(lambda z: ad.matrix_power(z, 5), a)


# --- einsum and numpy dispatch -------------------------------------------------------------

EINSUM_FORMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ii->i", [(3, 3)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ba", [(2, 3)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 2)]),
    ("i...,i->...", [(3, 2, 2), (3,)]),
    ("ij->", [(2, 3)]),
    ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 2)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUM_FORMS, ids=[s for s, _ in EINSUM_FORMS])
def test_einsum_matches_numpy_and_differences_for_every_subscript_form(subscripts, shapes):
    args = [RNG.uniform(-2, 2, s) for s in shapes]
    np.testing.assert_allclose(ad.einsum(subscripts, *args), np.einsum(subscripts, *args))
    for i in range(len(args)):

        def f(z, i=i):
            return ad.einsum(subscripts, *[z if j == i else a for j, a in enumerate(args)])

        assert_directional_derivatives_match(f, args[i], seed=i)


def test_einsum_errors_name_the_problem():
    with pytest.raises(ValueError, match="name 2 operand"):
        ad.einsum("ij,jk", np.ones((2, 2)))
    with pytest.raises(TypeError, match="subscripts as a string"):
        ad.einsum(np.ones(2))
    # numpy's interleaved operand-and-axes form is read (issue 36)
    np.testing.assert_array_equal(ad.einsum(np.arange(2.0), [0], []), 1.0)


@pytest.mark.parametrize(
    "numpy_call, args",
    [
        (lambda x, y: np.einsum("ij,jk->ik", x, y), [(2, 3), (3, 2)]),
        (lambda x, y: np.dot(x, y), [(2, 2, 3), (4, 3, 2)]),
        (lambda x, y: np.tensordot(x, y, axes=1), [(2, 3), (3, 2)]),
        (lambda x, y: np.kron(x, y), [(2, 2), (2, 1)]),
        (lambda x, y: np.cross(x, y), [(3,), (2, 3)]),
        (lambda x, y: np.linalg.solve(x + 4 * np.eye(3), y), [(3, 3), (3,)]),
        (lambda x: np.linalg.inv(x + 4 * np.eye(2)), [(2, 2)]),
        (lambda x: np.linalg.det(x + 4 * np.eye(2)), [(2, 2)]),
        (lambda x: np.linalg.norm(x, "nuc"), [(2, 3)]),
        (lambda x: np.linalg.matrix_power(x, 3), [(2, 2)]),
        (lambda x: np.linalg.svd(x, compute_uv=False), [(3, 2)]),
    ],
)
def test_numpy_functions_on_tensors_dispatch_and_keep_the_derivative(numpy_call, args):
    values = [RNG.uniform(-1, 1, s) for s in args]
    out = numpy_call(*[ad.Tensor(v, requires_grad=True) for v in values])
    assert isinstance(out, ad.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), numpy_call(*values), rtol=1e-12)
