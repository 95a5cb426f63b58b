"""Shape primitives: reshape, transpose, broadcasting and indexing.

All of them are linear, so each JVP rule is the op itself applied to the
tangent, with the lane axis kept in front. Indexing and ``scatter_add`` are
each other's adjoints; repeated indices accumulate (``np.add.at``).
Joining arrays is :mod:`adcompare.ops.joining`.
"""

from __future__ import annotations

import math

import numpy as np

from adcompare.ops.links import Links, element_numbers
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    SELECTS,
    Box,
    Hints,
    broadcast_view,
    defop,
    keep_number,
    lane_count,
    ndim_of,
    normalize_axes,
    pad_lanes,
    raw,
    shape_of,
    unbroadcast,
)
from adcompare.ops.registry.decisions import INDEX_PARAMETER
from adcompare.ops.scattering import add_at
from adcompare.runtime.batch_arrays import BatchArray, mark_as_index, per_example_index


def _lanes(tangent, primal) -> tuple[int, ...]:
    """The shape of the lane axes in front of a tangent."""
    return shape_of(tangent)[: lane_count(tangent, primal)]


# --- reshape -------------------------------------------------------------------


def _prepare_reshape(x, shape):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    size = math.prod(shape_of(x))
    if -1 in shape:
        if shape.count(-1) > 1:
            raise ValueError(f"reshape: shape {shape} has more than one -1; give at most one")
        known = -math.prod(shape)  # the product of the other entries
        if known <= 0 or size % known:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {shape_of(x)} ({size} elements) "
                f"into shape {shape}"
            )
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise ValueError(
            f"reshape: cannot reshape an array of shape {shape_of(x)} ({size} elements) "
            f"into shape {shape} ({math.prod(shape)} elements)"
        )
    return {"shape": shape}


reshape = defop(
    "reshape",
    lambda x, shape: np.asarray(x).reshape(shape),
    batch=lambda args, batched, shape: reshape(args[0], shape_of(args[0])[:1] + shape),
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_reshape,
    cases=[
        (((3, 4),), {"shape": (2, 6)}),
        (((2, 3, 4),), {"shape": (-1, 4)}),
        (((),), {"shape": (1, 1)}),
    ],
    label="Reshape",
    sym=lambda x, shape: np.reshape(np.asarray(x, dtype=object), shape),
    jvp=lambda out, x, x_dot, shape: reshape(x_dot, _lanes(x_dot, x) + shape),
    vjp=lambda out, x, out_bar, shape: reshape.prepared(out_bar, shape=shape_of(x)),
    doc="Give an array a new shape with the same elements (one entry may be -1).",
    example="reshape([1.0, 2.0, 3.0, 4.0], (2, 2)) -> [[1. 2.]\n [3. 4.]]",
    sparsity=SELECTS,
)


# --- transpose -----------------------------------------------------------------


def _prepare_transpose(x, axes=None):
    n = ndim_of(x)
    if axes is None:
        return {"axes": tuple(range(n - 1, -1, -1))}
    axes = tuple(int(a) % n if n else int(a) for a in axes)
    if sorted(axes) != list(range(n)):
        raise ValueError(
            f"transpose: axes {axes} are not a permutation of the {n} axes of an array "
            f"of shape {shape_of(x)}"
        )
    return {"axes": axes}


