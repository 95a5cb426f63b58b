"""Statistics and differences as composites: var, std, median, quantile, average,
cumprod, diff.

Order statistics (median, quantile) go through ``sort``: the derivative of a
quantile flows to the one or two sorted elements it interpolates between,
with numpy's default (linear) interpolation weights.
"""

from __future__ import annotations

import math

import numpy as np

from adcompare.ops.complex_parts import conj, is_complex, real, refuse_complex
from adcompare.ops.composite import mean, stack
from adcompare.ops.elementwise import add, divide, multiply, sqrt, subtract, where
from adcompare.ops.joining import concatenate
from adcompare.ops.rearrange import ravel, sort
from adcompare.ops.reductions import sum
from adcompare.ops.registry import array_of, composite, ndim_of, normalize_axes, raw, shape_of
from adcompare.ops.registry.decisions import ORDER
from adcompare.ops.shape import broadcast_to, expand_dims, getitem, reshape, transpose

_AXES = [
    (((3, 4),), {}),
    (((3, 4),), {"axis": 0}),
    (((2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
]


def _count(x, axis) -> int:
    shape = shape_of(x)
    return math.prod(shape[a] for a in normalize_axes(axis, len(shape)))


@composite(method="var", cases=_AXES + [(((5,),), {"ddof": 1})])
def var(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """Variance over ``axis`` with ``n - ddof`` in the denominator, as ``np.var``
    (real for complex ``x``, as numpy's).

    >>> print(var([1.0, 2.0, 3.0, 4.0]))
    1.25
    """
    x = array_of(x)
    centred = subtract(x, mean(x, axis=axis, keepdims=True))
    # numpy's variance of complex values is real: the mean of |x - mean|².
    square = real(multiply(centred, conj(centred))) if is_complex(x) else multiply(centred, centred)
    total = sum(square, axis=axis, keepdims=keepdims)
    return divide(total, float(_count(x, axis) - ddof))


@composite(
    method="std", cases=_AXES + [(((5,),), {"ddof": 1}), (((),), {}), (((3, 1),), {"axis": 1})]
)
def std(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """Standard deviation over ``axis``, as ``np.std``: the square root of ``var``.

    Its derivative is infinite where the values are all equal (as in PyTorch),
    except over a single value (a 0-d ``x``, an axis of length 1): there the
    deviation from the mean is zero whatever the value, so the standard
    deviation is constant and its derivative 0, not ``sqrt``'s infinite slope at
    0 times the zero derivative of the variance (NaN).

    >>> print(std([1.0, 3.0]))
    1.0
    >>> import adcompare as ad
    >>> print(ad.grad(std)(2.0), ad.grad(std, mode="forward")(2.0))
    0.0 0.0
    """
    variance = var(x, axis=axis, ddof=ddof, keepdims=keepdims)
    return variance if _count(array_of(x), axis) == 1 else sqrt(variance)


@composite(
    cases=[
        (((6,),), {"weights": np.arange(1.0, 7.0)}),
        (((3, 4),), {"axis": 1, "weights": np.array([1.0, 2.0, 0.5, 1.0])}),
    ]
)
def average(x, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """Weighted mean over ``axis``, as ``np.average``; the weights may carry a derivative.

    1-D ``weights`` along a single ``axis`` are aligned with it, as numpy does.
    With ``returned=True`` the sum of the weights comes second.

    >>> print(average([1.0, 2.0, 4.0], weights=[1.0, 1.0, 2.0]))
    2.75
    """
    x = array_of(x)
    if weights is None:
        out = mean(x, axis=axis, keepdims=keepdims)
        total = float(_count(x, axis))
        return (out, np.full(shape_of(out), total)) if returned else out
    weights = array_of(weights)
    if shape_of(weights) != shape_of(x):
        if axis is None or ndim_of(weights) != 1:
            raise ValueError(
                f"average: weights of shape {shape_of(weights)} do not match x of shape "
                f"{shape_of(x)}; give weights shaped like x, or 1-D weights with one axis"
            )
        (axis_,) = normalize_axes(axis, ndim_of(x))
        weights = reshape(weights, (-1,) + (1,) * (-1 - axis_))
    total = sum(multiply(weights, np.ones(shape_of(x))), axis=axis, keepdims=keepdims)
    out = divide(sum(multiply(x, weights), axis=axis, keepdims=keepdims), total)
    return (out, total) if returned else out


def _pick(ordered, i: int, axis: int):
    return getitem(ordered, (Ellipsis, i) + (slice(None),) * (-1 - axis))


def _quantile_of_sorted(ordered, q: float, axis: int):
    """numpy's linear interpolation between the sorted elements around ``q``, step for
    step (its virtual index and its two-sided lerp), so that infinities give numpy's
    values too (``quantile([1, 2, inf], 0.5)`` is nan there: 2 + inf * 0)."""
    n = shape_of(ordered)[axis]
    position = (n - 1) * q  # numpy's virtual index for "linear", in its own form
    below = min(max(math.floor(position), 0), n - 1)
    fraction = position - below
    low, high = _pick(ordered, below, axis), _pick(ordered, min(below + 1, n - 1), axis)
    step = subtract(high, low)
    if fraction >= 0.5:
        return subtract(high, multiply(step, 1.0 - fraction))
    return add(low, multiply(step, fraction))


def _median_of_sorted(ordered, q: float, axis: int):
    """numpy's median: the middle element, or the mean of the middle two."""
    n = shape_of(ordered)[axis]
    middle = _pick(ordered, n // 2, axis)
    return middle if n % 2 else multiply(add(_pick(ordered, n // 2 - 1, axis), middle), 0.5)


def _order_statistic(name: str, x, qs, axis, keepdims: bool, of_sorted):
    """``of_sorted(ordered, q, axis)`` for each ``q`` of ``qs`` over one ``axis`` (the
    flattened array by default). ``sort`` puts NaN last, so a NaN anywhere along the
    axis is the last element: there the result is that NaN, as in numpy (the mask is
    taken from values, as every mask is). Complex values have no order: refused, as
    numpy refuses them."""
    x = array_of(x)
    refuse_complex(x, name)
    ndim = ndim_of(x)
    if axis is None:
        ordered, axis_ = sort(ravel(x)), -1
    else:
        (axis_,) = normalize_axes(axis, ndim)
        ordered = sort(x, axis=axis_)
    last = _pick(ordered, shape_of(ordered)[axis_] - 1, axis_)
    nan = np.isnan(raw(last))
    parts = [where(nan, last, of_sorted(ordered, float(q), axis_)) for q in qs.ravel()]
    if keepdims:
        kept = range(ndim) if axis is None else (axis_,)
        parts = [
            expand_dims(part, tuple(kept)) if axis is None else expand_dims(part, axis_)
            for part in parts
        ]
    if qs.ndim == 0:
        return parts[0]
    return stack(parts).reshape(qs.shape + shape_of(parts[0]))


def _over_axes(x, axis, keepdims: bool, reduce):
    """``reduce(joined)`` over several axes, as numpy takes a tuple: those axes joined
    into one, last, which ``reduce`` takes along ``axis=-1``."""
    ndim = ndim_of(x)
    axes = normalize_axes(axis, ndim)
    kept = [a for a in range(-ndim, 0) if a not in axes]
    moved = transpose(x, tuple(a % ndim for a in (*kept, *axes)))
    joined = reshape(moved, tuple(shape_of(x)[a] for a in kept) + (-1,))
    out = reduce(joined)
    return expand_dims(out, axes) if keepdims else out


@composite(
    cases=[
        (((7,),), {"q": 0.3}),
        (((3, 4),), {"q": [0.25, 0.5], "axis": 1}),
        (((3, 4),), {"q": 0.5, "axis": 0, "keepdims": True}),
    ],
    decided_by_values=(ORDER,),
)
def quantile(x, q, axis=None, keepdims: bool = False, method: str = "linear"):
    """The ``q``-th quantile(s) over one ``axis`` (the flattened array by default).

    As ``np.quantile`` with its default ``method="linear"``; several ``q``
    give a leading axis, as numpy does.

    >>> print(quantile([1.0, 2.0, 3.0, 4.0], 0.5))
    2.5
    """
    if method != "linear":
        raise ValueError(f"quantile: method {method!r} is not supported; use method='linear'")
    x = array_of(x)
    if isinstance(axis, (tuple, list)) and len(axis) > 1:
        return _over_axes(x, axis, keepdims, lambda joined: quantile(joined, q, axis=-1))
    qs = np.asarray(raw(q), dtype=float)
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"quantile: q must lie in [0, 1], got {q!r}")
    return _order_statistic("quantile", x, qs, axis, keepdims, _quantile_of_sorted)


@composite(
    cases=[(((7,),), {"q": 30.0}), (((3, 4),), {"q": 50.0, "axis": 1})],
    decided_by_values=(ORDER,),
)
def percentile(x, q, axis=None, keepdims: bool = False, method: str = "linear"):
    """The ``q``-th percentile(s), as ``np.percentile``: ``quantile`` at ``q / 100``.

    >>> print(percentile([1.0, 2.0, 3.0, 4.0], 50.0))
    2.5
    """
    return quantile(x, np.asarray(raw(q)) / 100.0, axis=axis, keepdims=keepdims, method=method)


@composite(
    cases=[(((7,),), {}), (((3, 4),), {"axis": 1}), (((3, 4),), {"axis": 0, "keepdims": True})],
    decided_by_values=(ORDER,),
)
def median(x, axis=None, keepdims: bool = False):
    """The median over ``axis`` (the flattened array by default), as ``np.median``.

    >>> print(median([3.0, 1.0, 2.0, 10.0]))
    2.5
    """
    x = array_of(x)
    if isinstance(axis, (tuple, list)) and len(axis) > 1:
        return _over_axes(x, axis, keepdims, lambda joined: median(joined, axis=-1))
    return _order_statistic("median", x, np.asarray(0.5), axis, keepdims, _median_of_sorted)


@composite(method="cumprod", cases=[(((5,),), {}), (((3, 4),), {"axis": 1})], domain=(-1.5, 1.5))
def cumprod(x, axis=None):
    """Running product along ``axis`` (of the flattened array by default), as ``np.cumprod``.

    Built as one multiplication per step along the axis, so its derivative is
    exact where elements are zero (no division by ``x``); it costs one op
    application per element of that axis.

    >>> print(cumprod([1.0, 2.0, 3.0]))
    [1. 2. 6.]
    """
    x = array_of(x)
    if axis is None:
        x, axis = ravel(x), -1
    (axis,) = normalize_axes(axis, ndim_of(x))
    n = shape_of(x)[axis]
    pick = lambda i: getitem(x, (Ellipsis, slice(i, i + 1)) + (slice(None),) * (-1 - axis))
    running = [pick(0)] if n else []
    for i in range(1, n):
        running.append(multiply(running[-1], pick(i)))
    return concatenate(running, axis=axis) if running else x


@composite(
    cases=[
        (((5,),), {}),
        (((3, 4),), {"n": 2, "axis": 1}),
        (((3, 4),), {"axis": 0, "prepend": 0.5}),
    ]
)
def diff(x, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``, as ``np.diff``.

    >>> print(diff([1.0, 4.0, 9.0, 16.0]))
    [3. 5. 7.]
    """
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff: order must be a non-negative integer, got n={n!r}")
    x = array_of(x)
    (axis,) = normalize_axes(axis, ndim_of(x))
    edge_shape = tuple(1 if i - ndim_of(x) == axis else d for i, d in enumerate(shape_of(x)))
    # A number is spread over the edge, as numpy does; an array must fit it already.
    edge = lambda value: broadcast_to(array_of(value), edge_shape) if not ndim_of(value) else value
    parts = ([edge(prepend)] if prepend is not None else []) + [x]
    parts += [edge(append)] if append is not None else []
    if len(parts) > 1:
        x = concatenate(parts, axis=axis)
    tail = (slice(None),) * (-1 - axis)
    for _ in range(n):
        x = subtract(
            getitem(x, (Ellipsis, slice(1, None)) + tail),
            getitem(x, (Ellipsis, slice(None, -1)) + tail),
        )
    return x
