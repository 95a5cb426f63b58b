"""Eigenvalues and eigenvectors of general (non-symmetric) matrices: ``eig`` and ``eigvals``.

One primitive, ``_eig_stacked``, holds numpy's eigenvalues (row 0) above its
eigenvectors (the columns below), complex. Its rules are the real-linear
derivative under the complex convention of the op set (JAX's and autograd's).
With ``M = V⁻¹ Ẋ V`` and ``F_ij = 1 / (λ_j − λ_i)`` off the diagonal:
``λ̇ = diag M`` and ``V̇_j = (V (F∘M))_j + c_j V_j``, where ``c_j`` keeps numpy's
normalisation, the unit norm (``Re c_j = −Re V_jᴴ P_j``) and LAPACK's phase, the
largest component real (``Im c_j`` cancels that component's imaginary change).
Distinct eigenvalues are needed; the largest component of each vector is decided
by the values.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sympy

from adcompare.ops.complex_parts import conj, imag, is_complex, real
from adcompare.ops.composite import composite
from adcompare.ops.contraction import einsum
from adcompare.ops.elementwise import add, divide, multiply, subtract, where
from adcompare.ops.joining import concatenate
from adcompare.ops.linalg import inv, matmul
from adcompare.ops.matrices import defmatrix, full_rank, prepare_square, swap_last
from adcompare.ops.matrix_functions import with_column_signs
from adcompare.ops.reductions import sum
from adcompare.ops.registry import WIRTINGER, array_of, raw, shape_of
from adcompare.ops.shape import broadcast_to, expand_dims, getitem


def _largest(vectors) -> np.ndarray:
    """Where each column has its largest component (the one LAPACK makes real): a mask.

    Computed with numpy's ufuncs and reductions, so that inside ``vmap`` it is each
    example's own.
    """
    magnitudes = np.abs(raw(vectors))
    return np.equal(magnitudes, np.max(magnitudes, axis=-2, keepdims=True))


def _eig_value(x, columns):
    values, vectors = np.linalg.eig(x)
    dtype = np.result_type(x.dtype, np.complex64)
    return np.concatenate([values[..., None, :], vectors], axis=-2).astype(dtype)


def _prepare_eig(x):
    """For the SymPy counterpart (2x2), decided by values: column ``j`` of numpy's result
    is the closed form's root ``|code| − 1`` (ascending), its vector the closed form's
    ``(x01, λ − x00)``, normalised, times ``sign(code)``."""
    prepare_square(x)
    a = np.asarray(raw(x))
    values, vectors = np.linalg.eig(a)
    roots = np.argsort(np.argsort(values.real, axis=-1), axis=-1) + 1
    if a.shape[-1] != 2:
        return {"columns": roots}
    closed = np.stack([np.broadcast_to(a[..., :1, 1], values.shape), values - a[..., :1, 0]], -2)
    signs = np.sign(np.sum(np.real(np.conj(closed) * vectors), axis=-2))
    return {"columns": np.where(signs < 0, -roots, roots)}


def _parts(out):
    n = shape_of(out)[-1]
    values = getitem(out, (Ellipsis, 0, slice(None)))
    vectors = getitem(out, (Ellipsis, slice(1, n + 1), slice(None)))
    return values, vectors


def _gaps(values):
    """``F``: ``1 / (λ_j − λ_i)`` off the diagonal, 0 on it."""
    n = shape_of(values)[-1]
    eye = np.eye(n, dtype=bool)
    differences = subtract(expand_dims(values, -2), expand_dims(values, -1))
    return where(eye, 0.0, divide(1.0, where(eye, 1.0, differences)))


def _at_largest(a, vectors):
    """Row ``k_j`` of each column ``j`` of ``a``: its entry at the vector's largest component."""
    return sum(where(_largest(vectors), a, 0.0), axis=-2)


def _eig_jvp(out, x, x_dot, columns):
    values, vectors = _parts(out)
    m = matmul(matmul(inv(vectors), x_dot), vectors)
    value_dot = einsum("...ii->...i", m)
    p = matmul(vectors, multiply(_gaps(values), m))
    overlap = einsum("...ij,...ij->...j", conj(broadcast_to(vectors, shape_of(p))), p)
    norm_part = multiply(real(overlap), -1.0)  # keeps the unit norm
    phase_part = divide(imag(_at_largest(p, vectors)), real(_at_largest(vectors, vectors)))
    scale = subtract(norm_part, multiply(phase_part, 1j))
    vectors_dot = add(p, multiply(vectors, expand_dims(scale, -2)))
    return concatenate([expand_dims(value_dot, -2), vectors_dot], axis=-2)


