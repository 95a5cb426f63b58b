"""Linear algebra primitives: matmul (1-D, 2-D and batched, as ``np.matmul``),
inv, solve, det, logabsdet, cholesky, eigvalsh and eigh's vectors, svdvals.

matmul's rules follow numpy's promotion of 1-D operands: a 1-D left operand
is a row, a 1-D right operand a column, and the added axis is removed again.
The matrix functions act on the last two axes and are batched over the
leading ones, as numpy's are; a tangent's lane axis is one more leading axis,
so their rules are written with batched ``matmul`` and need no lane code.

Each op's oracle in the tests is SymPy on small symbolic matrices (its
``sym``: ``Matrix.inv``, ``det``, ``LUsolve``, ``cholesky``, the closed-form
eigenvalues and eigenvectors of symmetric 2x2 matrices). The test inputs come
from the makers below, which draw well-conditioned matrices.
"""

from __future__ import annotations

import operator

import numpy as np
import scipy.linalg
import sympy

from adcompare.ops.elementwise import add, divide, multiply, negative, subtract
from adcompare.ops.reductions import sum
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    Hints,
    defop,
    ndim_of,
    pad_lanes,
    shape_of,
    unbroadcast,
)
from adcompare.ops.shape import expand_dims, getitem, pad_batched, reshape, squeeze, transpose


def _prepare_matmul(x, y):
    xs, ys = shape_of(x), shape_of(y)
    if not xs or not ys:
        raise ValueError(
            f"matmul: operands must have at least one axis, got shapes {xs} and {ys}; "
            "use multiply for a scalar"
        )
    inner_x = xs[-1]
    inner_y = ys[0] if len(ys) == 1 else ys[-2]
    if inner_x != inner_y:
        raise ValueError(
            f"matmul: shapes {xs} and {ys} do not line up: {inner_x} columns "
            f"on the left against {inner_y} rows on the right"
        )
    return {}


def _swap_last(a):
    n = ndim_of(a)
    return transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


def _move_last_to_front(a):
    n = ndim_of(a)
    return transpose(a, (n - 1,) + tuple(range(n - 1)))


def _jvp_x(out, x, y, x_dot):
    if ndim_of(y) == 1:
        return matmul(x_dot, y)
    if ndim_of(x) == 1:
        # A 1-D row against batched matrices: make each lane a 1-row matrix.
        lanes = shape_of(x_dot)[:1]
        rows = reshape(x_dot, lanes + (1,) * (ndim_of(y) - 1) + shape_of(x))
        return squeeze(matmul(rows, y), -2)
    return matmul(pad_lanes(x_dot, ndim_of(x), ndim_of(out)), y)


def _jvp_y(out, x, y, y_dot):
    if ndim_of(y) == 1:
        # Contract against the transposed lanes, then put the lanes back in front.
        return _move_last_to_front(matmul(x, transpose(y_dot, (1, 0))))
    if ndim_of(x) == 1:
        return matmul(x, y_dot)
    return matmul(x, pad_lanes(y_dot, ndim_of(y), ndim_of(out)))


