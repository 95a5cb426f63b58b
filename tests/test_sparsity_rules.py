"""The sparsity rules of the linear algebra, contraction and Fourier ops, against the
non-zeros of the Jacobian and Hessian computed by AD at random inputs.

A rule must cover every non-zero (sound), and where it claims exactness, hold nothing
more. The shapes here go past the registry's cases: batches that broadcast, several
columns, larger matrices, cropping and padding, and a real input to ``irfftn`` (whose
cosine coefficients are sometimes 0).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops.matrices import diagonally_dominant, full_rank, symmetric_positive_definite
from adcompare.sparsity import DenseFallbackWarning, hessian_pattern, jacobian_pattern


def normal(shape, rng):
    return rng.standard_normal(shape)


#: name: (function of its arguments, argument makers with shapes, Hessian rule exact).
CASES = {
    "matmul batched": (ad.matmul, [(normal, (2, 3, 4)), (normal, (4, 5))], True),
    "inv batch": (ad.inv, [(diagonally_dominant, (3, 4, 4))], True),
    "det 4x4": (ad.det, [(diagonally_dominant, (4, 4))], True),
    "logabsdet batch": (ad.logabsdet, [(diagonally_dominant, (2, 3, 3))], True),
    "solve columns": (ad.solve, [(diagonally_dominant, (2, 3, 3)), (normal, (3, 2))], True),
    "solve broadcast b": (ad.solve, [(diagonally_dominant, (3, 3)), (normal, (2, 3, 1))], True),
    "solve vector": (ad.solve, [(diagonally_dominant, (2, 4, 4)), (normal, (4,))], True),
    "cholesky 5x5": (ad.cholesky, [(symmetric_positive_definite, (5, 5))], False),
    "cholesky batch": (ad.cholesky, [(symmetric_positive_definite, (2, 4, 4))], False),
    "eigvalsh upper": (
        lambda x: ad.eigvalsh(x, "U"),
        [(symmetric_positive_definite, (2, 4, 4))],
        True,
    ),
    "eigh_vectors": (ad.eigh_vectors, [(symmetric_positive_definite, (3, 3))], True),
    "svdvals wide": (ad.svdvals, [(full_rank, (2, 3, 5))], True),
    "sqrtm": (ad.sqrtm, [(diagonally_dominant, (3, 3))], True),
    "einsum matmul": (
        lambda x, y: ad.einsum("bij,bjk->bik", x, y),
        [(normal, (2, 3, 2)), (normal, (2, 2, 4))],
        True,
    ),
    "einsum diagonal": (lambda x: ad.einsum("ii->i", x), [(normal, (4, 4))], True),
    "einsum three": (
        lambda x, y, z: ad.einsum("ij,j,i->", x, y, z),
        [(normal, (3, 4)), (normal, (4,)), (normal, (3,))],
        True,
    ),
    "einsum broadcast": (
        lambda x, y: ad.einsum("...j,kj->...k", x, y),
        [(normal, (2, 1, 3)), (normal, (4, 3))],
        True,
    ),
    "outer": (lambda x, y: ad.einsum("i,j->ij", x, y), [(normal, (3,)), (normal, (4,))], True),
    "tensordot": (lambda x, y: ad.tensordot(x, y, 1), [(normal, (2, 3)), (normal, (3, 2))], True),
    "kron": (ad.kron, [(normal, (2, 2)), (normal, (1, 2))], True),
    "fft2 padded": (lambda x: ad.fft2(x, s=(4, 6)), [(normal, (3, 4))], True),
    "fft cropped": (lambda x: ad.fft(x, n=4), [(normal, (2, 6))], True),
    "ifft axis 0": (lambda x: ad.ifft(x, axis=0), [(normal, (3, 5))], True),
    "rfftn": (lambda x: ad.rfftn(x, axes=(1, 2)), [(normal, (2, 3, 4))], True),
    "irfft of real": (lambda x: ad.irfft(x, n=4), [(normal, (3,))], True),
    "irfft2 of real": (lambda x: ad.irfft2(x, s=(4, 4)), [(normal, (4, 3))], True),
}


def packed(fn, shapes):
    """``fn`` as a function of one flat vector holding all its arguments."""
    starts = np.cumsum([0, *[math.prod(s) for s in shapes]])

    def f(x):
        return fn(*[ad.reshape(x[a:b], s) for a, b, s in zip(starts, starts[1:], shapes)])

    return f


def drawn(name: str, seed: int):
    fn, makers, hessian_exact = CASES[name]
    rng = np.random.default_rng(seed)
    x = np.concatenate([np.ravel(make(shape, rng)) for make, shape in makers])
    return packed(fn, [shape for _, shape in makers]), x, hessian_exact


def nonzero(dense: np.ndarray) -> np.ndarray:
    """Entries above rounding level: an algorithm may leave 1e-20 where the value is 0."""
    return np.abs(dense) > 1e-10 * max(1.0, float(np.abs(dense).max(initial=0.0)))


@pytest.mark.parametrize("name", CASES)
def test_jacobian_rule_is_the_jacobians_nonzeros(name):
    f, x, _ = drawn(name, seed=5)
    dense = np.asarray(ad.jacfwd(f)(x)).reshape(-1, x.size)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFallbackWarning)
        found = jacobian_pattern(f, x).toarray()
    np.testing.assert_array_equal(found, nonzero(dense), err_msg=name)


@pytest.mark.parametrize("name", CASES)
def test_hessian_rule_covers_the_hessians_nonzeros(name):
    f, x, exact = drawn(name, seed=6)
    weights = np.random.default_rng(7).uniform(0.5, 1.5, np.shape(f(x)))

    def weighted(x):
        value = ad.sum(f(x) * weights)
        return ad.real(value) if np.iscomplexobj(ad.ops.registry.raw(f(x))) else value

    dense = nonzero(np.asarray(ad.hessian(weighted)(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFallbackWarning)
        found = hessian_pattern(weighted, x).toarray()
    assert not (dense & ~found).any(), f"{name}: the rule misses a second derivative"
    if exact:
        np.testing.assert_array_equal(found, dense, err_msg=name)


def test_each_determinant_pairs_only_entries_in_other_rows_and_columns():
    """Per output, not summed: det is linear in each row and each column."""
    x = diagonally_dominant((3, 3), np.random.default_rng(1)).ravel()
    f = packed(ad.det, [(3, 3)])
    dense = nonzero(np.asarray(ad.hessian(f)(x)))
    found = hessian_pattern(f, x).toarray()
    np.testing.assert_array_equal(found, dense)
    row, column = np.divmod(np.arange(9), 3)
    assert not found[row[:, None] == row[None, :]].any()
    assert not found[column[:, None] == column[None, :]].any()
    assert found.sum() == 9 * 4  # each entry meets the 2 x 2 = 4 entries off its row and column


def test_a_cholesky_entry_reads_only_the_rows_and_columns_it_needs():
    """L[3, 1] = (x[3, 1] - L[3, 0] L[1, 0]) / L[1, 1] reads x[0, 0], x[1, 0], x[1, 1],
    x[3, 0] and x[3, 1], and nothing of row 2 or of the upper triangle."""
    x = symmetric_positive_definite((4, 4), np.random.default_rng(2))
    found = jacobian_pattern(ad.cholesky, x).toarray().reshape(4, 4, 4, 4)
    reads = np.zeros((4, 4), bool)
    reads[[0, 1, 1, 3, 3], [0, 0, 1, 0, 1]] = True
    np.testing.assert_array_equal(found[3, 1], reads)
    assert not found[0, 1].any(), "the upper triangle of L is 0"


def test_irfft_of_a_real_signal_skips_the_zero_cosines():
    """n = 4: y_t = (x_0 + 2 x_1 cos(πt/2) + x_2 cos(πt)) / 4, so y_1 and y_3 do not read
    x_1; a complex x_1 reaches them through its imaginary part."""
    real = jacobian_pattern(lambda x: ad.irfft(x, n=4), np.ones(3)).toarray()
    np.testing.assert_array_equal(real[:, 1], [True, False, True, False])
    complex_input = lambda x: ad.irfft(x * (1.0 + 0.5j), n=4)
    assert jacobian_pattern(complex_input, np.ones(3)).toarray().all()


def test_a_round_trip_is_dense_because_patterns_do_not_see_cancellation():
    """irfft(rfft(x)) is x, but each transform mixes everything along its axis: the
    pattern of a composition is structural, a superset where values cancel."""
    x = np.random.default_rng(4).standard_normal(6)
    round_trip = lambda x: ad.irfft(ad.rfft(x), n=6)
    np.testing.assert_allclose(np.asarray(ad.jacfwd(round_trip)(x)), np.eye(6), atol=1e-12)
    assert jacobian_pattern(round_trip, x).toarray().all()


def test_jacobian_patterns_of_whole_matrix_ops_list_no_second_order_pairs():
    """A 30 x 30 inverse has 810,000 links and would have 365 million pairs: they are
    listed only when a Hessian pattern asks for them."""
    x = diagonally_dominant((30, 30), np.random.default_rng(3))
    assert jacobian_pattern(ad.inv, x).nnz == 900 * 900
