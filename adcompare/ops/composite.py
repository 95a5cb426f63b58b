"""Composite ops: built from primitives, so they need no derivative rules.

Each is differentiable in every mode, to every order, because its parts are.
``COMPOSITES`` lists them, each with where users reach it (the method a box
gets, numpy's names for it, whether command-line formulas accept it), so the
engines and the tests iterate over them as they do over ``OPS``.
"""

from __future__ import annotations

import math

import numpy as np

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
    sqrt,
    subtract,
    tanh,
    where,
)
from adcompare.ops.linalg import matmul
from adcompare.ops.reductions import max, sum
from adcompare.ops.registry import (
    composite,
    ndim_of,
    normalize_axes,
    raw,
    shape_of,
)
from adcompare.ops.shape import concatenate, expand_dims, reshape, squeeze


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


def _stop_max(x, axis):
    """The maximum along ``axis`` as a constant, replaced by 0 where infinite.

    Subtracting a constant before ``exp`` changes nothing mathematically, so
    the shift needs no derivative; it only keeps ``exp`` from overflowing.
    """
    shift = np.max(raw(x), axis=axis, keepdims=True)
    return np.where(np.isfinite(shift), shift, 0.0)


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


@composite(numpy=("linalg.norm",))
def norm(x, ord=2, axis=None, keepdims: bool = False):
    """Vector norm over ``axis``: ``ord`` 2 (Euclidean), 1, or ``inf``.

    The Euclidean norm has derivative 0 at the zero vector (a subgradient),
    not NaN.

    >>> print(norm([3.0, 4.0]))
    5.0
    """
    axes = normalize_axes(axis, ndim_of(x))
    if ord == 1:
        return sum(abs(x), axis=axes, keepdims=keepdims)
    if ord in (np.inf, "inf"):
        return max(abs(x), axis=axes, keepdims=keepdims)
    if ord != 2:
        raise ValueError(f"norm: ord={ord!r} is not supported; use 1, 2 or numpy.inf")
    squares = sum(multiply(x, x), axis=axes, keepdims=keepdims)
    positive = np.greater(raw(squares), 0)
    # Keep sqrt away from 0, where its derivative is infinite, then select 0.
    return where(positive, sqrt(where(positive, squares, 1.0)), 0.0)


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
def dot(x, y):
    """Dot product as ``np.dot`` for scalars, vectors and matrices.

    >>> print(dot([1.0, 2.0], [3.0, 4.0]))
    11.0
    """
    if ndim_of(x) == 0 or ndim_of(y) == 0:
        return multiply(x, y)
    if ndim_of(x) > 2 or ndim_of(y) > 2:
        raise ValueError(
            f"dot: shapes {shape_of(x)} and {shape_of(y)}: arrays above 2-D are not "
            "supported; use matmul for batched products"
        )
    return matmul(x, y)


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
