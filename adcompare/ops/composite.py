"""Composite ops: built from primitives, so they need no derivative rules.

Each is differentiable in every mode, to every order, because its parts are.
``COMPOSITES`` lists them, each with where users reach it (the method a box
gets, numpy's names for it, whether command-line formulas accept it), so the
engines and the tests iterate over them as they do over ``OPS``.
"""

from __future__ import annotations

import math

import numpy as np

from adcompare.ops.complex_parts import conj, imag, real, refuse_complex
from adcompare.ops.elementwise import (
    abs,
    add,
    divide,
    exp,
    log,
    log1p,
    maximum,
    multiply,
    negative,
    power,
    sqrt,
    subtract,
    tanh,
    where,
)
from adcompare.ops.joining import concatenate
from adcompare.ops.linalg import matmul
from adcompare.ops.matrix_functions import svdvals
from adcompare.ops.reductions import _logsumexp, _stop_max, max, min, sum
from adcompare.ops.registry import (
    ComplexNotSupportedError,
    composite,
    ndim_of,
    normalize_axes,
    raw,
    shape_of,
)
from adcompare.ops.shape import expand_dims, getitem, reshape, squeeze, transpose


@composite(method="square", cli=True)
def square(x):
    """``x * x``, elementwise.

    >>> print(square(3.0))
    9.0
    """
    return multiply(x, x)


@composite(method="reciprocal", cli=True)
def reciprocal(x):
    """``1 / x``, elementwise.

    >>> print(reciprocal(4.0))
    0.25
    """
    return divide(1.0, x)


@composite(cli=True, cases=[(((3, 4),), {})])
def fabs(x):
    """Absolute value of real numbers, elementwise, as ``np.fabs`` (derivative ``sign(x)``).

    >>> print(fabs(-2.0))
    2.0
    """
    if np.asarray(raw(x)).dtype.kind == "c":
        raise ComplexNotSupportedError(
            "fabs is computed for real numbers only: it takes no complex input (use abs)"
        )
    return abs(x)


@composite(numpy=("deg2rad", "radians"), cli=True, cases=[(((3, 4),), {})])
def deg2rad(x):
    """Degrees to radians, elementwise, as ``np.deg2rad`` (also reached as ``np.radians``).

    >>> print(deg2rad(180.0))
    3.141592653589793
    """
    refuse_complex(x, "deg2rad")
    return multiply(x, math.pi / 180.0)


@composite(numpy=("rad2deg", "degrees"), cli=True, cases=[(((3, 4),), {})])
def rad2deg(x):
    """Radians to degrees, elementwise, as ``np.rad2deg`` (also reached as ``np.degrees``).

    >>> print(rad2deg(math.pi))
    180.0
    """
    refuse_complex(x, "rad2deg")
    return multiply(x, 180.0 / math.pi)


@composite(method="mean")
def mean(x, axis=None, keepdims: bool = False):
    """Mean over ``axis`` (all axes by default), as ``np.mean``.

    >>> print(mean([1.0, 2.0, 3.0, 6.0]))
    3.0
    """
    axes = normalize_axes(axis, ndim_of(x))
    shape = shape_of(x)
    count = math.prod(shape[a] for a in axes)
    return divide(sum(x, axis=axes, keepdims=keepdims), float(count))


