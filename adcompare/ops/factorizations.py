"""Factorisations whose values are numpy's own (the SVD-based pseudo-inverse, the
Householder QR, the SVD's vectors), with rules that never form the Gram matrix ``xᵀx``:
their errors grow with the condition number, not with its square.

The sign of a QR column or a singular vector is numpy's; the SymPy counterparts
(Gram-Schmidt, the closed-form eigenvectors of 2x2 Gram matrices) take numpy's signs
at the point as a static parameter that ``prepare`` reads from the values.

>>> print(pinv_full_rank([[1.0], [1.0]]))
[[0.5 0.5]]
>>> print(qr_stacked([[0.0], [2.0]]).ravel(), svd_stacked([[0.0], [-2.0]]).ravel())
[ 0. -1. -2.] [ 0. -1.  1.]
"""

from __future__ import annotations

import numpy as np
import sympy

from adcompare.ops.complex_parts import conj, is_complex
from adcompare.ops.elementwise import add, divide, multiply, subtract
from adcompare.ops.joining import concatenate
from adcompare.ops.linalg import inv, matmul
from adcompare.ops.matrices import (
    adjoint,
    conjugated,
    defmatrix,
    full_rank,
    per_matrix_links,
    swap_last,
    sympy_batches,
    sympy_matrix,
    to_object_array,
)
from adcompare.ops.matrix_functions import (
    prepare_matrices,
    refuse_phase_dependence,
    svdvals,
    sym_eigenvalues_2x2,
    sym_eigenvector_columns,
    with_column_signs,
)
from adcompare.ops.registry import WIRTINGER, ndim_of, raw, shape_of
from adcompare.ops.shape import expand_dims, getitem

# --- the pseudo-inverse -------------------------------------------------------------------


def _pinv_jvp(out, x, x_dot):
    # Ṗ = -P Ẋ P + P Pᴴ Ẋᴴ (I - X P) + (I - P X) Ẋᴴ Pᴴ P (Golub and Pereyra): no Gram
    # matrix, so the condition number enters once, as in the value.
    m, n = shape_of(x)[-2:]
    x_dot_h = adjoint(x_dot)
    return add(
        subtract(
            matmul(matmul(out, matmul(adjoint(out), x_dot_h)), _residual(np.eye(m), x, out)),
            matmul(matmul(out, x_dot), out),
        ),
        matmul(_residual(np.eye(n), out, x), matmul(x_dot_h, matmul(adjoint(out), out))),
    )


def _residual(eye, a, b):
    return subtract(eye, matmul(a, b))


def _pinv_vjp(out, x, out_bar):
    # The transpose of the JVP: the Ẋ term gives -Pᵀ Ḡ Pᵀ, the Ẋᴴ terms the conjugate of
    # (I - X P) Ḡᵀ P Pᴴ + Pᴴ P Ḡᵀ (I - P X).
    m, n = shape_of(x)[-2:]
    flipped = swap_last(out_bar)
    conjugated = add(
        matmul(matmul(_residual(np.eye(m), x, out), flipped), matmul(out, adjoint(out))),
        matmul(matmul(adjoint(out), out), matmul(flipped, _residual(np.eye(n), out, x))),
    )
    if is_complex(conjugated):
        conjugated = conj(conjugated)
    return subtract(conjugated, matmul(matmul(swap_last(out), out_bar), swap_last(out)))


def _sym_pinv(x):
    def inverse(a):
        m = sympy_matrix(a)
        if m.rows >= m.cols:
            return to_object_array((m.T * m).inv() * m.T)
        return to_object_array(m.T * (m * m.T).inv())

    return sympy_batches(inverse, x)


pinv_full_rank = defmatrix(
    "_pinv",
    np.linalg.pinv,
    numpy=(),
    complex=WIRTINGER,
    domain=full_rank,
    prepare=prepare_matrices,
    cases=[(((2, 1),), {}), (((1, 2),), {}), (((2, 3, 1),), {})],
    sym=_sym_pinv,
    jvp=_pinv_jvp,
    vjp=_pinv_vjp,
    doc="numpy's pseudo-inverse (from the SVD), batched, for "
    "``pinv`` and ``lstsq``: its rules hold where the rank is constant.",
)


