"""Joining arrays along an axis: ``concatenate``, whose adjoint slices the cotangent.

Like the shape primitives (:mod:`adcompare.ops.shape`) it is linear: its JVP
joins the tangents, with zeros for constant arguments, and each argument's VJP
is its slice of the output's cotangent.
"""

from __future__ import annotations

import numpy as np

from adcompare.ops.links import Links, element_numbers
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    defop,
    normalize_axes,
    public_face,
    raw,
    shape_of,
)
from adcompare.ops.shape import _lanes, broadcast_to, getitem, reshape


def _prepare_concatenate(*arrays, axis=0):
    if not arrays:
        raise ValueError("concatenate needs at least one array")
    shapes = [shape_of(a) for a in arrays]
    n = len(shapes[0])
    if n == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    (axis,) = normalize_axes(axis, n)

    def others(shape):
        return shape[: n + axis] + shape[n + axis + 1 :]

    if any(len(s) != n or others(s) != others(shapes[0]) for s in shapes):
        raise ValueError(
            f"concatenate: shapes {shapes} differ outside axis {axis}; all arrays "
            "must have the same shape except along the joining axis"
        )
    return {"axis": axis, "sizes": tuple(s[axis] for s in shapes)}


def _concatenate_jvp(out, arrays, tangents, axis, sizes):
    """Join the tangents; constant arguments contribute zeros of their shape."""
    given = [(t, a) for t, a in zip(tangents, arrays) if t is not None]
    lanes = max((_lanes(t, a) for t, a in given), key=len)
    dtype = np.result_type(*[raw(t) for t, _ in given])
    pieces = [
        np.zeros(lanes + shape_of(a), dtype=dtype)
        if t is None
        else (t if _lanes(t, a) == lanes else broadcast_to(t, lanes + shape_of(a)))
        for t, a in zip(tangents, arrays)
    ]
    return _concatenate(*pieces, axis=axis)


def _concatenate_vjp(i, out, *rest, axis, sizes):
    out_bar = rest[-1]
    start = sum(sizes[:i])
    return getitem(
        out_bar, (Ellipsis, slice(start, start + sizes[i])) + (slice(None),) * (-axis - 1)
    )


def _concatenate_sparsity(out, *arrays, local, axis, sizes):
    """Each output element is one element of one argument: split the output's numbers."""
    pieces = np.split(element_numbers(shape_of(out)), np.cumsum(sizes)[:-1], axis=axis)
    return Links(tuple((piece.ravel(), np.arange(piece.size)) for piece in pieces))


_concatenate = defop(
    "concatenate",
    lambda *arrays, axis, sizes: np.concatenate(arrays, axis=axis),
    batch=LEADING_AXIS,
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    nargs=None,
    saves=(),
    prepare=_prepare_concatenate,
    cases=[
        (((2, 3), (4, 3)), {"axis": 0}),
        (((2, 3), (2, 1), (2, 2)), {"axis": 1}),
        (((3,),), {}),
    ],
    label="Cat",
    sym=lambda *arrays, axis, sizes: np.concatenate(
        [np.asarray(a, dtype=object) for a in arrays], axis=axis
    ),
    jvp=_concatenate_jvp,
    vjp=_concatenate_vjp,
    doc="Join arrays along an existing axis (the arrays as separate arguments).",
    sparsity=_concatenate_sparsity,
)


@public_face(_concatenate)
def concatenate(arrays, axis: int = 0):
    """Join a sequence of arrays along an existing axis, as ``np.concatenate``.

    ``axis=None`` joins the arrays flattened, as numpy does.

    >>> print(concatenate([[1.0], [2.0, 3.0]]))
    [1. 2. 3.]
    >>> print(concatenate([[[1.0, 2.0]], [3.0]], axis=None))
    [1. 2. 3.]
    """
    if axis is None:
        arrays, axis = [reshape(a, (-1,)) for a in arrays], 0
    return _concatenate(*arrays, axis=axis)
