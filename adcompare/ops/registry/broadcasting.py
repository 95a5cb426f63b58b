"""Broadcasting, tangent lanes and axes: the shape bookkeeping rules share."""

from __future__ import annotations

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.ops.registry.records import OPS
from adcompare.ops.registry.values import ndim_of, shape_of


def broadcast_view(x, shape):
    """``np.broadcast_to(x, shape)``: a read-only view with zero strides.

    A contiguous array's view is built straight from its strides, which costs
    a quarter of ``np.broadcast_to``'s argument handling (sum's derivative
    calls this on every backward sweep); anything else goes to numpy.

    >>> view = broadcast_view(np.array([[1.0], [2.0]]), (3, 2, 2))
    >>> view.tolist() == np.broadcast_to([[1.0], [2.0]], (3, 2, 2)).tolist()
    True
    >>> view.strides, view.flags.writeable
    ((0, 8, 0), False)
    """
    if type(x) is not ndarray:
        if not isinstance(x, np.generic):
            return np.broadcast_to(x, shape)
        x = np.asarray(x)  # a numpy scalar, as a reduction over every axis gives
    if not x.flags.c_contiguous:
        return np.broadcast_to(x, shape)
    lead = len(shape) - x.ndim
    strides = [0] * lead
    for n, m, stride in zip(x.shape, shape[lead:], x.strides):
        strides.append(0 if n == 1 and m != 1 else stride)
    view = ndarray(shape, x.dtype, x, 0, tuple(strides))
    view.flags.writeable = False
    return view


def lane_count(tangent, primal) -> int:
    """How many leading lane axes ``tangent`` has over ``primal`` (0 or 1)."""
    return ndim_of(tangent) - ndim_of(primal)


def pad_lanes(tangent, primal_ndim: int, target_ndim: int):
    """Insert size-1 axes after the lane axis so the tangent has ``target_ndim``.

    A lane-carrying tangent of a rank-``r`` primal has rank ``r + 1``; for
    numpy broadcasting to align it with a rank-``target_ndim`` result, the
    primal part must be left-padded with ones, after the lanes.
    """
    missing = target_ndim - primal_ndim
    if missing <= 0:
        return tangent
    shape = shape_of(tangent)
    return OPS["reshape"].fn(tangent, shape[:1] + (1,) * missing + shape[1:])


def unbroadcast(value, shape: tuple[int, ...]):
    """Sum ``value`` down to ``shape``: the adjoint of numpy broadcasting.

    >>> import numpy as np
    >>> unbroadcast(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    value_shape = shape_of(value)
    shape = tuple(shape)
    if value_shape == shape:
        return value
    lead = len(value_shape) - len(shape)
    inner = tuple(lead + i for i, n in enumerate(shape) if n == 1 and value_shape[lead + i] != 1)
    axes = tuple(range(lead)) + inner
    if axes:
        # Summing away leading axes only (no keepdims) leaves exactly ``shape``.
        axes = tuple(a - len(value_shape) for a in axes)
        value = OPS["sum"].fn.prepared(value, axis=axes, keepdims=bool(inner))
    return value if shape_of(value) == shape else OPS["reshape"].fn.prepared(value, shape=shape)


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Turn an ``axis`` argument into a sorted tuple of negative axes.

    Negative axes count from the end, so they stay right when a lane axis is
    put in front.

    >>> normalize_axes(0, 3), normalize_axes(None, 2), normalize_axes((-1, 1), 3)
    ((-3,), (-2, -1), (-2, -1))
    """
    if axis is None:
        return tuple(range(-ndim, 0))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(
                f"axis {a} is out of range for an array of rank {ndim}; "
                f"use an axis between {-ndim} and {ndim - 1}"
            )
        out.append(a - ndim if a >= 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis!r} names the same axis twice")
    return tuple(sorted(out))