# --- QR ---------------------------------------------------------------------------------


#: What the QR and SVD records share: tall matrices of full rank, no numpy name.
_TALL_FACTORS = {"numpy": (), "domain": full_rank}


def _tall_with_signs(x, public: str, signs_of) -> dict:
    """Refuse a wide matrix (the public function ``public`` handles it), and read the
    signs ``signs_of(x)`` of numpy's factors at the point (decided by values), which the
    SymPy counterpart takes."""
    m, n = shape_of(x)[-2:] if ndim_of(x) >= 2 else (0, 1)
    if ndim_of(x) < 2 or m < n:
        raise ValueError(
            f"this factorisation takes matrices with at least as many rows as columns, got "
            f"shape {shape_of(x)}; call adcompare.{public}, which handles wide matrices"
        )
    return {"signs": np.where(np.real(signs_of(np.asarray(raw(x)))) < 0, -1.0, 1.0)}


def _prepare_qr(x):
    # The signs of numpy's R diagonal (Gram-Schmidt's is positive).
    return _tall_with_signs(
        x, "qr", lambda a: np.diagonal(np.linalg.qr(a, mode="r"), axis1=-2, axis2=-1)
    )


def _qr_sparsity(out, x, *, local, signs):
    """Column j of Q and of R depends on the columns 0..j of x; R's strict lower
    triangle is 0. A square matrix's last column only turns R's last column (Q's last
    column is the unit vector the others leave), so it enters Q not at all and R
    linearly: it interacts with no entry of its own column."""
    m, n = shape_of(x)[-2:]
    row, column = np.divmod(np.arange((m + n) * n), n)
    reach = column - ((m == n) & (row < m) & (column == n - 1))
    depends = np.arange(n)[None, :] <= reach[:, None]
    depends &= ~((row >= m) & (row - m > column))[:, None]
    square = m == n
    return per_matrix_links(
        out,
        x,
        np.tile(depends, (1, m)),
        lambda p, q, n: ~(square & (p % n == n - 1) & (q % n == n - 1)),
    )


def _qr_stacked_value(x, signs):
    q, r = np.linalg.qr(x)
    return np.concatenate([q, r], axis=-2)


def _qr_parts(out, x):
    m = shape_of(x)[-2]
    return getitem(out, (Ellipsis, slice(0, m), slice(None))), getitem(
        out, (Ellipsis, slice(m, None), slice(None))
    )


def _qr_stacked_jvp(out, x, x_dot, signs):
    # With D = Ẋ R⁻¹, C = Qᵀ D and Ω = L - Lᵀ for C's strict lower triangle L:
    # Q̇ = Q (Ω - C) + D, Ṙ = (C - Ω) R. No Gram matrix: the condition number enters once.
    q, r = _qr_parts(out, x)
    n = shape_of(x)[-1]
    d = matmul(x_dot, inv(r))
    c = matmul(swap_last(q), d)
    lower = multiply(c, np.tril(np.ones((n, n)), -1))
    c_minus_omega = add(subtract(c, lower), swap_last(lower))
    q_dot = subtract(d, matmul(q, c_minus_omega))
    return concatenate([q_dot, matmul(c_minus_omega, r)], axis=-2)


def _qr_stacked_vjp(out, x, out_bar, signs):
    # The transpose: with M = R̄ Rᵀ - Qᵀ Q̄ and N = triu(M) + triu(M, 1)ᵀ,
    # Ā = (Q̄ + Q N) R⁻ᵀ.
    q, r = _qr_parts(out, x)
    q_bar, r_bar = _qr_parts(out_bar, x)
    n = shape_of(x)[-1]
    mixed = subtract(matmul(r_bar, swap_last(r)), matmul(swap_last(q), q_bar))
    folded = add(
        multiply(mixed, np.triu(np.ones((n, n)))),
        swap_last(multiply(mixed, np.triu(np.ones((n, n)), 1))),
    )
    return matmul(add(q_bar, matmul(q, folded)), swap_last(inv(r)))


