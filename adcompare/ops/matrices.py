"""What the matrix ops share: well-conditioned test inputs, SymPy on batches of matrices,
reading one triangle, the square check, and the sparsity of a function of whole matrices.

The matrix functions act on the last two axes and are batched over the leading ones, as
numpy's are. Their sparsity rules say the same thing once: each output element depends
only on the matrix of its own batch (block-diagonal across the batch), on every entry of
it that the function reads (dense within the matrix: an inverse or a determinant mixes
them all), and every two of those entries interact in its second derivatives unless the
op says which do not (a determinant is linear in each row and in each column).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import sympy

from adcompare.ops.complex_parts import conj, is_complex, real
from adcompare.ops.elementwise import add, multiply
from adcompare.ops.links import Links
from adcompare.ops.reductions import sum
from adcompare.ops.registry import ARRAY_ONLY, LEADING_AXIS, defop, ndim_of, shape_of
from adcompare.ops.shape import transpose

__all__ = [
    "adjoint",
    "conjugated",
    "defmatrix",
    "diagonally_dominant",
    "full_rank",
    "matrix_sparsity",
    "per_matrix_links",
    "prepare_square",
    "swap_last",
    "symmetric_part",
    "symmetric_part_adjoint",
    "symmetric_positive_definite",
    "sympy_batches",
    "sympy_matrix",
    "sympy_symmetric",
    "to_object_array",
    "trace_product",
    "triangle",
]


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


# --- helpers of the rules ------------------------------------------------------------------


def swap_last(a):
    """``a`` with its last two axes swapped: the transpose of each matrix of a batch."""
    n = ndim_of(a)
    return transpose.prepared(a, axes=(*range(n - 2), n - 1, n - 2))


def conjugated(a):
    """The complex conjugate of ``a``; a real ``a`` itself, with no op applied.

    >>> print(conjugated(np.array([1.0 + 2j])), conjugated(np.array([1.0])))
    [1.-2.j] [1.]
    """
    return conj(a) if is_complex(a) else a


def adjoint(a):
    """The conjugate transpose of each matrix of a batch (the transpose of real ones).

    >>> print(adjoint(np.array([[1.0, 2j]])))
    [[1.-0.j]
     [0.-2.j]]
    """
    return swap_last(conjugated(a))


def trace_product(a, b):
    """``sum(a * b)`` over the last two axes: trace(aᵀ b), batched."""
    return sum(multiply(a, b), axis=(-2, -1))


def _triangles(n: int, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """The mask of the triangle read (diagonal included) and of its strict part."""
    if lower:
        return np.tril(np.ones((n, n))), np.tril(np.ones((n, n)), -1)
    return np.triu(np.ones((n, n))), np.triu(np.ones((n, n)), 1)


def symmetric_part(a, lower: bool):
    """The symmetric matrix that reads only one triangle of ``a``, as LAPACK does; for
    complex ``a`` the Hermitian one, whose diagonal is the real part of ``a``'s (LAPACK
    ignores its imaginary part).

    >>> print(symmetric_part(np.array([[1 + 5j, 0], [2j, 3]]), lower=True))
    [[1.+0.j 0.-2.j]
     [0.+2.j 3.+0.j]]
    """
    n = shape_of(a)[-1]
    keep, strict = _triangles(n, lower)
    if not is_complex(a):
        return add(multiply(a, keep), swap_last(multiply(a, strict)))
    below = multiply(a, strict)
    return add(add(below, adjoint(below)), multiply(real(a), np.eye(n)))


def symmetric_part_adjoint(a_bar, lower: bool):
    """The adjoint of :func:`symmetric_part`: the cotangent lands on the triangle read
    (in the Wirtinger convention for complex cotangents: the strict triangle gets
    ``ā + conj(āᵀ)``, the diagonal the real part of ``ā``'s).

    >>> print(symmetric_part_adjoint(np.array([[1 + 5j, 1j], [2j, 3]]), lower=True))
    [[1.+0.j 0.+0.j]
     [0.+1.j 3.+0.j]]
    """
    n = shape_of(a_bar)[-1]
    keep, strict = _triangles(n, lower)
    if not is_complex(a_bar):
        return add(multiply(a_bar, keep), multiply(swap_last(a_bar), strict))
    return add(multiply(add(a_bar, adjoint(a_bar)), strict), multiply(real(a_bar), np.eye(n)))


def prepare_square(x, **params):
    """Refuse anything but square matrices in the last two axes; pass ``params`` on."""
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(
            f"expected square matrices in the last two axes, got shape {shape}; "
            "use lstsq or pinv for rectangular matrices"
        )
    return params


# --- the SymPy oracle on batches -----------------------------------------------------------


def sympy_batches(fn, *arrays):
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


def sympy_matrix(a) -> sympy.Matrix:
    """One matrix of an object array as a SymPy ``Matrix``."""
    return sympy.Matrix(a.tolist())


def to_object_array(matrix: sympy.Matrix) -> np.ndarray:
    """A SymPy ``Matrix`` back as an object array."""
    return np.array(matrix.tolist(), dtype=object)


def sympy_symmetric(a, lower: bool) -> sympy.Matrix:
    """The symmetric SymPy matrix read from one triangle of ``a``."""
    n = a.shape[-1]
    return sympy.Matrix(
        n, n, lambda i, j: a[max(i, j), min(i, j)] if lower else a[min(i, j), max(i, j)]
    )


# --- sparsity ----------------------------------------------------------------------------


def per_matrix_links(out, x, depends: np.ndarray, interact: Callable | None = None) -> Links:
    """The links of an op applied to each matrix of a batch on its own.

    Output element ``e`` of every batch (the output's elements in blocks of
    ``len(depends)``, one block per matrix) depends on the entries
    ``depends[e]`` (a boolean row over one matrix's ``n²`` entries) of its own
    matrix. Every two of them interact, or the pairs of entries ``(p, q)``
    for which ``interact(p, q, n)`` holds (flat entry numbers, ``n`` columns);
    the pairs are listed only when second derivatives are traced.

    >>> links = per_matrix_links(np.zeros(2), np.zeros((2, 1, 2)), np.ones((1, 2), bool))
    >>> [part.tolist() for part in links.inputs[0]]
    [[0, 0, 1, 1], [0, 1, 2, 3]]
    """
    shape = shape_of(x)
    batch = math.prod(shape[:-2])
    per_in = shape[-2] * shape[-1]
    per_out = len(depends)
    element, entry = np.nonzero(depends)
    first_out = np.arange(batch)[:, None] * per_out
    first_in = np.arange(batch)[:, None] * per_in
    rows, cols = (first_out + element).ravel(), (first_in + entry).ravel()

    def pairs() -> tuple:
        together = depends[:, :, None] & depends[:, None, :] & np.triu(np.ones(per_in, bool))
        if interact is not None:
            p, q = np.divmod(np.arange(per_in * per_in), per_in)
            together &= interact(p, q, shape[-1]).reshape(per_in, per_in)
        element, p, q = np.nonzero(together)
        a, b = (first_in + p).ravel(), (first_in + q).ravel()
        return ((0, 0, (first_out + element).ravel(), a, b),)

    return Links(((rows, cols),), pairs)


def triangle(n: int, lower: bool) -> np.ndarray:
    """The entries of an ``n × n`` matrix one triangle holds (diagonal included).

    >>> triangle(2, lower=True).astype(int).tolist()
    [[1, 0], [1, 1]]
    """
    return _triangles(n, lower)[0].astype(bool)


def matrix_sparsity(read: Callable | None = None, interact: Callable | None = None) -> Callable:
    """The sparsity rule of a nonlinear function of each whole matrix (inv, eigvalsh, ...).

    Every output element of a batch depends on the entries of its matrix that
    ``read(n, **params)`` marks (all of them by default; ``eigvalsh`` reads one
    triangle), and those interact as :func:`per_matrix_links` says: exact for
    a function whose every output mixes every entry read (a dense inverse, the
    eigenvalues of a generic matrix), a superset where some pairs cancel.

    >>> rule = matrix_sparsity()
    >>> links = rule(np.zeros(()), np.zeros((2, 2)), local=False)
    >>> links.inputs[0][1].tolist()
    [0, 1, 2, 3]
    """

    def rule(out, x, *, local, **params):
        rows, n = shape_of(x)[-2:]
        mask = np.ones((rows, n), bool) if read is None else read(n, **params)
        per_matrix = np.size(out) // max(math.prod(shape_of(x)[:-2]), 1)
        depends = np.broadcast_to(mask.ravel(), (per_matrix, mask.size))
        return per_matrix_links(out, x, depends, interact)

    return rule


def defmatrix(name: str, value: Callable, **fields) -> Callable:
    """``defop`` for a function of each square matrix of a batch, with the fields such ops
    share unless ``fields`` says otherwise: batched over the leading axes, replayed whole
    arrays only, refusing non-square matrices, tested on one 2x2 matrix and a batch of
    two, and dense within each matrix (:func:`matrix_sparsity`).

    >>> from adcompare.ops import OPS
    >>> OPS["inv"].batch == LEADING_AXIS, OPS["inv"].sparsity is not None
    (True, True)
    """
    shared = {
        "batch": LEADING_AXIS,
        "replay": ARRAY_ONLY,
        "prepare": prepare_square,
        "cases": [(((2, 2),), {}), (((2, 2, 2),), {})],
        "sparsity": matrix_sparsity(),
    }
    return defop(name, value, **(shared | fields))