def _inverse(axes: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``axes``.

    >>> _inverse((2, 0, 1))
    (1, 2, 0)
    """
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


def _shift(axes, lanes):
    return tuple(range(lanes)) + tuple(a + lanes for a in axes)


transpose = defop(
    "transpose",
    lambda x, axes: np.asarray(x).transpose(axes),
    batch=lambda args, batched, axes: transpose(args[0], _shift(axes, 1)),
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_transpose,
    cases=[
        (((3, 4),), {}),
        (((2, 3, 4),), {"axes": (1, 0, 2)}),
        (((2, 3, 4),), {"axes": (2, 0, 1)}),
    ],
    method="transpose",
    label="Permute",
    sym=lambda x, axes: np.transpose(np.asarray(x, dtype=object), axes),
    jvp=lambda out, x, x_dot, axes: transpose(x_dot, _shift(axes, lane_count(x_dot, x))),
    vjp=lambda out, x, out_bar, axes: transpose.prepared(out_bar, axes=_inverse(axes)),
    doc="Permute the axes (reverse them by default), as ``np.transpose``.",
    example="transpose([[1.0, 2.0]]) -> [[1.]\n [2.]]",
    sparsity=SELECTS,
)


# --- broadcast_to --------------------------------------------------------------


def _prepare_broadcast(x, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    source = shape_of(x)
    lead = len(shape) - len(source)
    # numpy's rule, checked here because np.broadcast_shapes costs more than the op.
    if (
        lead < 0
        or min(shape, default=0) < 0
        or any(n != 1 and n != m for n, m in zip(source, shape[lead:]))
    ):
        raise ValueError(f"broadcast_to: cannot broadcast shape {source} to shape {shape}")
    return {"shape": shape}


# --- batching helpers (see adcompare.ops.batching) ------------------------------------


def pad_batched(value, rank: int):
    """A batched value with size-1 axes after the batch axis, up to ``rank`` per example.

    >>> pad_batched(np.ones((5, 3)), 3).shape
    (5, 1, 1, 3)
    """
    shape = shape_of(value)
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return value
    return reshape(value, shape[:1] + (1,) * missing + shape[1:])


def broadcast_batch(args, batched) -> tuple:
    """Every argument with the batch axis: the unbatched ones broadcast along it."""
    size = next(shape_of(a)[0] for a, b in zip(args, batched) if b)
    return tuple(a if b else broadcast_to(a, (size,) + shape_of(a)) for a, b in zip(args, batched))


def _broadcast_batch(args, batched, shape):
    return broadcast_to(pad_batched(args[0], len(shape)), shape_of(args[0])[:1] + shape)


def _broadcast_jvp(out, x, x_dot, shape):
    lanes = _lanes(x_dot, x)
    padded = pad_lanes(x_dot, ndim_of(x), len(shape)) if lanes else x_dot
    return broadcast_to(padded, lanes + shape)


broadcast_to = defop(
    "broadcast_to",
    broadcast_view,
    batch=_broadcast_batch,
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_broadcast,
    cases=[
        (((3, 1),), {"shape": (2, 3, 4)}),
        (((),), {"shape": (3,)}),
        (((4,),), {"shape": (3, 4)}),
    ],
    label="Expand",
    sym=lambda x, shape: np.broadcast_to(np.asarray(x, dtype=object), shape),
    jvp=_broadcast_jvp,
    vjp=lambda out, x, out_bar, shape: unbroadcast(out_bar, shape_of(x)),
    doc="Repeat an array along new or size-1 axes to ``shape``, as ``np.broadcast_to``.",
    example="broadcast_to(1.0, (2,)) -> [1. 1.]",
    sparsity=SELECTS,
)


# --- expand_dims / squeeze ------------------------------------------------------


def _prepare_expand(x, axis):
    count = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    return {"axis": normalize_axes(axis, ndim_of(x) + count)}


expand_dims = defop(
    "expand_dims",
    lambda x, axis: np.expand_dims(x, axis),
    batch=LEADING_AXIS,
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_expand,
    cases=[(((3, 4),), {"axis": 1}), (((3,),), {"axis": (0, 2)}), (((),), {"axis": 0})],
    label="Unsqueeze",
    sym=lambda x, axis: np.expand_dims(np.asarray(x, dtype=object), axis),
    linear=lambda out, x, out_bar, axis: reshape.prepared(out_bar, shape=shape_of(x)),
    doc="Insert size-1 axes at ``axis`` (positions in the result).",
    example="expand_dims([1.0, 2.0], 0) -> [[1. 2.]]",
    sparsity=SELECTS,
)


def _prepare_squeeze(x, axis=None):
    shape = shape_of(x)
    if axis is None:
        return {"axis": tuple(i - len(shape) for i, n in enumerate(shape) if n == 1)}
    axis = normalize_axes(axis, len(shape))
    for a in axis:
        if shape[a] != 1:
            raise ValueError(
                f"squeeze: axis {a} of an array of shape {shape} has size {shape[a]}, not 1"
            )
    return {"axis": axis}


squeeze = defop(
    "squeeze",
    lambda x, axis: np.squeeze(x, axis),
    batch=LEADING_AXIS,
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_squeeze,
    cases=[(((3, 1, 4),), {}), (((1, 3),), {"axis": 0}), (((1, 1),), {"axis": -1})],
    method="squeeze",
    label="Squeeze",
    sym=lambda x, axis: np.squeeze(np.asarray(x, dtype=object), axis),
    linear=lambda out, x, out_bar, axis: reshape.prepared(out_bar, shape=shape_of(x)),
    doc="Remove size-1 axes (all of them by default).",
    example="squeeze([[1.0, 2.0]]) -> [1. 2.]",
    sparsity=SELECTS,
)


# --- indexing ----------------------------------------------------------------------


def _prepare_index(x, index):
    if type(index) is slice and shape_of(x):
        return {"index": (index,)}  # a slice of an axis that exists cannot be out of range
    if not isinstance(index, tuple):
        index = (index,)
    elif len(index) <= ndim_of(x) and all([type(item) is slice for item in index]):
        return {"index": index}  # slices of axes that exist: nothing to check
    parts = []
    checked = []  # the index as numpy reads it, masks whole, so that numpy checks their shapes
    for item in index:
        if type(item) is slice or type(item) is int:  # basic: nothing to convert
            parts.append(item)
            checked.append(item)
            continue
        if isinstance(item, Box):
            item = raw(item)
        if isinstance(item, BatchArray):
            if item.dtype.kind not in "iu":
                raise TypeError(
                    "vmap: a mask that differs from example to example selects a different "
                    "number of elements in each; select with adcompare.where, or index "
                    "outside vmap"
                )
            parts.append(item)  # integer positions per example (a sort's permutation)
            checked.append(item.view(np.ndarray))
            continue
        if isinstance(item, (np.ndarray, list, tuple, range, bool, np.bool_)):
            # A sequence inside the index is an integer array to numpy, and may repeat
            # a position: as an array, the derivative accumulates it (np.add.at).
            array = np.asarray(item)
            if array.size == 0 and array.dtype.kind == "f":
                array = array.astype(np.intp)  # () or range(0): no positions, to numpy
            if array.dtype == bool:
                checked.append(array)
                if array.ndim:
                    # A mask means the positions of its true entries (nonzero of the
                    # mask as given: compile's recording sees it and recomputes it).
                    parts.extend(np.nonzero(item))
                else:  # a boolean scalar is a 0-d mask to numpy (a new axis of 1 or 0)
                    parts.append(array)
                continue
            item = array
            if item.dtype.kind not in "iu":  # np.issubdtype(..., np.integer), for less
                raise IndexError(
                    f"index arrays must hold integers or booleans, not {item.dtype}; "
                    "convert with .astype(int)"
                )
        parts.append(item)
        checked.append(item)
    index = tuple(parts)
    try:
        np.empty(shape_of(x), dtype=np.bool_)[tuple(checked)]
    except IndexError as error:
        raise IndexError(f"getitem: {error} (array of shape {shape_of(x)})") from None
    return {"index": index}


def _lanes_last(value, lanes: int):
    n = ndim_of(value)
    return transpose(value, tuple(range(lanes, n)) + tuple(range(lanes)))


def _lanes_first(value, lanes: int):
    n = ndim_of(value)
    return transpose(value, tuple(range(n - lanes, n)) + tuple(range(n - lanes)))


def _lane_index(index: tuple, lanes: int) -> tuple:
    """``index`` extended to leave trailing lane axes untouched.

    Lanes go last rather than first because numpy moves the axes of
    separated advanced indices to the front: trailing full slices are never
    displaced.
    """
    tail = (slice(None),) * lanes
    if any(item is Ellipsis for item in index):
        return index + tail
    return index + (Ellipsis,) + tail


def _getitem_jvp(out, x, x_dot, index):
    lanes = lane_count(x_dot, x)
    if not lanes:
        return getitem(x_dot, index)
    moved = _lanes_last(x_dot, lanes)
    return _lanes_first(getitem(moved, _lane_index(index, lanes)), lanes)


def _sym_getitem(x, index):
    return np.asarray(x, dtype=object)[index]


def _getitem_accumulate(total, out, x, out_bar, index, how="add"):
    """Add ``x[index]``'s cotangent into ``total`` where it lands (``how``: see ``Hints``)."""
    advanced = any(isinstance(item, np.ndarray) for item in index)
    ranges = None if advanced or how != "negate_add" else _covered_ranges(index, total.shape)
    if how == "negate_add" and ranges is None:
        np.subtract(0.0, total, out=total)  # as 0 - total: zeros stay +0, as below
        how = "add"
    if advanced:  # integer arrays may repeat a position
        (np.subtract if how == "subtract" else np.add).at(total, index, out_bar)
    elif how == "add":
        total[index] += out_bar
    elif how == "subtract":
        total[index] -= out_bar
    else:  # the box becomes out_bar - total in one pass; only what lies outside is negated
        box = total[index]
        if isinstance(box, np.ndarray):
            np.subtract(out_bar, box, out=box)
        else:  # integers on every axis select one element, as a scalar
            total[index] = out_bar - box
        for slab in _outside(ranges):
            np.subtract(0.0, total[slab], out=total[slab])


def _getitem_value(x, index):
    per_example = per_example_index(index)
    if per_example is None:
        return np.asarray(x)[index]
    x = np.asarray(x)  # the same for every example: each reads its own positions
    return mark_as_index(index, np.broadcast_to(x, (len(per_example[0]), *x.shape))[per_example])


def _getitem_batch(args, batched, index):
    (x,) = args
    per_example = per_example_index(index)
    if per_example is not None:
        return getitem.prepared(x, index=per_example)
    return _lanes_first(getitem(_lanes_last(x, 1), _lane_index(index, 1)), 1)


getitem = defop(
    "getitem",
    _getitem_value,
    batch=_getitem_batch,
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_index,
    cases=[
        (((5,),), {"index": slice(None, None, -2)}),
        (((3, 4),), {"index": (1, slice(1, 3))}),
        (((3, 4),), {"index": (None, Ellipsis, 0)}),
        (((4,),), {"index": np.array([0, 2, 2, 1])}),
        (((3, 4),), {"index": (np.arange(3), np.array([0, 3, 3]))}),
        (((3, 4),), {"index": np.array([[True, False, True, True]] * 3)}),
        (((2, 3, 4),), {"index": ([0, 1], slice(None), [1, 2])}),
        (((2, 3, 4),), {"index": (Ellipsis, np.array([[0, 1], [3, 3]]))}),
        (((),), {"index": ()}),
    ],
    label="Index",
    sym=_sym_getitem,
    jvp=_getitem_jvp,
    vjp=lambda out, x, out_bar, index: scatter_add.prepared(
        out_bar, index=index, shape=shape_of(x)
    ),
    doc=(
        "numpy indexing ``x[index]``: integers, slices, ``None``, ``...``, integer "
        "arrays and boolean masks. Repeated indices accumulate in the derivative."
    ),
    example="getitem([1.0, 2.0, 3.0], slice(None, None, -1)) -> [3. 2. 1.]",
    hints=Hints(accumulate_vjp=_getitem_accumulate),
    sparsity=SELECTS,
    decided_by_values=(INDEX_PARAMETER,),
)


_WRITE_ONCE_FROM = 2**16


def _covered_ranges(index: tuple, shape: tuple) -> list[tuple[int, int]] | None:
    """Per axis, the range ``[lo, hi)`` a basic index writes, or None if it skips.

    A basic index of integers, step-1 slices, ``None`` and ``...`` writes a
    box; everything outside it is what the scatter must zero.
    """
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    ranges = []
    for item in index:
        axis = len(ranges)
        if item is None:
            continue
        if item is Ellipsis:
            ranges.extend((0, n) for n in shape[axis : axis + len(shape) - consumed])
            continue
        n = shape[axis]
        if isinstance(item, slice):
            positions = range(*item.indices(n))
            if len(positions) > 1 and abs(positions.step) != 1:
                return None
            ends = sorted((positions[0], positions[-1])) if positions else (0, -1)
            ranges.append((ends[0], ends[1] + 1))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            ranges.append((int(item) % n, int(item) % n + 1))
        else:
            return None  # not a basic index item: no box is known
    ranges.extend((0, n) for n in shape[len(ranges) :])
    return ranges


def _scatter_value(v, index, shape):
    v = np.asarray(v)
    dtype = np.result_type(v, np.float32)
    per_example = per_example_index(index)
    if per_example is not None:  # v is the same for every example; the positions differ
        out = np.zeros((len(per_example[0]), *shape), dtype=dtype)
        np.add.at(out, per_example, v)
        return mark_as_index(index, out)
    if any(isinstance(item, np.ndarray) for item in index):
        return add_at(v, index, shape, dtype)  # integer arrays may repeat a position
    # Small results: zeroing everything costs less than working out what to zero.
    ranges = _covered_ranges(index, shape) if math.prod(shape) >= _WRITE_ONCE_FROM else None
    if ranges is None:
        out = np.zeros(shape, dtype=dtype)
        out[index] = v  # basic indexing never repeats a position
        return out
    # Write the box once and zero only its complement, instead of zeroing everything
    # and then overwriting the box: one pass over the memory instead of two.
    out = np.empty(shape, dtype=dtype)
    out[index] = v
    for slab in _outside(ranges):
        out[slab] = 0
    return out


def _outside(ranges):
    """The slabs outside the box ``ranges``, each element in one: before and after
    the box along each axis, within the box on the axes before."""
    for axis, (lo, hi) in enumerate(ranges):
        inside = tuple(slice(a, b) for a, b in ranges[:axis])
        yield inside + (slice(0, lo),)
        yield inside + (slice(hi, None),)


def _prepare_scatter(v, *, index, shape):
    shape = tuple(int(n) for n in shape)
    return _prepare_index(np.empty(shape), index) | {"shape": shape}


def _scatter_jvp(out, v, v_dot, index, shape):
    lanes = lane_count(v_dot, v)
    if not lanes:
        return scatter_add(v_dot, index=index, shape=shape)
    moved = _lanes_last(v_dot, lanes)
    lane_shape = shape_of(v_dot)[:lanes]
    spread = scatter_add(moved, index=_lane_index(index, lanes), shape=shape + lane_shape)
    return _lanes_first(spread, lanes)


def _scatter_batch(args, batched, index, shape):
    (v,) = args
    batch_shape = shape_of(v)[:1]
    per_example = per_example_index(index)
    if per_example is not None:
        return scatter_add.prepared(v, index=per_example, shape=batch_shape + shape)
    spread = scatter_add(_lanes_last(v, 1), index=_lane_index(index, 1), shape=shape + batch_shape)
    return _lanes_first(spread, 1)


def _sym_scatter(v, index, shape):
    out = np.full(shape, 0, dtype=object)
    np.add.at(out, index, np.asarray(v, dtype=object))
    return out


def _scatter_sparsity(out, v, *, local, index, shape):
    """Each output element depends on the elements of ``v`` added into it."""
    targets = element_numbers(shape)[index]
    sources = np.broadcast_to(element_numbers(shape_of(v)), targets.shape)
    return Links(((targets.ravel(), sources.ravel()),))


scatter_add = defop(
    "scatter_add",
    _scatter_value,
    batch=_scatter_batch,
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_scatter,
    cases=[
        (((4,),), {"index": [0, 0, 2, 3], "shape": (5,)}),
        (((2,),), {"index": (slice(None), 1), "shape": (2, 3)}),
        (((2, 3),), {"index": ([0, 1], slice(None), [1, 1]), "shape": (2, 3, 4)}),
    ],
    label="IndexPut",
    sym=_sym_scatter,
    jvp=_scatter_jvp,
    vjp=lambda out, v, out_bar, index, shape: getitem(out_bar, index),
    doc=(
        "Zeros of ``shape`` with ``v`` added at ``index`` (repeats accumulate): the "
        "adjoint of indexing."
    ),
    example="scatter_add([1.0, 2.0], index=[0, 0], shape=(2,)) -> [3. 0.]",
    sparsity=_scatter_sparsity,
    decided_by_values=(INDEX_PARAMETER,),
)