def _sym_qr_stacked(x, signs):
    def stacked(a, sign):
        # Gram-Schmidt, with norms as square roots of sums of squares (SymPy's own
        # QRdecomposition takes absolute values, whose derivatives it leaves unevaluated).
        m, n = a.shape
        q, r = np.empty((m, n), dtype=object), np.zeros((n, n), dtype=object)
        for j in range(n):
            r[:j, j] = [sympy.expand(q[:, i].dot(a[:, j])) for i in range(j)]
            v = a[:, j] - (q[:, :j] @ r[:j, j] if j else 0)
            r[j, j] = sympy.sqrt(v.dot(v))
            q[:, j] = v / r[j, j]
        return np.concatenate([q * sign, r * sign.T], axis=0)

    return with_column_signs(stacked, x, signs)


qr_stacked = defmatrix(
    "_qr_stacked",
    _qr_stacked_value,
    **_TALL_FACTORS,
    complex="is computed for real matrices here",
    prepare=_prepare_qr,
    cases=[(((2, 2),), {}), (((2, 1),), {}), (((2, 2, 1),), {})],
    sparsity=_qr_sparsity,
    sym=_sym_qr_stacked,
    jvp=_qr_stacked_jvp,
    vjp=_qr_stacked_vjp,
    doc="numpy's reduced QR (Householder) of matrices with at least as many rows as "
    "columns, batched, as one array: Q's rows above R's, for ``qr``. Full rank is needed.",
)


# --- the SVD's vectors ------------------------------------------------------------------


def _prepare_svd(x):
    # The signs of the last components of numpy's right singular vectors.
    return _tall_with_signs(
        x, "svd", lambda a: np.linalg.svd(a, full_matrices=False)[2][..., :, -1]
    )


def _svd_sparsity(out, x, *, local, signs):
    """Dense within each matrix, but the V of one column is ±1: it depends on nothing."""
    m, n = shape_of(x)[-2:]
    depends = np.ones(((m + n) * n, m * n), bool)
    depends[m * n :] = n > 1
    return per_matrix_links(out, x, depends)


def _svd_stacked_value(x, signs):
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    return np.concatenate([u, np.conj(np.swapaxes(vh, -1, -2))], axis=-2)


def _svd_pieces(out, x):
    """U, V, the singular values as a row, and F with Fᵢⱼ = 1 / (sⱼ² - sᵢ²) off the
    diagonal (0 on it)."""
    u, v = _qr_parts(out, x)
    values = expand_dims(svdvals(x), -2)
    n = shape_of(x)[-1]
    squares = multiply(values, values)
    gaps = add(subtract(squares, swap_last(squares)), np.eye(n))
    return u, v, values, divide(1.0 - np.eye(n), gaps)


def _svd_stacked_jvp(out, x, x_dot, signs):
    # With P = Uᴴ Ẋ V and S = diag(s): U̇ = U (F ∘ (P S + S Pᴴ) + i Im diag(P) S⁻¹)
    # + (I - U Uᴴ) Ẋ V S⁻¹, V̇ = V (F ∘ (S P + Pᴴ S)). A complex pair of singular vectors
    # shares an arbitrary phase; this V̇ keeps V's (Im vᵢᴴ v̇ᵢ = 0), as JAX does, and U's
    # diagonal term keeps x = U S Vᴴ.
    u, v, values, gaps = _svd_pieces(out, x)
    rotated = matmul(matmul(adjoint(u), x_dot), v)
    scaled = multiply(rotated, values)
    u_turn = _with_phase_term(multiply(gaps, add(scaled, adjoint(scaled))), rotated, values)
    u_dot = add(matmul(u, u_turn), divide(_project_out(u, matmul(x_dot, v)), values))
    weighted = multiply(swap_last(values), rotated)
    v_dot = matmul(v, multiply(gaps, add(weighted, adjoint(weighted))))
    return concatenate([u_dot, v_dot], axis=-2)


