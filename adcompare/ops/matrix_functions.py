"""Matrix factorisations and functions: cholesky, eigvalsh and eigh's vectors, svdvals
and sqrtm, each batched over leading axes as numpy's are.

Each op's oracle in the tests is SymPy on small symbolic matrices (the
Cholesky factor, the closed-form eigenvalues and eigenvectors of symmetric
2x2 matrices, the principal root of a 2x2 matrix). Their rules are written
with batched ``matmul``, ``inv`` and ``solve``, so they differentiate again.
eigvalsh, eigh's vectors and svdvals also take complex (Hermitian) matrices, in the
Wirtinger convention; tests/test_complex_linalg.py checks them against differences.

Sparsity: each is dense within its matrix (block-diagonal across a batch),
reading only the triangle it reads (cholesky, eigvalsh, eigh_vectors); the
Cholesky factor's entry ``L[i, j]`` depends only on the leading ``j + 1``
columns of rows ``0..j`` and ``i``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import sympy

from adcompare.ops.complex_parts import is_complex, real
from adcompare.ops.elementwise import add, divide, multiply, subtract
from adcompare.ops.linalg import inv, matmul, solve
from adcompare.ops.matrices import (
    adjoint,
    conjugated,
    defmatrix,
    diagonally_dominant,
    full_rank,
    matrix_sparsity,
    per_matrix_links,
    prepare_square,
    swap_last,
    symmetric_part,
    symmetric_part_adjoint,
    symmetric_positive_definite,
    sympy_batches,
    sympy_matrix,
    sympy_symmetric,
    to_object_array,
    triangle,
)
from adcompare.ops.reductions import sum
from adcompare.ops.registry import WIRTINGER, ndim_of, raw, shape_of
from adcompare.ops.shape import expand_dims, getitem, reshape

# --- cholesky ---------------------------------------------------------------------------


def _prepare_cholesky(x, upper=False):
    prepare_square(x)
    if upper:
        raise ValueError(
            "cholesky: upper=True is not supported; take the transpose of the lower "
            "factor of the symmetric matrix instead"
        )
    return {}


def _lower_half_diagonal(n: int) -> np.ndarray:
    """The mask Φ: 1 below the diagonal, 1/2 on it, 0 above."""
    return np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)


def _cholesky_dependence(n: int) -> np.ndarray:
    """``depends[(i, j), (p, q)]``: whether ``L[i, j]`` depends on ``x[p, q]``.

    ``L[i, j] = (x[i, j] - Σ_{k<j} L[i, k] L[j, k]) / L[j, j]`` for ``i ≥ j``
    reads row ``i`` and the rows up to ``j``, each up to column ``j``, in the
    lower triangle; the upper triangle of ``L`` is 0 and depends on nothing.
    """
    i, j, p, q = np.indices((n, n, n, n))
    reads = (i >= j) & (q <= p) & (q <= j) & ((p <= j) | (p == i))
    return reads.reshape(n * n, n * n)


def _cholesky_sparsity(out, x, *, local):
    """See :func:`_cholesky_dependence`; every two entries read interact (a superset)."""
    return per_matrix_links(out, x, _cholesky_dependence(shape_of(x)[-1]))


def _cholesky_jvp(out, x, x_dot):
    # L̇ = L Φ(L⁻¹ Ṡ L⁻ᵀ), Ṡ the symmetric matrix read from x_dot's lower triangle.
    inverse = inv(out)
    inner = matmul(matmul(inverse, symmetric_part(x_dot, lower=True)), swap_last(inverse))
    return matmul(out, multiply(inner, _lower_half_diagonal(shape_of(out)[-1])))


def _cholesky_vjp(out, x, out_bar):
    # The adjoint of each step of the JVP, in reverse order.
    inverse = inv(out)
    inner = multiply(matmul(swap_last(out), out_bar), _lower_half_diagonal(shape_of(out)[-1]))
    return symmetric_part_adjoint(matmul(matmul(swap_last(inverse), inner), inverse), lower=True)


cholesky = defmatrix(
    "cholesky",
    np.linalg.cholesky,
    numpy=("linalg.cholesky",),
    complex="reads a symmetric matrix's real triangle; Hermitian input is not supported",
    domain=symmetric_positive_definite,
    saves=("out",),
    prepare=_prepare_cholesky,
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    sym=lambda x: sympy_batches(
        lambda a: to_object_array(sympy_symmetric(a, lower=True).cholesky(hermitian=False)), x
    ),
    sparsity=_cholesky_sparsity,
    jvp=_cholesky_jvp,
    vjp=_cholesky_vjp,
    doc="The lower Cholesky factor ``L`` (``L @ L.T = x``) of symmetric positive definite "
    "matrices, batched, as ``np.linalg.cholesky``: only the lower triangle is read.",
    example="cholesky([[4.0, 2.0], [2.0, 5.0]]) -> [[2. 0.]\n [1. 2.]]",
)


# --- eigvalsh and eigh's vectors ----------------------------------------------------------


def _prepare_uplo(x, UPLO="L"):  # noqa: N803 (numpy's name)
    prepare_square(x)
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return {"lower": UPLO == "L"}


def _uplo(lower: bool) -> str:
    return "L" if lower else "U"


def real_part(a):
    """The real part of ``a``; a real ``a`` itself, with no op applied.

    >>> print(real_part(np.array([1.0 + 2j])), real_part(np.array([1.0])))
    [1.] [1.]
    """
    return real(a) if is_complex(a) else a


def _eigvalsh_jvp(out, x, x_dot, lower):
    # ẇᵢ = Re vᵢᴴ Ṡ vᵢ (real in exact arithmetic for Hermitian Ṡ).
    vectors = eigh_vectors(x, _uplo(lower))
    spread = matmul(symmetric_part(x_dot, lower=lower), vectors)
    return real_part(sum(multiply(conjugated(vectors), spread), axis=-2))


def _eigvalsh_vjp(out, x, out_bar, lower):
    # S̄ = conj(V) diag(Re w̄) Vᵀ, then onto the triangle read (w is real: only the real
    # part of a cotangent reaching it from complex values counts).
    vectors = eigh_vectors(x, _uplo(lower))
    weighted = multiply(conjugated(vectors), expand_dims(real_part(out_bar), -2))
    return symmetric_part_adjoint(matmul(weighted, swap_last(vectors)), lower=lower)


def sym_eigenvalues_2x2(s: sympy.Matrix) -> list:
    """The eigenvalues of a symmetric 2x2 matrix, ascending, in closed form.

    >>> sym_eigenvalues_2x2(sympy.Matrix([[2, 1], [1, 2]]))
    [1, 3]
    """
    a, b, d = s[0, 0], s[1, 0], s[1, 1]
    mean, radius = (a + d) / 2, sympy.sqrt(((a - d) / 2) ** 2 + b**2)
    return [mean - radius, mean + radius]


def _sym_eigvalsh(x, lower):
    def values(a):
        if a.shape[-1] == 1:
            return [a[0, 0]]
        if a.shape[-1] != 2:
            raise NotImplementedError(
                "the SymPy counterpart of eigvalsh covers 1x1 and 2x2 matrices"
            )
        return sym_eigenvalues_2x2(sympy_symmetric(a, lower))

    return sympy_batches(values, x)


#: What eigvalsh and eigh_vectors share: one triangle of a symmetric (complex: Hermitian)
#: matrix is read. Complex input is tested in tests/test_complex_linalg.py, against
#: differences of functions the eigenvectors' phases leave unchanged.
_ONE_TRIANGLE = {
    "complex": WIRTINGER,
    "dtypes": ("float32", "float64"),
    "domain": symmetric_positive_definite,
    "prepare": _prepare_uplo,
    "cases": [(((2, 2),), {"UPLO": "L"}), (((2, 2, 2),), {"UPLO": "U"})],
    "sparsity": matrix_sparsity(read=triangle),
}

eigvalsh = defmatrix(
    "eigvalsh",
    lambda x, lower: np.linalg.eigvalsh(x, _uplo(lower)),
    numpy=("linalg.eigvalsh",),
    saves=("args",),
    **_ONE_TRIANGLE,
    sym=_sym_eigvalsh,
    jvp=_eigvalsh_jvp,
    vjp=_eigvalsh_vjp,
    doc="The eigenvalues, ascending, of symmetric matrices (one triangle read, ``UPLO``), "
    "batched, as ``np.linalg.eigvalsh``. Distinct eigenvalues are differentiable.",
    example="eigvalsh([[2.0, 1.0], [1.0, 2.0]]) -> [1. 3.]",
)


def _prepare_eigh_vectors(x, UPLO="L"):  # noqa: N803 (numpy's name)
    """The triangle read, and numpy's sign of each eigenvector relative to the gauge that
    makes the last component non-negative (the SymPy counterpart's): decided by values."""
    lower = _prepare_uplo(x, UPLO)["lower"]
    last = np.linalg.eigh(np.asarray(raw(x)), _uplo(lower)).eigenvectors[..., -1, :]
    return {"lower": lower, "signs": np.where(np.real(last) < 0, -1.0, 1.0)}


def _eigh_vectors_value(x, lower, signs):
    # numpy's own vectors, so that a function of them has numpy's value; the rules hold
    # for any sign that stays fixed near the point.
    return np.linalg.eigh(x, _uplo(lower)).eigenvectors


def _gap_factors(x, lower):
    """F with Fᵢⱼ = 1 / (wⱼ - wᵢ) off the diagonal and 0 on it, from the eigenvalues."""
    values = eigvalsh(x, _uplo(lower))
    n = shape_of(values)[-1]
    gaps = add(subtract(expand_dims(values, -2), expand_dims(values, -1)), np.eye(n))
    return divide(1.0 - np.eye(n), gaps)


def _eigh_vectors_jvp(out, x, x_dot, lower, signs):
    # V̇ = V (F ∘ Vᴴ Ṡ V): the vectors turn into each other, at rates set by the gaps. A
    # complex vector's phase is arbitrary; this V̇ keeps it (Im vᵢᴴ v̇ᵢ = 0), as JAX does.
    rotated = matmul(matmul(adjoint(out), symmetric_part(x_dot, lower=lower)), out)
    return matmul(out, multiply(_gap_factors(x, lower), rotated))


def _eigh_vectors_vjp(out, x, out_bar, lower, signs):
    # S̄ = conj(V) (F ∘ Vᵀ V̄) Vᵀ, then onto the triangle read.
    refuse_phase_dependence("eigh", ((out, out_bar),))
    inner = multiply(_gap_factors(x, lower), matmul(swap_last(out), out_bar))
    return symmetric_part_adjoint(
        matmul(matmul(conjugated(out), inner), swap_last(out)), lower=lower
    )


def refuse_phase_dependence(name: str, pairs) -> None:
    """Raise if a cotangent asks how a function changes with the phases of complex
    singular or eigenvectors, which are arbitrary: for ``(vectors, cotangent)`` pairs
    whose columns share one phase each, the change with the phases is the imaginary part
    of the summed ``diag(vectorsᵀ cotangent)``, zero for a function they leave unchanged.

    >>> v = np.array([[1.0 + 0j]])
    >>> refuse_phase_dependence("eigh", ((v, np.array([[2.0 + 0j]])),))
    >>> refuse_phase_dependence("eigh", ((v, np.array([[1j]])),))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: eigh: the function differentiated depends on the phases of complex vectors, ...
    """
    if not is_complex(pairs[0][0]):
        return
    change, scale = 0.0, 0.0
    for vectors, cotangent in pairs:
        vectors, cotangent = np.asarray(raw(vectors)), np.asarray(raw(cotangent))
        change = change + np.sum(vectors * cotangent, axis=-2).imag
        scale = scale + np.sqrt(np.sum(np.abs(cotangent) ** 2, axis=-2))
    if np.any(np.abs(change) > 1e-8 * scale):
        raise ValueError(
            f"{name}: the function differentiated depends on the phases of complex vectors, "
            "which are arbitrary, so it has no derivative; differentiate a function of "
            "them that their phases leave unchanged, such as abs(v) or v @ v.conj().T"
        )


def _sym_eigh_vectors(x, lower, signs):
    def vectors(a, sign):
        if a.shape[-1] != 2:
            raise NotImplementedError("the SymPy counterpart of eigh_vectors covers 2x2 matrices")
        return sym_eigenvector_columns(sympy_symmetric(a, lower)) * sign

    return with_column_signs(vectors, x, signs)


def sym_eigenvector_columns(s: sympy.Matrix) -> np.ndarray:
    """The unit eigenvectors of a symmetric 2x2 matrix as columns, ascending, each with a
    non-negative last component, in closed form.

    >>> print(sym_eigenvector_columns(sympy.Matrix([[2, 1], [1, 2]])))
    [[-sqrt(2)/2 sqrt(2)/2]
     [sqrt(2)/2 sqrt(2)/2]]
    """
    columns = []
    for value in sym_eigenvalues_2x2(s):
        # (λ - d, b) solves (S - λ) v = 0; scaled by b / |b| so the last component is >= 0.
        first, last = value - s[1, 1], s[1, 0]
        scale = last / sympy.sqrt(last**2 * (first**2 + last**2))
        columns.append([first * scale, last * scale])
    return np.array(columns, dtype=object).T


def with_column_signs(fn, x, signs):
    """``fn(matrix, sign)`` for each matrix of ``x``, with its signs (numpy's, one per
    column, decided by values) as a row.

    >>> print(with_column_signs(lambda a, sign: a * sign, np.ones((2, 2)), [1.0, -1.0]))
    [[1.0 -1.0]
     [1.0 -1.0]]
    """
    signs = np.asarray(signs, dtype=object)
    return sympy_batches(fn, x, signs.reshape(signs.shape[:-1] + (1, -1)))


eigh_vectors = defmatrix(
    "eigh_vectors",
    _eigh_vectors_value,
    numpy=(),
    **(
        _ONE_TRIANGLE
        | {
            "prepare": _prepare_eigh_vectors,
            "sparsity": matrix_sparsity(read=lambda n, lower, signs: triangle(n, lower)),
        }
    ),
    sym=_sym_eigh_vectors,
    jvp=_eigh_vectors_jvp,
    vjp=_eigh_vectors_vjp,
    doc="The eigenvectors (columns, in the order of ``eigvalsh``) of symmetric matrices, "
    "batched, numpy's, signs included: an eigenvector's sign is arbitrary, and the "
    "derivative is that of the vector whose sign stays as numpy chose it at the point. "
    "Distinct eigenvalues are needed.",
    example="eigh_vectors([[2.0, 0.0], [0.0, 1.0]]) -> [[0. 1.]\n [1. 0.]]",
)


# --- singular values ----------------------------------------------------------------------


def _gram_vectors(x):
    """For ``x`` with at least as many rows as columns: V (right singular vectors,
    descending order) and ``x @ V`` (the left ones scaled by the singular values)."""
    ascending = eigh_vectors(matmul(adjoint(x), x))
    vectors = getitem(ascending, (Ellipsis, slice(None, None, -1)))
    return vectors, matmul(x, vectors)


def _tall(x):
    return shape_of(x)[-2] >= shape_of(x)[-1]


def _svdvals_jvp(out, x, x_dot):
    # ṡᵢ = Re uᵢᴴ ẋ vᵢ, with uᵢ = x vᵢ / sᵢ.
    if not _tall(x):
        x, x_dot = swap_last(x), swap_last(x_dot)
    vectors, scaled = _gram_vectors(x)
    turned = sum(multiply(conjugated(scaled), matmul(x_dot, vectors)), axis=-2)
    return divide(real_part(turned), out)


def _svdvals_vjp(out, x, out_bar):
    tall = _tall(x)
    # x̄ = conj(U) diag(Re s̄) Vᵀ (s is real, as in eigvalsh's rule).
    vectors, scaled = _gram_vectors(x if tall else swap_last(x))
    weights = expand_dims(divide(real_part(out_bar), out), -2)
    x_bar = matmul(multiply(conjugated(scaled), weights), swap_last(vectors))
    return x_bar if tall else swap_last(x_bar)


def _sym_svdvals(x):
    def values(a):
        m = sympy_matrix(a)
        gram = m.T * m if m.rows >= m.cols else m * m.T
        if gram.rows == 1:
            return [sympy.sqrt(gram[0, 0])]
        if gram.rows != 2:
            raise NotImplementedError(
                "the SymPy counterpart of svdvals covers matrices with 1 or 2 columns or rows"
            )
        return [sympy.sqrt(v) for v in reversed(sym_eigenvalues_2x2(gram))]

    return sympy_batches(values, x)


def prepare_matrices(x):
    """Refuse what is not a batch of matrices; no static parameters.

    >>> prepare_matrices(np.zeros((2, 3)))
    {}
    """
    if ndim_of(x) < 2:
        raise ValueError(f"expected matrices in the last two axes, got shape {shape_of(x)}")
    return {}


svdvals = defmatrix(
    "svdvals",
    np.linalg.svdvals,
    numpy=("linalg.svdvals",),
    complex=WIRTINGER,
    dtypes=("float32", "float64"),
    domain=full_rank,
    saves=("args", "out"),
    prepare=prepare_matrices,
    cases=[(((2, 2),), {}), (((3, 2),), {}), (((2, 1, 2),), {})],
    sym=_sym_svdvals,
    jvp=_svdvals_jvp,
    vjp=_svdvals_vjp,
    doc="The singular values, descending, batched, as ``np.linalg.svdvals``. Distinct, "
    "non-zero singular values are differentiable.",
    example="svdvals([[3.0, 0.0], [0.0, -4.0]]) -> [4. 3.]",
)


# --- sqrtm ---------------------------------------------------------------------------------


def _sqrtm_value(x):
    x = np.asarray(x)
    roots = [scipy.linalg.sqrtm(x[index]) for index in np.ndindex(x.shape[:-2])]
    return np.stack(roots).reshape(x.shape) if roots else np.empty(x.shape)


def sylvester_operator(a, b):
    """K with K vec(D) = vec(a D + D b) (row-major vec), batched, for ``a`` of shape
    m × m, ``b`` n × n and D m × n: K[(i, j), (k, l)] = a[i, k] δ[j, l] + δ[i, k] b[l, j].

    >>> print(sylvester_operator(np.eye(1), 2.0 * np.eye(1)))
    [[3.]]
    """
    m, n = shape_of(a)[-1], shape_of(b)[-1]
    batch = np.broadcast_shapes(shape_of(a)[:-2], shape_of(b)[:-2])
    left = multiply(reshape(a, shape_of(a)[:-2] + (m, 1, m, 1)), np.eye(n).reshape(1, n, 1, n))
    right = multiply(
        np.eye(m).reshape(m, 1, m, 1), reshape(swap_last(b), shape_of(b)[:-2] + (1, n, 1, n))
    )
    return reshape(add(left, right), batch + (m * n, m * n))


def vec_solve(operator_matrix, value):
    """Solve ``operator_matrix @ vec(D) = vec(value)`` for the matrices D, batched."""
    shape = shape_of(value)
    columns = reshape(value, shape[:-2] + (shape[-2] * shape[-1], 1))
    return reshape(solve(operator_matrix, columns), shape)


sqrtm = defmatrix(
    "sqrtm",
    _sqrtm_value,
    numpy=(),
    complex="is computed for real matrices without negative real eigenvalues",
    domain=diagonally_dominant,
    saves=("out",),
    # The principal root of a 2x2 matrix: (x + s I) / t, s = sqrt(det x), t = sqrt(tr x + 2 s).
    sym=lambda x: sympy_batches(
        lambda a: to_object_array(
            (sympy_matrix(a) + sympy.sqrt(sympy_matrix(a).det()) * sympy.eye(2))
            / sympy.sqrt(sympy_matrix(a).trace() + 2 * sympy.sqrt(sympy_matrix(a).det()))
        ),
        x,
    ),
    # The root X satisfies X Ẋ + Ẋ X = ẋ: a Sylvester equation, solved as one linear system.
    jvp=lambda out, x, x_dot: vec_solve(sylvester_operator(out, out), x_dot),
    vjp=lambda out, x, out_bar: vec_solve(swap_last(sylvester_operator(out, out)), out_bar),
    doc="The principal square root of square matrices, batched, as ``scipy.linalg.sqrtm`` "
    "(scipy's function does not dispatch to boxes: call ``adcompare.sqrtm``).",
    example="sqrtm([[4.0, 0.0], [0.0, 9.0]]) -> [[2. 0.]\n [0. 3.]]",
)