def _vjp_x(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(out_bar, transpose(y, (1, 0)))  # nothing broadcast: no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * y
    if ndim_of(x) == 1:
        row = matmul(expand_dims(out_bar, -2), _swap_last(y))
        return unbroadcast(squeeze(row, -2), shape_of(x))
    if ndim_of(y) == 1:
        return unbroadcast(multiply(expand_dims(out_bar, -1), y), shape_of(x))
    return unbroadcast(matmul(out_bar, _swap_last(y)), shape_of(x))


def _vjp_y(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(transpose(x, (1, 0)), out_bar)  # nothing broadcast: no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * x
    if ndim_of(x) == 1:
        return unbroadcast(expand_dims(x, -1) * expand_dims(out_bar, -2), shape_of(y))
    if ndim_of(y) == 1:
        column = matmul(_swap_last(x), expand_dims(out_bar, -1))
        return unbroadcast(squeeze(column, -1), shape_of(y))
    return unbroadcast(matmul(_swap_last(x), out_bar), shape_of(y))


def _batch(args, batched):
    """A batch of matrix products: 1-D operands become one-row or one-column matrices,
    and batched operands get size-1 axes after the batch axis so that numpy's
    broadcasting of the stack axes lines the examples up."""
    x, y = args
    x_vector = ndim_of(x) - batched[0] == 1
    y_vector = ndim_of(y) - batched[1] == 1
    if x_vector:
        x = expand_dims(x, -2)
    if y_vector:
        y = expand_dims(y, -1)
    rank = max(ndim_of(x) - batched[0], ndim_of(y) - batched[1])
    x, y = (pad_batched(a, rank) if b else a for a, b in zip((x, y), batched))
    out = matmul(x, y)
    if y_vector:
        out = squeeze(out, -1)
    if x_vector:
        out = squeeze(out, -1 if y_vector else -2)
    return out


matmul = defop(
    "matmul",
    np.matmul,
    batch=_batch,
    operators=("__matmul__", "__rmatmul__"),
    replay=operator.mul,
    complex=HOLOMORPHIC,
    nargs=2,
    saves=("args",),
    prepare=_prepare_matmul,
    cases=[
        (((3, 4), (4, 2)), {}),
        (((4,), (4, 2)), {}),
        (((3, 4), (4,)), {}),
        (((4,), (4,)), {}),
        (((2, 3, 4), (4, 5)), {}),
        (((2, 3, 4), (1, 4, 5)), {}),
        (((4,), (2, 4, 3)), {}),
        (((2, 3, 4), (4,)), {}),
    ],
    label="Mm",
    hints=Hints(
        vjp_reads=(("y",), ("x",)),  # each rule reads only the other operand's values
        work=lambda out, x, y: max(np.size(out), 1) * np.shape(x)[-1],
    ),
    sym=lambda x, y: np.matmul(np.asarray(x, dtype=object), np.asarray(y, dtype=object)),
    jvp=(_jvp_x, _jvp_y),
    vjp=(_vjp_x, _vjp_y),
    doc="Matrix product, as ``np.matmul`` and ``x @ y``: 1-D, 2-D and batched.",
    example="matmul([[1.0, 2.0]], [[3.0], [4.0]]) -> [[11.]]",
)


# --- test inputs: well-conditioned matrices ------------------------------------------------


def diagonally_dominant(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Square matrices (batched over leading axes) far from singular: entries in
    (-1, 1) plus ``n`` on the diagonal, with an eigenvalue gap for tests.

    >>> a = diagonally_dominant((3, 3), np.random.default_rng(0))
    >>> bool(np.linalg.cond(a) < 10)
    True
    """
    n = shape[-1]
    return rng.uniform(-1.0, 1.0, shape) + n * np.eye(n)


def symmetric_positive_definite(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Symmetric positive definite matrices with well-separated eigenvalues.

    >>> a = symmetric_positive_definite((2, 3, 3), np.random.default_rng(0))
    >>> bool(np.allclose(a, np.swapaxes(a, -1, -2))), bool(np.linalg.eigvalsh(a).min() > 0.5)
    (True, True)
    """
    n = shape[-1]
    base = rng.uniform(-0.3, 0.3, shape)
    return (base + np.swapaxes(base, -1, -2)) + np.diag(1.0 + 1.5 * np.arange(n))


def full_rank(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Rectangular (or square) matrices with well-separated singular values.

    >>> s = np.linalg.svd(full_rank((3, 2), np.random.default_rng(0)), compute_uv=False)
    >>> bool(s.min() > 0.5 and s[0] - s[1] > 0.5)
    True
    """
    m, n = shape[-2:]
    return rng.uniform(-0.3, 0.3, shape) + np.eye(m, n) * (1.0 + 1.5 * np.arange(m)[:, None])


# --- helpers shared by the matrix rules ----------------------------------------------------


def _trace_product(a, b):
    """``sum(a * b)`` over the last two axes: trace(aᵀ b), batched."""
    return sum(multiply(a, b), axis=(-2, -1))


def _as_sympy_batches(fn, *arrays):
    """Apply ``fn`` to each matrix of object arrays batched alike over leading axes."""
    arrays = [np.asarray(a, dtype=object) for a in arrays]
    batch = np.broadcast_shapes(*[a.shape[:-2] for a in arrays])
    arrays = [np.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
    results = [fn(*[a[index] for a in arrays]) for index in np.ndindex(batch)]
    first = np.asarray(results[0], dtype=object)
    out = np.empty(batch + first.shape, dtype=object)
    for index, result in zip(np.ndindex(batch), results):
        out[index] = result if first.ndim == 0 else np.asarray(result, dtype=object)
    return out


def _matrix(a) -> sympy.Matrix:
    return sympy.Matrix(a.tolist())


def _as_array(matrix: sympy.Matrix) -> np.ndarray:
    return np.array(matrix.tolist(), dtype=object)


def _symmetric_part(a, lower: bool):
    """The symmetric matrix that reads only one triangle of ``a``, as LAPACK does."""
    n = shape_of(a)[-1]
    keep = np.tril(np.ones((n, n))) if lower else np.triu(np.ones((n, n)))
    strict = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    return add(multiply(a, keep), _swap_last(multiply(a, strict)))


def _symmetric_part_adjoint(a_bar, lower: bool):
    """The adjoint of :func:`_symmetric_part`: the cotangent lands on the triangle read."""
    n = shape_of(a_bar)[-1]
    keep = np.tril(np.ones((n, n))) if lower else np.triu(np.ones((n, n)))
    strict = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    return add(multiply(a_bar, keep), multiply(_swap_last(a_bar), strict))


def _sym_symmetric(a, lower: bool) -> sympy.Matrix:
    n = a.shape[-1]
    return sympy.Matrix(
        n, n, lambda i, j: a[max(i, j), min(i, j)] if lower else a[min(i, j), max(i, j)]
    )


def _prepare_square(x, **params):
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(
            f"expected square matrices in the last two axes, got shape {shape}; "
            "use lstsq or pinv for rectangular matrices"
        )
    return params


# --- inv --------------------------------------------------------------------------------


inv = defop(
    "inv",
    np.linalg.inv,
    batch=LEADING_AXIS,
    numpy=("linalg.inv",),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    domain=diagonally_dominant,
    saves=("out",),
    prepare=_prepare_square,
    cases=[(((2, 2),), {}), (((2, 2, 2),), {})],
    sym=lambda x: _as_sympy_batches(lambda a: _as_array(_matrix(a).inv()), x),
    jvp=lambda out, x, x_dot: negative(matmul(matmul(out, x_dot), out)),
    vjp=lambda out, x, out_bar: negative(matmul(matmul(_swap_last(out), out_bar), _swap_last(out))),
    doc="The inverse of square matrices, batched over leading axes, as ``np.linalg.inv``.",
    example="inv([[2.0, 0.0], [0.0, 4.0]]) -> [[0.5  0.  ]\n [0.   0.25]]",
)


# --- solve ------------------------------------------------------------------------------


def _prepare_solve(a, b):
    _prepare_square(a)
    a_shape, b_shape = shape_of(a), shape_of(b)
    rows = b_shape[0] if len(b_shape) == 1 else (b_shape[-2] if len(b_shape) > 1 else None)
    if rows != a_shape[-1]:
        raise ValueError(
            f"solve: a of shape {a_shape} needs b of shape ({a_shape[-1]},) or "
            f"(..., {a_shape[-1]}, k), got {b_shape}"
        )
    return {}


def _column(value, b):
    """``value`` as columns: numpy's ``solve`` reads a 1-D ``b`` as one column."""
    return expand_dims(value, -1) if ndim_of(b) == 1 else value


def _uncolumn(value, b):
    return squeeze(value, -1) if ndim_of(b) == 1 else value


def _solve_jvp_a(out, a, b, a_dot):
    columns = _column(out, b)
    a_dot = pad_lanes(a_dot, ndim_of(a), ndim_of(columns))
    return _uncolumn(negative(solve(a, matmul(a_dot, columns))), b)


def _solve_jvp_b(out, a, b, b_dot):
    columns = pad_lanes(_column(b_dot, b), ndim_of(_column(b, b)), ndim_of(_column(out, b)))
    return _uncolumn(solve(a, columns), b)


def _solve_vjp_a(out, a, b, out_bar):
    b_bar = solve(_swap_last(a), _column(out_bar, b))
    return unbroadcast(negative(matmul(b_bar, _swap_last(_column(out, b)))), shape_of(a))


def _solve_vjp_b(out, a, b, out_bar):
    return unbroadcast(_uncolumn(solve(_swap_last(a), _column(out_bar, b)), b), shape_of(b))


def _solve_batch(args, batched):
    """A batch of solves: a 1-D right-hand side becomes a column, and batched operands get
    size-1 axes after the batch axis so numpy's broadcasting lines the examples up."""
    a, b = args
    vector = ndim_of(b) - batched[1] == 1
    if vector:
        b = expand_dims(b, -1)
    rank = max(ndim_of(a) - batched[0], ndim_of(b) - batched[1])
    a, b = (pad_batched(v, rank) if flag else v for v, flag in zip((a, b), batched))
    out = solve(a, b)
    return squeeze(out, -1) if vector else out


def _sym_solve(a, b):
    b = np.asarray(b, dtype=object)
    if b.ndim == 1:
        return _sym_solve(a, b[:, None])[..., 0]
    return _as_sympy_batches(lambda m, r: _as_array(_matrix(m).LUsolve(_matrix(r))), a, b)


solve = defop(
    "solve",
    np.linalg.solve,
    batch=_solve_batch,
    numpy=("linalg.solve",),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    nargs=2,
    domain=(diagonally_dominant, (-2.0, 2.0)),
    prepare=_prepare_solve,
    cases=[(((2, 2), (2,)), {}), (((2, 2, 2), (2, 1)), {}), (((2, 2), (2, 2, 1)), {})],
    sym=_sym_solve,
    jvp=(_solve_jvp_a, _solve_jvp_b),
    vjp=(_solve_vjp_a, _solve_vjp_b),
    doc="The solution of ``a @ x = b``, batched, as ``np.linalg.solve`` (a 1-D ``b`` "
    "is one column).",
    example="solve([[2.0, 0.0], [0.0, 4.0]], [1.0, 1.0]) -> [0.5  0.25]",
)


# --- det and logabsdet ------------------------------------------------------------------


det = defop(
    "det",
    np.linalg.det,
    batch=LEADING_AXIS,
    numpy=("linalg.det",),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    domain=diagonally_dominant,
    prepare=_prepare_square,
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    sym=lambda x: _as_sympy_batches(lambda a: _matrix(a).det(), x),
    # d det = det · trace(inv(x) dx); the inverse is an op, so this differentiates again.
    jvp=lambda out, x, x_dot: multiply(out, _trace_product(_swap_last(inv(x)), x_dot)),
    vjp=lambda out, x, out_bar: multiply(
        expand_dims(multiply(out_bar, out), (-2, -1)), _swap_last(inv(x))
    ),
    doc="The determinant of square matrices, batched, as ``np.linalg.det``.",
    example="det([[2.0, 0.0], [1.0, 3.0]]) -> 6.0",
)


def _logabsdet_value(x):
    return np.linalg.slogdet(x).logabsdet


logabsdet = defop(
    "logabsdet",
    _logabsdet_value,
    batch=LEADING_AXIS,
    numpy=(),
    replay=ARRAY_ONLY,
    complex="is log|det x|, not analytic in x",
    domain=diagonally_dominant,
    saves=("args",),
    prepare=_prepare_square,
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    # log|det| = log(det²) / 2: smooth wherever det is not 0.
    sym=lambda x: _as_sympy_batches(lambda a: sympy.log(_matrix(a).det() ** 2) / 2, x),
    jvp=lambda out, x, x_dot: _trace_product(_swap_last(inv(x)), x_dot),
    vjp=lambda out, x, out_bar: multiply(expand_dims(out_bar, (-2, -1)), _swap_last(inv(x))),
    doc="``log|det x|``, batched: the second result of ``np.linalg.slogdet``.",
    example="logabsdet([[-2.0, 0.0], [0.0, 0.5]]) -> 0.0",
)


# --- cholesky ---------------------------------------------------------------------------


def _prepare_cholesky(x, upper=False):
    _prepare_square(x)
    if upper:
        raise ValueError(
            "cholesky: upper=True is not supported; take the transpose of the lower "
            "factor of the symmetric matrix instead"
        )
    return {}


def _lower_half_diagonal(n: int) -> np.ndarray:
    """The mask Φ: 1 below the diagonal, 1/2 on it, 0 above."""
    return np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)


def _cholesky_jvp(out, x, x_dot):
    # L̇ = L Φ(L⁻¹ Ṡ L⁻ᵀ), Ṡ the symmetric matrix read from x_dot's lower triangle.
    inverse = inv(out)
    inner = matmul(matmul(inverse, _symmetric_part(x_dot, lower=True)), _swap_last(inverse))
    return matmul(out, multiply(inner, _lower_half_diagonal(shape_of(out)[-1])))


def _cholesky_vjp(out, x, out_bar):
    # The adjoint of each step of the JVP, in reverse order.
    inverse = inv(out)
    inner = multiply(matmul(_swap_last(out), out_bar), _lower_half_diagonal(shape_of(out)[-1]))
    return _symmetric_part_adjoint(matmul(matmul(_swap_last(inverse), inner), inverse), lower=True)


cholesky = defop(
    "cholesky",
    np.linalg.cholesky,
    batch=LEADING_AXIS,
    numpy=("linalg.cholesky",),
    replay=ARRAY_ONLY,
    complex="reads a symmetric matrix's real triangle; Hermitian input is not supported",
    domain=symmetric_positive_definite,
    saves=("out",),
    prepare=_prepare_cholesky,
    cases=[(((3, 3),), {}), (((2, 2, 2),), {})],
    sym=lambda x: _as_sympy_batches(
        lambda a: _as_array(_sym_symmetric(a, lower=True).cholesky(hermitian=False)), x
    ),
    jvp=_cholesky_jvp,
    vjp=_cholesky_vjp,
    doc="The lower Cholesky factor ``L`` (``L @ L.T = x``) of symmetric positive definite "
    "matrices, batched, as ``np.linalg.cholesky``: only the lower triangle is read.",
    example="cholesky([[4.0, 2.0], [2.0, 5.0]]) -> [[2. 0.]\n [1. 2.]]",
)


# --- eigvalsh and eigh's vectors ----------------------------------------------------------


def _prepare_uplo(x, UPLO="L"):  # noqa: N803 (numpy's name)
    _prepare_square(x)
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return {"lower": UPLO == "L"}


def _uplo(lower: bool) -> str:
    return "L" if lower else "U"


def _eigvalsh_jvp(out, x, x_dot, lower):
    # ẇᵢ = vᵢᵀ Ṡ vᵢ.
    vectors = eigh_vectors(x, _uplo(lower))
    spread = matmul(_symmetric_part(x_dot, lower=lower), vectors)
    return sum(multiply(vectors, spread), axis=-2)


def _eigvalsh_vjp(out, x, out_bar, lower):
    vectors = eigh_vectors(x, _uplo(lower))
    weighted = multiply(vectors, expand_dims(out_bar, -2))
    return _symmetric_part_adjoint(matmul(weighted, _swap_last(vectors)), lower=lower)


def _sym_eigenvalues_2x2(s: sympy.Matrix) -> list:
    """The eigenvalues of a symmetric 2x2 matrix, ascending, in closed form."""
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
        return _sym_eigenvalues_2x2(_sym_symmetric(a, lower))

    return _as_sympy_batches(values, x)


eigvalsh = defop(
    "eigvalsh",
    lambda x, lower: np.linalg.eigvalsh(x, _uplo(lower)),
    batch=LEADING_AXIS,
    numpy=("linalg.eigvalsh",),
    replay=ARRAY_ONLY,
    complex="reads a symmetric matrix's real triangle; Hermitian input is not supported",
    domain=symmetric_positive_definite,
    saves=("args",),
    prepare=_prepare_uplo,
    cases=[(((2, 2),), {"UPLO": "L"}), (((2, 2, 2),), {"UPLO": "U"})],
    sym=_sym_eigvalsh,
    jvp=_eigvalsh_jvp,
    vjp=_eigvalsh_vjp,
    doc="The eigenvalues, ascending, of symmetric matrices (one triangle read, ``UPLO``), "
    "batched, as ``np.linalg.eigvalsh``. Distinct eigenvalues are differentiable.",
    example="eigvalsh([[2.0, 1.0], [1.0, 2.0]]) -> [1. 3.]",
)


def _eigh_vectors_value(x, lower):
    vectors = np.linalg.eigh(x, _uplo(lower)).eigenvectors
    # The gauge: each eigenvector's sign makes its last component non-negative.
    return vectors * np.where(vectors[..., -1:, :] < 0, -1.0, 1.0)


def _gap_factors(x, lower):
    """F with Fᵢⱼ = 1 / (wⱼ - wᵢ) off the diagonal and 0 on it, from the eigenvalues."""
    values = eigvalsh(x, _uplo(lower))
    n = shape_of(values)[-1]
    gaps = add(subtract(expand_dims(values, -2), expand_dims(values, -1)), np.eye(n))
    return divide(1.0 - np.eye(n), gaps)


def _eigh_vectors_jvp(out, x, x_dot, lower):
    # V̇ = V (F ∘ Vᵀ Ṡ V): the vectors turn into each other, at rates set by the gaps.
    rotated = matmul(matmul(_swap_last(out), _symmetric_part(x_dot, lower=lower)), out)
    return matmul(out, multiply(_gap_factors(x, lower), rotated))


def _eigh_vectors_vjp(out, x, out_bar, lower):
    inner = multiply(_gap_factors(x, lower), matmul(_swap_last(out), out_bar))
    return _symmetric_part_adjoint(matmul(matmul(out, inner), _swap_last(out)), lower=lower)


def _sym_eigh_vectors(x, lower):
    def vectors(a):
        if a.shape[-1] != 2:
            raise NotImplementedError("the SymPy counterpart of eigh_vectors covers 2x2 matrices")
        s = _sym_symmetric(a, lower)
        columns = []
        for value in _sym_eigenvalues_2x2(s):
            # (λ - d, b) solves (S - λ) v = 0; scaled by b / |b| so the last component is >= 0.
            first, last = value - s[1, 1], s[1, 0]
            scale = last / sympy.sqrt(last**2 * (first**2 + last**2))
            columns.append([first * scale, last * scale])
        return np.array(columns, dtype=object).T

    return _as_sympy_batches(vectors, x)


eigh_vectors = defop(
    "eigh_vectors",
    _eigh_vectors_value,
    batch=LEADING_AXIS,
    numpy=(),
    replay=ARRAY_ONLY,
    complex="reads a symmetric matrix's real triangle; Hermitian input is not supported",
    domain=symmetric_positive_definite,
    prepare=_prepare_uplo,
    cases=[(((2, 2),), {"UPLO": "L"}), (((2, 2, 2),), {"UPLO": "U"})],
    sym=_sym_eigh_vectors,
    jvp=_eigh_vectors_jvp,
    vjp=_eigh_vectors_vjp,
    doc="The eigenvectors (columns, in the order of ``eigvalsh``) of symmetric matrices, "
    "batched. An eigenvector's sign is arbitrary; here each is signed so its last "
    "component is non-negative, which makes them differentiable functions of the matrix "
    "(numpy's own signs may differ). Distinct eigenvalues are needed.",
    example="eigh_vectors([[2.0, 0.0], [0.0, 1.0]]) -> [[0. 1.]\n [1. 0.]]",
)


# --- singular values ----------------------------------------------------------------------


def _gram_vectors(x):
    """For ``x`` with at least as many rows as columns: V (right singular vectors,
    descending order) and ``x @ V`` (the left ones scaled by the singular values)."""
    ascending = eigh_vectors(matmul(_swap_last(x), x))
    vectors = getitem(ascending, (Ellipsis, slice(None, None, -1)))
    return vectors, matmul(x, vectors)


def _tall(x):
    return shape_of(x)[-2] >= shape_of(x)[-1]


def _svdvals_jvp(out, x, x_dot):
    # ṡᵢ = uᵢᵀ ẋ vᵢ, with uᵢ = x vᵢ / sᵢ.
    if not _tall(x):
        x, x_dot = _swap_last(x), _swap_last(x_dot)
    vectors, scaled = _gram_vectors(x)
    return divide(sum(multiply(scaled, matmul(x_dot, vectors)), axis=-2), out)


def _svdvals_vjp(out, x, out_bar):
    tall = _tall(x)
    vectors, scaled = _gram_vectors(x if tall else _swap_last(x))
    x_bar = matmul(multiply(scaled, expand_dims(divide(out_bar, out), -2)), _swap_last(vectors))
    return x_bar if tall else _swap_last(x_bar)


def _sym_svdvals(x):
    def values(a):
        m = _matrix(a)
        gram = m.T * m if m.rows >= m.cols else m * m.T
        if gram.rows == 1:
            return [sympy.sqrt(gram[0, 0])]
        if gram.rows != 2:
            raise NotImplementedError(
                "the SymPy counterpart of svdvals covers matrices with 1 or 2 columns or rows"
            )
        return [sympy.sqrt(v) for v in reversed(_sym_eigenvalues_2x2(gram))]

    return _as_sympy_batches(values, x)


def _prepare_matrices(x):
    if ndim_of(x) < 2:
        raise ValueError(f"expected matrices in the last two axes, got shape {shape_of(x)}")
    return {}


svdvals = defop(
    "svdvals",
    np.linalg.svdvals,
    batch=LEADING_AXIS,
    numpy=("linalg.svdvals",),
    replay=ARRAY_ONLY,
    complex="singular values are not analytic in the matrix",
    domain=full_rank,
    saves=("args", "out"),
    prepare=_prepare_matrices,
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


def _sylvester_operator(root):
    """K with K vec(D) = vec(root D + D root) (row-major vec), batched:
    K[(i, j), (k, l)] = root[i, k] δ[j, l] + δ[i, k] root[l, j]."""
    n = shape_of(root)[-1]
    batch = shape_of(root)[:-2]
    eye = np.eye(n)
    left = multiply(reshape(root, batch + (n, 1, n, 1)), eye.reshape(1, n, 1, n))
    right = multiply(eye.reshape(n, 1, n, 1), reshape(_swap_last(root), batch + (1, n, 1, n)))
    return reshape(add(left, right), batch + (n * n, n * n))


def _vec_solve(operator_matrix, value):
    """Solve ``operator_matrix @ vec(D) = vec(value)`` for the matrices D, batched."""
    shape = shape_of(value)
    n = shape[-1]
    columns = reshape(value, shape[:-2] + (n * n, 1))
    return reshape(solve(operator_matrix, columns), shape)


sqrtm = defop(
    "sqrtm",
    _sqrtm_value,
    batch=LEADING_AXIS,
    numpy=(),
    replay=ARRAY_ONLY,
    complex="is computed for real matrices without negative real eigenvalues",
    domain=diagonally_dominant,
    saves=("out",),
    prepare=_prepare_square,
    cases=[(((2, 2),), {}), (((2, 2, 2),), {})],
    # The principal root of a 2x2 matrix: (x + s I) / t, s = sqrt(det x), t = sqrt(tr x + 2 s).
    sym=lambda x: _as_sympy_batches(
        lambda a: _as_array(
            (_matrix(a) + sympy.sqrt(_matrix(a).det()) * sympy.eye(2))
            / sympy.sqrt(_matrix(a).trace() + 2 * sympy.sqrt(_matrix(a).det()))
        ),
        x,
    ),
    # The root X satisfies X Ẋ + Ẋ X = ẋ: a Sylvester equation, solved as one linear system.
    jvp=lambda out, x, x_dot: _vec_solve(_sylvester_operator(out), x_dot),
    vjp=lambda out, x, out_bar: _vec_solve(_swap_last(_sylvester_operator(out)), out_bar),
    doc="The principal square root of square matrices, batched, as ``scipy.linalg.sqrtm`` "
    "(scipy's function does not dispatch to boxes: call ``adcompare.sqrtm``).",
    example="sqrtm([[4.0, 0.0], [0.0, 9.0]]) -> [[2. 0.]\n [0. 3.]]",
)