def _eig_vjp(out, x, out_bar, columns):
    # The JVP's steps transposed for the pairing Re Σ u·w (no conjugate): the scale c's
    # cotangent splits into its real part (for the norm) and its imaginary (the phase).
    values, vectors = _parts(out)
    values_bar, vectors_bar = _parts(out_bar)
    n = shape_of(values)[-1]
    scale_bar = einsum("...ij,...ij->...j", vectors_bar, vectors)
    norm_bar, phase_bar = real(scale_bar), multiply(imag(scale_bar), -1.0)
    largest = _largest(vectors)  # True at (k_j, j)
    at_largest = divide(multiply(phase_bar, 1j), real(_at_largest(vectors, vectors)))
    p_bar = subtract(vectors_bar, multiply(expand_dims(norm_bar, -2), conj(vectors)))
    p_bar = add(p_bar, where(largest, expand_dims(at_largest, -2), 0.0))
    m_bar = multiply(_gaps(values), matmul(swap_last(vectors), p_bar))
    m_bar = add(m_bar, multiply(expand_dims(values_bar, -2), np.eye(n)))
    x_bar = matmul(matmul(swap_last(inv(vectors)), m_bar), swap_last(vectors))
    return x_bar if is_complex(x) else real(x_bar)


def _sym_eig(x, columns):
    def decomposition(a, codes):
        if a.shape != (2, 2):
            raise NotImplementedError("the SymPy counterpart of eig covers 2x2 matrices")
        m = sympy.Matrix(a)
        half_trace, radius = (
            (m[0, 0] + m[1, 1]) / 2,
            sympy.sqrt(((m[0, 0] - m[1, 1]) / 2) ** 2 + m[0, 1] * m[1, 0]),
        )
        roots = [half_trace - radius, half_trace + radius]
        out = np.empty((3, 2), dtype=object)
        for j, code in enumerate(np.asarray(codes).ravel()):
            value = roots[abs(int(code)) - 1]
            u = (m[0, 1], value - m[0, 0])
            length = sympy.sqrt(u[0] ** 2 + u[1] ** 2)
            sign = 1 if code > 0 else -1
            out[:, j] = [value, sign * u[0] / length, sign * u[1] / length]
        return out

    return with_column_signs(decomposition, x, columns)


eig_stacked = defmatrix(
    "_eig_stacked",
    _eig_value,
    numpy=(),
    complex=WIRTINGER,
    domain=full_rank,
    prepare=_prepare_eig,
    sym=_sym_eig,
    # one 2×2 case: SymPy's second derivatives of eigenvectors take seconds a case
    # (the batched case costs twice that, for a batch loop numpy's own eig runs)
    cases=[(((2, 2),), {})],
    jvp=_eig_jvp,
    vjp=_eig_vjp,
    doc="numpy's eigenvalues (row 0) above its eigenvectors of general square matrices, "
    "batched, complex: the vectors with numpy's norm and phase (largest component real). "
    "Distinct eigenvalues are needed.",
)


class EigResult(NamedTuple):
    """``eig``'s result, named as numpy's."""

    eigenvalues: object
    eigenvectors: object


@composite(numpy=("linalg.eig",))
def eig(x):
    """The eigenvalues and unit eigenvectors (columns) of general square matrices, as
    ``np.linalg.eig``, always complex (numpy's are real where every eigenvalue is).

    The vectors are numpy's, normalised as LAPACK does (unit norm, the largest
    component real), and differentiated with that normalisation kept; the
    eigenvalues must be distinct.

    >>> print(eig([[0.0, -1.0], [1.0, 0.0]]).eigenvalues)
    [0.+1.j 0.-1.j]
    """
    values, vectors = _parts(eig_stacked(array_of(x)))
    return EigResult(values, vectors)


@composite(numpy=("linalg.eigvals",))
def eigvals(x):
    """The eigenvalues of general square matrices, as ``np.linalg.eigvals``, complex.

    >>> print(eigvals([[2.0, 1.0], [0.0, 3.0]]).real)
    [2. 3.]
    """
    return eig(x).eigenvalues