def _with_phase_term(turn, product, values):
    """``turn + i Im diag(product) S⁻¹`` for complex ``product``; ``turn`` for real."""
    if not is_complex(product):
        return turn
    n = shape_of(product)[-1]
    imaginary = multiply(subtract(product, adjoint(product)), 0.5 * np.eye(n))
    return add(turn, divide(imaginary, values))


def _project_out(u, a):
    """``(I - U Uᴴ) a``: the part of ``a`` outside U's columns."""
    return subtract(a, matmul(u, matmul(adjoint(u), a)))


def _svd_stacked_vjp(out, x, out_bar, signs):
    # The transpose: with G = Uᵀ Ū, J = F ∘ G and K = F ∘ Vᵀ V̄, Q = (J + Jᴴ) S + S (K + Kᴴ)
    # + i Im diag(G) S⁻¹ and x̄ = conj(U) Q Vᵀ + (I - conj(U) Uᵀ) Ū S⁻¹ Vᵀ.
    u, v, values, gaps = _svd_pieces(out, x)
    u_bar, v_bar = _qr_parts(out_bar, x)
    refuse_phase_dependence("svd", ((u, u_bar), (v, v_bar)))
    u_product = matmul(swap_last(u), u_bar)
    j = multiply(gaps, u_product)
    k = multiply(gaps, matmul(swap_last(v), v_bar))
    inner = add(
        multiply(add(j, adjoint(j)), values), multiply(swap_last(values), add(k, adjoint(k)))
    )
    inner = _with_phase_term(inner, u_product, values)
    u_conj = conjugated(u)
    outer = add(matmul(u_conj, inner), divide(_project_out(u_conj, u_bar), values))
    return matmul(outer, swap_last(v))


def _sym_svd_stacked(x, signs):
    def stacked(a, sign):
        m = sympy_matrix(a)
        gram = m.T * m
        if gram.rows == 1:
            v = np.array([[sign[0, 0]]], dtype=object)
        elif gram.rows == 2:
            # The eigenvectors of the Gram matrix, descending, with numpy's signs.
            v = sym_eigenvector_columns(gram)[:, ::-1] * sign
        else:
            raise NotImplementedError(
                "the SymPy counterpart of svd_stacked covers matrices with 1 or 2 columns"
            )
        ascending = [gram[0, 0]] if gram.rows == 1 else sym_eigenvalues_2x2(gram)
        values = [sympy.sqrt(w) for w in reversed(ascending)]
        u = np.array((m * sympy.Matrix(v.tolist())).tolist(), dtype=object) / np.array(values)
        return np.concatenate([u, v], axis=0)

    return with_column_signs(stacked, x, signs)


svd_stacked = defmatrix(
    "_svd_stacked",
    _svd_stacked_value,
    **_TALL_FACTORS,
    # Complex input is tested in tests/test_complex_linalg.py, against differences of
    # functions the vectors' phases leave unchanged.
    complex=WIRTINGER,
    dtypes=("float32", "float64"),
    prepare=_prepare_svd,
    # Two columns' second derivatives take SymPy about 30 s; the rotation terms (F) are
    # checked against differences through svd in tests/test_composite.py and test_linalg.py.
    cases=[(((2, 1),), {}), (((2, 3, 1),), {})],
    sparsity=_svd_sparsity,
    sym=_sym_svd_stacked,
    jvp=_svd_stacked_jvp,
    vjp=_svd_stacked_vjp,
    doc="numpy's reduced SVD vectors of matrices with at least as many rows as columns, "
    "batched, as one array: U's rows above V's (V, not Vᴴ), for ``svd``. Distinct, "
    "non-zero singular values are needed; complex vectors' derivatives hold for functions "
    "their phases leave unchanged.",
)
