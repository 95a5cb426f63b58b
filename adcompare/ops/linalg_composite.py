"""Linear algebra built from the linalg primitives, so it needs no rules:
slogdet, eigh, svd, pinv, lstsq, matrix_power, qr, and scipy's
solve_triangular and expm.

Eigenvectors and singular vectors have numpy's signs (decided by values:
the derivative is that of the vector whose sign stays fixed near the
point). svd, pinv, lstsq and qr take numpy's factorisations
(:mod:`~adcompare.ops.factorizations`), whose rules never form the Gram
matrix. pinv, lstsq and qr refuse a rank-deficient matrix rather than
differentiate it wrongly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from adcompare.ops.complex_parts import is_complex
from adcompare.ops.composite import composite
from adcompare.ops.elementwise import abs, add, multiply, subtract
from adcompare.ops.factorizations import pinv_full_rank, qr_stacked, svd_stacked
from adcompare.ops.joining import concatenate
from adcompare.ops.linalg import inv, logabsdet, matmul, solve
from adcompare.ops.matrices import adjoint, conjugated
from adcompare.ops.matrix_functions import (
    eigh_vectors,
    eigvalsh,
    svdvals,
)
from adcompare.ops.reductions import sum
from adcompare.ops.registry import ndim_of, raw, shape_of
from adcompare.ops.registry.decisions import DETERMINANT_SIGN
from adcompare.ops.shape import expand_dims, getitem, transpose


class SlogdetResult(NamedTuple):
    sign: np.ndarray
    logabsdet: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class QRResult(NamedTuple):
    Q: object
    R: object


class LstsqResult(NamedTuple):
    x: object
    residuals: object
    rank: int
    s: object


def _swap_last(a):
    n = ndim_of(a)
    return transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


@composite(numpy=("linalg.slogdet",), decided_by_values=(DETERMINANT_SIGN,))
def slogdet(x):
    """The sign (a constant) and ``log|det x|``, as ``np.linalg.slogdet``.

    >>> print(slogdet([[-2.0, 0.0], [0.0, 3.0]]).sign)
    -1.0
    """
    return SlogdetResult(np.linalg.slogdet(raw(x)).sign, logabsdet(x))


@composite(numpy=("linalg.eigh",))
def eigh(x, UPLO: str = "L"):  # noqa: N803 (numpy's name)
    """Eigenvalues (ascending) and eigenvectors of symmetric (or complex Hermitian)
    matrices, as ``np.linalg.eigh``, with numpy's signs. A complex eigenvector's phase is
    arbitrary: derivatives hold for functions that the phases leave unchanged (the
    reverse mode refuses others).

    >>> w, v = eigh([[2.0, 1.0], [1.0, 2.0]])
    >>> print(w, np.round(v * np.sqrt(2), 6))
    [1. 3.] [[-1.  1.]
     [ 1.  1.]]
    """
    return EighResult(eigvalsh(x, UPLO), eigh_vectors(x, UPLO))


@composite(numpy=("linalg.svd",))
def svd(x, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """The singular value decomposition ``x = U diag(S) Vh``, as ``np.linalg.svd``.

    With ``compute_uv=False``, the singular values (:func:`svdvals`). The
    vectors are the reduced ones (``full_matrices=False``; square matrices
    either way): numpy's, signs included, also for a rank-deficient matrix.
    Their derivatives need distinct, non-zero singular values; complex vectors' derivatives
    hold for functions that their phases leave unchanged (the reverse mode refuses others).

    >>> u, s, vh = svd([[3.0, 0.0], [0.0, -4.0]])
    >>> print(s, np.allclose((u * s) @ vh, [[3.0, 0.0], [0.0, -4.0]]))
    [4. 3.] True
    """
    if not compute_uv:
        return svdvals(x)
    m, n = shape_of(x)[-2:]
    if full_matrices and m != n:
        raise ValueError(
            f"svd: full_matrices=True on a {m}x{n} matrix adds vectors that are not "
            "unique, so not differentiable; pass full_matrices=False"
        )
    values = svdvals(x)
    if m >= n:
        stacked = svd_stacked(x)
        left, right = _rows(stacked, 0, m), _rows(stacked, m, m + n)
        return SVDResult(left, values, adjoint(right))
    # A wide matrix is the transpose of a tall one: xᵀ = U' S V'ᴴ gives U = conj(V') and
    # V = conj(U'). numpy's signs (phases) for x and xᵀ may differ: each vector takes
    # numpy's for x, a constant.
    stacked = svd_stacked(_swap_last(x))
    left, right = conjugated(_rows(stacked, n, n + m)), conjugated(_rows(stacked, 0, n))
    overlap = np.sum(np.conj(raw(left)) * np.linalg.svd(raw(x), full_matrices=False)[0], -2)
    size = np.abs(overlap)
    phases = np.where(size == 0, 1.0, overlap / np.where(size == 0, 1.0, size))[..., None, :]
    return SVDResult(multiply(left, phases), values, adjoint(multiply(right, phases)))


def _rows(a, start: int, stop: int):
    return getitem(a, (Ellipsis, slice(start, stop), slice(None)))


def _refuse_rank_deficient(x, name: str, rcond=None) -> None:
    # Inside vmap, plain: one example that is rank-deficient is refused for the batch.
    values = np.linalg.svd(np.asarray(raw(x)), compute_uv=False)
    m, n = shape_of(x)[-2:]
    cutoff = (max(m, n) * np.finfo(float).eps if rcond is None else rcond) * values[..., :1]
    if np.any(values[..., -1:] <= cutoff):
        raise ValueError(
            f"{name}: the matrix is rank-deficient, where its result jumps and has no "
            "derivative; remove dependent columns or add a small multiple of the identity"
        )


#: numpy's default ``rcond`` for ``pinv``: singular values at most this times the largest
#: count as zero.
PINV_RCOND = 1e-15


def _ranks(x, rcond) -> np.ndarray:
    values = np.linalg.svd(np.asarray(raw(x)), compute_uv=False)
    return np.sum(values > rcond * values[..., :1], axis=-1)


@composite(numpy=("linalg.pinv",))
def pinv(x, rcond=None, hermitian: bool = False):
    """The Moore-Penrose pseudo-inverse, as ``np.linalg.pinv``, of matrices of any rank.

    The rank is numpy's: singular values at most ``rcond`` times the largest
    (``1e-15`` by default, as numpy's) count as zero. The derivative is that of
    the pseudo-inverse at that rank (Golub and Pereyra's formula), as autograd
    and JAX take it: exact along any change that keeps the rank, which is every
    change where the rank is constant nearby (``a @ b.T`` with thin ``a``, ``b``).
    Where a change alters the rank the pseudo-inverse jumps and has no
    derivative. An ``rcond`` that decides another rank than numpy's default is
    refused.

    >>> print(pinv([[1.0], [1.0]]))
    [[0.5 0.5]]
    >>> print(pinv([[1.0, 1.0], [1.0, 1.0]]))
    [[0.25 0.25]
     [0.25 0.25]]
    """
    if rcond is not None and np.any(_ranks(x, rcond) != _ranks(x, PINV_RCOND)):
        raise ValueError(
            f"pinv: rcond={rcond!r} decides another rank than numpy's default cutoff "
            f"({PINV_RCOND}), which adcompare's pseudo-inverse uses; leave rcond out"
        )
    return pinv_full_rank(x)


@composite(numpy=("linalg.lstsq",))
def lstsq(a, b, rcond=None):
    """The least-squares solution of ``a @ x = b`` for a full-rank 2-D ``a``, as
    ``np.linalg.lstsq``: ``(x, residuals, rank, s)``.

    >>> print(lstsq([[1.0], [1.0]], [1.0, 3.0]).x)
    [2.]
    """
    if ndim_of(a) != 2 or ndim_of(b) not in (1, 2):
        raise ValueError(
            f"lstsq: a must be 2-D and b 1-D or 2-D, got shapes {shape_of(a)} and "
            f"{shape_of(b)}; use solve or pinv for batches"
        )
    _refuse_rank_deficient(a, "lstsq", rcond)
    m, n = shape_of(a)
    x = matmul(pinv(a), b)
    if m > n:
        residual = subtract(b, matmul(a, x))
        if is_complex(residual):
            residual = abs(residual)
        residuals = sum(multiply(residual, residual), axis=0)
        if ndim_of(b) == 1:
            residuals = expand_dims(residuals, 0)
    else:
        residuals = np.empty((0,))
    return LstsqResult(x, residuals, min(m, n), svdvals(a))


@composite(numpy=("linalg.matrix_power",))
def matrix_power(a, n: int):
    """``a`` multiplied by itself ``n`` times (inverted for negative ``n``), as
    ``np.linalg.matrix_power``, by repeated squaring.

    >>> print(matrix_power([[1.0, 1.0], [0.0, 1.0]], 3))
    [[1. 3.]
     [0. 1.]]
    """
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}")
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"matrix_power: expected square matrices, got shape {shape}")
    if n == 0:
        return np.broadcast_to(np.eye(shape[-1]), shape).copy()
    base = inv(a) if n < 0 else a
    n = abs(int(n))
    result = None
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@composite(numpy=("linalg.qr",))
def qr(a, mode: str = "reduced"):
    """The QR decomposition of a full-rank matrix, as ``np.linalg.qr`` (modes
    ``'reduced'`` and ``'r'``): numpy's Householder factors, signs included (for
    wide matrices from the leading square block), whose rules never form
    ``aᵀa``.

    >>> q, r = qr([[3.0, 1.0], [4.0, 2.0]])
    >>> print(np.allclose(q @ r, [[3.0, 1.0], [4.0, 2.0]]), np.allclose(q.T @ q, np.eye(2)))
    True True
    """
    if mode not in ("reduced", "r"):
        raise ValueError(
            f"qr: mode {mode!r} is not supported; use 'reduced' or 'r' (complete Q's extra "
            "columns are not unique, so not differentiable)"
        )
    m, n = shape_of(a)[-2:]
    _refuse_rank_deficient(a, "qr")
    if m < n:
        square = getitem(a, (Ellipsis, slice(None), slice(0, m)))
        q, r = qr(square)
        rest = matmul(_swap_last(q), getitem(a, (Ellipsis, slice(None), slice(m, n))))
        r = concatenate([r, rest], axis=-1)
        return r if mode == "r" else QRResult(q, r)
    stacked = qr_stacked(a)
    r = getitem(stacked, (Ellipsis, slice(m, None), slice(None)))
    if mode == "r":
        return r
    return QRResult(getitem(stacked, (Ellipsis, slice(0, m), slice(None))), r)


@composite(numpy=())
def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False):
    """The solution of ``a x = b`` reading one triangle of ``a``, as
    ``scipy.linalg.solve_triangular`` (scipy's function does not dispatch to
    boxes: call this one).

    >>> print(solve_triangular([[2.0, 5.0], [0.0, 4.0]], [9.0, 4.0]))
    [2. 1.]
    """
    n = shape_of(a)[-1]
    strict = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    triangle = (
        add(multiply(a, strict), np.eye(n)) if unit_diagonal else (multiply(a, strict + np.eye(n)))
    )
    if trans in (1, "T"):
        triangle = _swap_last(triangle)
    elif trans in (2, "C"):
        triangle = adjoint(triangle)
    elif trans not in (0, "N"):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return solve(triangle, b)


_TAYLOR_DEGREE = 18


@composite(numpy=())
def expm(a):
    """The matrix exponential, batched, as ``scipy.linalg.expm`` (call this one:
    scipy's does not dispatch to boxes).

    Scaling and squaring: the Taylor series of ``a / 2**s`` with ``‖a / 2**s‖₁
    ≤ 1/2`` to degree 18 (a remainder below 1e-22), squared ``s`` times.

    >>> print(np.round(expm([[0.0, 1.0], [0.0, 0.0]]), 6))
    [[1. 1.]
     [0. 1.]]
    """
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"expm: expected square matrices, got shape {shape}")
    # The largest column sum of every matrix (inside vmap, of the whole batch: more
    # squarings than one example needs cost accuracy nothing). With inf or NaN in the
    # matrix there is nothing to scale: the arithmetic carries them to the result.
    size = float(np.max(np.sum(np.abs(np.asarray(raw(a))), axis=-2), initial=0.0))
    squarings = max(0, math.ceil(math.log2(size)) + 1) if 0 < size < np.inf else 0
    scaled = multiply(a, 0.5**squarings)
    eye = np.broadcast_to(np.eye(shape[-1]), shape)
    # Horner's scheme: I + A(I + A/2 (I + A/3 (...))).
    total = eye
    for k in range(_TAYLOR_DEGREE, 0, -1):
        total = add(eye, multiply(matmul(scaled, total), 1.0 / k))
    for _ in range(squarings):
        total = matmul(total, total)
    return total