@composite(method="sigmoid", cli=True)
def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``, elementwise.

    Computed as ``(1 + tanh(x / 2)) / 2``, which never overflows.

    >>> print(sigmoid(0.0))
    0.5
    """
    return multiply(0.5, add(1.0, tanh(multiply(0.5, x))))


@composite(method="relu", cli=True)
def relu(x):
    """``max(x, 0)``, elementwise, with derivative 0 at ``x = 0`` (as PyTorch).

    >>> print(relu([-1.0, 2.0]))
    [0. 2.]
    """
    return where(np.greater(raw(x), 0), x, 0.0)


@composite(cli=True)
def softplus(x):
    """``log(1 + exp(x))``, elementwise, without overflow for large ``x``.

    Written as ``log1p(exp(-|x|)) + max(x, 0)``; at ``x = 0`` the subgradient
    conventions of ``abs`` (0) and ``maximum`` (a tie shares 1/2) give the
    true derivative 1/2.

    >>> print(round(float(softplus(0.0)), 6))
    0.693147
    """
    return add(log1p(exp(negative(abs(x)))), maximum(x, 0.0))


@composite()
def logsumexp(x, axis=None, keepdims: bool = False, b=None, return_sign: bool = False):
    """``log(sum(b * exp(x)))`` over ``axis``, stable for large values, as SciPy's.

    ``b`` scales each term (it may carry a derivative). With
    ``return_sign=True`` the result is ``(log|s|, sign(s))`` for the sum ``s``,
    which may then be negative; without it a negative sum gives NaN, as in
    SciPy.

    >>> print(round(float(logsumexp([1000.0, 1000.0])), 6))
    1000.693147
    >>> value, sign = logsumexp([0.0, 0.0], b=[1.0, -3.0], return_sign=True)
    >>> print(round(float(value), 6), sign)
    0.693147 -1.0
    """
    value = raw(x)
    dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
    if b is None and not return_sign and dtype.kind == "f":
        return _logsumexp(x, axis=axis, keepdims=keepdims)  # the same, as one primitive
    axes = normalize_axes(axis, ndim_of(x))
    shift = _stop_max(x, axes)
    terms = exp(subtract(x, shift))
    if b is not None:
        terms = multiply(b, terms)
    total = sum(terms, axis=axes, keepdims=True)
    sign = np.sign(raw(total))
    if return_sign:
        total = abs(total)
    out = add(log(total), shift)
    if not keepdims:
        out, sign = squeeze(out, axes), np.squeeze(sign, axes)
    return (out, sign) if return_sign else out


@composite()
def softmax(x, axis: int = -1):
    """``exp(x) / sum(exp(x))`` along ``axis``, stable for large values.

    >>> print(softmax([0.0, 0.0]))
    [0.5 0.5]
    """
    axes = normalize_axes(axis, ndim_of(x))
    e = exp(subtract(x, _stop_max(x, axes)))
    return divide(e, sum(e, axis=axes, keepdims=True))


@composite()
def log_softmax(x, axis: int = -1):
    """``log(softmax(x))`` along ``axis``, computed without forming the softmax.

    >>> print(log_softmax([0.0, 0.0]).round(6))
    [-0.693147 -0.693147]
    """
    axes = normalize_axes(axis, ndim_of(x))
    # (x - m) - log(sum(exp(x - m))): the shift m cancels, so it is never added back.
    shifted = subtract(x, _stop_max(x, axes))
    return subtract(shifted, log(sum(exp(shifted), axis=axes, keepdims=True)))


def _squared_magnitudes(x):
    """``|x|²`` elementwise: ``x * x``, or ``Re(x conj(x))`` for complex entries (real)."""
    return real(multiply(x, conj(x))) if np.asarray(raw(x)).dtype.kind == "c" else multiply(x, x)


def _flat_squares(x):
    """``Σ |x|²`` over all elements as numpy's ``norm`` sums it: the flattened array's dot
    product with itself (the real and imaginary parts' for complex), so the value is
    numpy's to the last bit, which a pairwise ``sum`` of ``x * x`` is not."""
    flat = reshape(x, (-1,))
    if np.asarray(raw(x)).dtype.kind == "c":
        parts = real(flat), imag(flat)
        return add(matmul(parts[0], parts[0]), matmul(parts[1], parts[1]))
    return matmul(flat, flat)


def _euclidean(squares):
    """``sqrt(squares)`` with derivative 0 where ``squares`` is 0 (a subgradient), not NaN."""
    positive = np.not_equal(raw(squares), 0)  # NaN passes, to give NaN
    # Keep sqrt away from 0, where its derivative is infinite, then select 0.
    return where(positive, sqrt(where(positive, squares, 1.0)), 0.0)


def _vector_norm(x, ord, axes: tuple[int, ...], keepdims: bool):
    if ord is None or ord == 2:
        return _euclidean(sum(_squared_magnitudes(x), axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r} is a matrix norm; give axis two axes for it")
    if ord == np.inf:
        return max(abs(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min(abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        # The count of non-zero entries: piecewise constant, so its derivative is 0.
        return np.sum(np.not_equal(raw(x), 0), axis=axes, keepdims=keepdims).astype(float)
    if ord == 1:
        return sum(abs(x), axis=axes, keepdims=keepdims)
    total = sum(power(abs(x), float(ord)), axis=axes, keepdims=keepdims)
    if ord < 0:
        return power(total, 1.0 / ord)
    positive = np.not_equal(raw(total), 0)
    return where(positive, power(where(positive, total, 1.0), 1.0 / ord), 0.0)


def _matrix_norm(x, ord, rows: int, columns: int, keepdims: bool):
    n = ndim_of(x)
    if ord in (None, "fro", "f"):
        out = _euclidean(sum(_squared_magnitudes(x), axis=(rows, columns)))
    elif ord in ("nuc", 2, -2):
        # The two axes last (rows, then columns), as svdvals reads them.
        kept = [a for a in range(-n, 0) if a not in (rows, columns)]
        values = svdvals(transpose(x, tuple(a % n for a in (*kept, rows, columns))))
        if ord == "nuc":
            out = sum(values, axis=-1)
        else:
            out = getitem(values, (Ellipsis, 0 if ord == 2 else -1))
    elif ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum of |x|; inf: the largest row sum (negated: the smallest).
        summed, other = (rows, columns) if ord in (1, -1) else (columns, rows)
        sums = sum(abs(x), axis=summed, keepdims=True)
        pick = max if ord in (1, np.inf) else min
        out = squeeze(pick(sums, axis=other, keepdims=True), (rows, columns))
    else:
        raise ValueError(
            f"norm: ord={ord!r} is not a matrix norm; use 'fro', 'nuc', 1, -1, 2, -2, "
            "inf or -inf, or give one axis for a vector norm"
        )
    return expand_dims(out, tuple(sorted((rows, columns)))) if keepdims else out


@composite(numpy=("linalg.norm",), cases=[(((6, 5),), {"ord": "fro"}), (((7,),), {"ord": 3})])
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """The vector or matrix norm, as ``np.linalg.norm``.

    With one axis (or a 1-D ``x``): ``ord`` None or 2 (Euclidean), any other
    number p (``sum(|x|**p)**(1/p)``), ``inf``/``-inf`` (largest/smallest
    ``|x|``) or 0 (the count of non-zeros, derivative 0). With two axes (or
    a 2-D ``x`` and an ``ord``): ``'fro'``, ``'nuc'`` (sum of singular
    values), 2/-2 (largest/smallest singular value), 1/-1 (largest/smallest
    column sum of ``|x|``) or ``inf``/``-inf`` (row sums). With neither: the
    Euclidean norm of all elements. Euclidean and p-norms have derivative 0 at
    the zero vector (a subgradient), not NaN; the spectral norm needs a
    largest singular value of its own.

    >>> print(norm([3.0, 4.0]))
    5.0
    >>> print(round(float(norm([[1.0, 2.0], [3.0, 4.0]], 2)), 6))
    5.464986
    """
    n = ndim_of(x)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and n == 2) or (ord == 2 and n == 1):
            out = _euclidean(_flat_squares(x))
            return reshape(out, (1,) * n) if keepdims else out
        if n not in (1, 2):
            raise ValueError(
                f"norm: an ord needs a 1-D or 2-D array, got shape {shape_of(x)}; "
                "give axis to choose a vector or matrix norm"
            )
        axis = tuple(range(n))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, normalize_axes(axes, n), keepdims)
    if len(axes) == 2:
        rows, columns = (a - n if a >= 0 else a for a in map(int, axes))
        normalize_axes(axes, n)  # refuses axes out of range or named twice
        return _matrix_norm(x, ord, rows, columns, keepdims)
    raise ValueError(f"norm: axis {axis!r} names {len(axes)} axes; give one or two")


@composite(numpy=("linalg.matrix_norm",), cases=[(((3, 4),), {}), (((2, 3, 3),), {"ord": 1})])
def matrix_norm(x, keepdims: bool = False, ord="fro"):
    """The matrix norm over the last two axes, as numpy 2's ``np.linalg.matrix_norm``
    (``ord`` as :func:`norm`'s for two axes).

    >>> print(matrix_norm([[3.0, 0.0], [0.0, 4.0]]))
    5.0
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@composite(
    numpy=("linalg.vector_norm",), cases=[(((3, 4),), {}), (((3, 4),), {"axis": 0, "ord": 3})]
)
def vector_norm(x, axis=None, keepdims: bool = False, ord=2):
    """The vector norm over ``axis`` (all elements, as one vector, by default), as numpy 2's
    ``np.linalg.vector_norm`` (``ord`` any number, ``inf`` or ``-inf``).

    >>> print(vector_norm([[3.0], [4.0]]))
    5.0
    """
    if axis is None:
        out = norm(reshape(x, (-1,)), ord=ord)
        return reshape(out, (1,) * ndim_of(x)) if keepdims else out
    axes = normalize_axes(axis, ndim_of(x))
    if len(axes) == 1:
        return norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    kept = tuple(a for a in range(-ndim_of(x), 0) if a not in axes)
    moved = reshape(transpose(x, (*kept, *axes)), (*(shape_of(x)[a] for a in kept), -1))
    out = norm(moved, ord=ord, axis=-1)
    return expand_dims(out, axes) if keepdims else out


@composite()
def stack(arrays, axis: int = 0):
    """Join arrays along a new axis, as ``np.stack``.

    >>> print(stack([[1.0, 2.0], [3.0, 4.0]], axis=1))
    [[1. 3.]
     [2. 4.]]
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack needs at least one array")
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


@composite()
def outer(x, y):
    """Outer product of two vectors (inputs are flattened), as ``np.outer``.

    >>> print(outer([1.0, 2.0], [3.0, 4.0]))
    [[3. 4.]
     [6. 8.]]
    """
    return multiply(reshape(x, (-1, 1)), reshape(y, (1, -1)))


@composite(method="flatten")
def flatten(x):
    """The elements as a 1-D array, as ``ndarray.flatten``.

    >>> print(flatten([[1.0, 2.0], [3.0, 4.0]]))
    [1. 2. 3. 4.]
    """
    return reshape(x, (-1,))
