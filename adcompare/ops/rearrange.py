"""numpy's functions that move, copy or fill elements, as composites.

A function that only moves, copies or fills elements (flip, roll, tile, pad,
diagonal, tril, take, split, the stacks, ...) is linear, and the index map
says everything about it: numpy's own function applied to the *positions*
``1..n`` of the input's elements (0 marking a filled place) gives, for each
output element, which input element it is. The output is then one gather
(``getitem`` of the flat input) and, where numpy fills, a ``where``; their
rules give every derivative, in both modes and to every order, with no rule
of its own. Repeated positions (``repeat``, ``tile``, ``pad``'s edges)
accumulate in the reverse sweep, as the scatter of ``getitem`` does.

Axis permutations (``swapaxes``, ``moveaxis``) and added axes (``atleast_2d``)
are views: they go through ``transpose`` and ``reshape`` instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.ops.elementwise import where
from adcompare.ops.joining import concatenate
from adcompare.ops.reductions import sum
from adcompare.ops.registry import OPS, Box, array_of, composite, normalize_axes, raw, shape_of
from adcompare.ops.registry.decisions import INDICES, ORDER, PARTITION_ORDER
from adcompare.ops.shape import (
    broadcast_to,
    getitem,
    reshape,
    scatter_add,
    transpose,
)

_ONE = [(((3, 4),), {})]


def _positions(shape: tuple[int, ...], start: int = 0) -> np.ndarray:
    """The positions ``start + 1 .. start + n`` of an array's elements, in its shape."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.arange(start + 1, start + size + 1).reshape(shape)


def _gather(flat, positions: np.ndarray, fill=0.0):
    """The elements of ``flat`` at ``positions`` (1-based), ``fill`` where a position is 0."""
    # positions read from values stay watched by the recorder, and per example inside vmap
    positions = np.asanyarray(positions)
    filled = positions == 0
    if not np.asarray(raw(filled)).any():
        return getitem(flat, positions - 1)
    taken = getitem(flat, np.where(filled, 0, positions - 1)) if shape_of(flat)[0] else 0.0
    return where(filled, fill, taken)


def _moved(x, numpy_fn: Callable, *args, fill=0.0, **kwargs):
    """``numpy_fn(x, *args, **kwargs)`` for a function that moves, copies or fills elements."""
    x = array_of(x)
    positions = numpy_fn(_positions(shape_of(x)), *args, **kwargs)
    flat = reshape(x, (-1,))
    if isinstance(positions, (list, tuple)):
        return [_gather(flat, p, fill) for p in positions]
    return _gather(flat, positions, fill)


def _moved_many(arrays, numpy_fn: Callable, *args, **kwargs):
    """``numpy_fn(arrays, ...)`` for a function that joins several arrays' elements."""
    arrays = [array_of(a) for a in arrays]
    if not arrays:
        raise ValueError(f"{numpy_fn.__name__} needs at least one array")
    offsets = np.cumsum([0] + [int(np.prod(shape_of(a), dtype=np.int64)) for a in arrays])
    positions = numpy_fn(
        [_positions(shape_of(a), int(start)) for a, start in zip(arrays, offsets)], *args, **kwargs
    )
    flat = concatenate([reshape(a, (-1,)) for a in arrays])
    return _gather(flat, positions)


# --- reordering ------------------------------------------------------------------------


@composite(method="ravel", cases=_ONE)
def ravel(x):
    """The elements as a 1-D array, in row-major order, as ``np.ravel``.

    >>> print(ravel([[1.0, 2.0], [3.0, 4.0]]))
    [1. 2. 3. 4.]
    """
    return reshape(array_of(x), (-1,))


@composite(cases=[(((3, 4),), {}), (((2, 3, 4),), {"axis": (0, 2)})])
def flip(x, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default), as ``np.flip``.

    >>> print(flip([1.0, 2.0, 3.0]))
    [3. 2. 1.]
    """
    x = array_of(x)
    n = len(shape_of(x))
    axes = normalize_axes(axis, n)
    return getitem(
        x, tuple(slice(None, None, -1) if i - n in axes else slice(None) for i in range(n))
    )


@composite(cases=_ONE)
def flipud(x):
    """Reverse the order of rows (axis 0), as ``np.flipud``.

    >>> print(flipud([1.0, 2.0]))
    [2. 1.]
    """
    return flip(x, 0)


@composite(cases=_ONE)
def fliplr(x):
    """Reverse the order of columns (axis 1), as ``np.fliplr``.

    >>> print(fliplr([[1.0, 2.0]]))
    [[2. 1.]]
    """
    return flip(x, 1)


@composite(cases=[(((3, 4),), {}), (((2, 3, 4),), {"k": 3, "axes": (2, 0)})])
def rot90(x, k: int = 1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``, as ``np.rot90``.

    >>> print(rot90([[1.0, 2.0], [3.0, 4.0]]))
    [[2. 4.]
     [1. 3.]]
    """
    return _moved(x, np.rot90, k, axes)


@composite(cases=[(((5,),), {"shift": 2}), (((3, 4),), {"shift": (1, -1), "axis": (0, 1)})])
def roll(x, shift, axis=None):
    """Shift elements cyclically along ``axis`` (the flattened array by default).

    >>> print(roll([1.0, 2.0, 3.0], 1))
    [3. 1. 2.]
    """
    return _moved(x, np.roll, shift, axis)


def _permuted(x, numpy_fn: Callable, *args):
    """``numpy_fn(x, *args)`` for a function that permutes axes: a ``transpose``.

    numpy's function applied to an array whose axes have distinct sizes
    (a broadcast view: no memory) shows the permutation in its shape.
    """
    x = array_of(x)
    sizes = tuple(range(2, len(shape_of(x)) + 2))
    moved = numpy_fn(np.broadcast_to(np.empty((), dtype=bool), sizes), *args)
    return transpose(x, [size - 2 for size in moved.shape])


@composite(method="swapaxes", cases=[(((2, 3, 4),), {"axis1": 0, "axis2": 2})])
def swapaxes(x, axis1: int, axis2: int):
    """Exchange two axes, as ``np.swapaxes``.

    >>> print(swapaxes([[1.0, 2.0]], 0, 1).shape)
    (2, 1)
    """
    return _permuted(x, np.swapaxes, axis1, axis2)


@composite(cases=[(((2, 3, 4),), {"source": 0, "destination": -1})])
def moveaxis(x, source, destination):
    """Move axes to new positions, the others keeping their order, as ``np.moveaxis``.

    >>> print(moveaxis(np.zeros((2, 3, 4)), 0, -1).shape)
    (3, 4, 2)
    """
    return _permuted(x, np.moveaxis, source, destination)


@composite(cases=[(((2, 3, 4),), {"axis": 2})])
def rollaxis(x, axis: int, start: int = 0):
    """Roll ``axis`` backwards until it lies before ``start``, as ``np.rollaxis``.

    >>> print(rollaxis(np.zeros((2, 3, 4)), 2).shape)
    (4, 2, 3)
    """
    return _permuted(x, np.rollaxis, axis, start)


# --- adding axes and joining ---------------------------------------------------------


def _at_least(numpy_fn: Callable, arrays):
    out = [
        reshape(a, numpy_fn(np.empty(shape_of(a), dtype=bool)).shape) for a in map(array_of, arrays)
    ]
    return out[0] if len(out) == 1 else out


@composite(cases=[(((),), {}), (((3,),), {})])
def atleast_1d(*arrays):
    """The arrays with at least one axis, as ``np.atleast_1d``.

    >>> print(atleast_1d(2.0))
    [2.]
    """
    return _at_least(np.atleast_1d, arrays)


@composite(cases=[(((3,),), {}), (((2, 3),), {})])
def atleast_2d(*arrays):
    """The arrays with at least two axes, as ``np.atleast_2d``.

    >>> print(atleast_2d([1.0, 2.0]))
    [[1. 2.]]
    """
    return _at_least(np.atleast_2d, arrays)


@composite(cases=[(((3,),), {}), (((2, 3),), {})])
def atleast_3d(*arrays):
    """The arrays with at least three axes, as ``np.atleast_3d``.

    >>> print(atleast_3d([1.0, 2.0]).shape)
    (1, 2, 1)
    """
    return _at_least(np.atleast_3d, arrays)


_TWO = [(((2, 3), (2, 3)), {}), (((3,), (3,)), {})]


@composite(cases=_TWO, listed=True)
def vstack(arrays, dtype=None, casting: str = "same_kind"):
    """Stack arrays row-wise (along axis 0, after ``atleast_2d``), as ``np.vstack``.

    >>> print(vstack([[1.0, 2.0], [3.0, 4.0]]))
    [[1. 2.]
     [3. 4.]]
    """
    out = _moved_many(arrays, np.vstack)
    return out if dtype is None else out.astype(dtype, casting=casting)


@composite(cases=_TWO, listed=True)
def hstack(arrays):
    """Stack arrays column-wise (along axis 1, or 0 for 1-D), as ``np.hstack``.

    >>> print(hstack([[1.0], [2.0, 3.0]]))
    [1. 2. 3.]
    """
    return _moved_many(arrays, np.hstack)


@composite(cases=_TWO, listed=True)
def dstack(arrays):
    """Stack arrays depth-wise (along axis 2, after ``atleast_3d``), as ``np.dstack``.

    >>> print(dstack([[1.0], [2.0]]).shape)
    (1, 1, 2)
    """
    return _moved_many(arrays, np.dstack)


@composite(cases=_TWO, listed=True)
def column_stack(arrays):
    """Stack 1-D arrays as columns of a 2-D array, as ``np.column_stack``.

    >>> print(column_stack([[1.0, 2.0], [3.0, 4.0]]))
    [[1. 3.]
     [2. 4.]]
    """
    return _moved_many(arrays, np.column_stack)


@composite(cases=[(((2, 3), (4,)), {}), (((2, 3), (1, 3)), {"axis": 0})])
def append(x, values, axis=None):
    """``values`` appended to ``x`` (both flattened unless ``axis`` is given), as ``np.append``.

    >>> print(append([1.0], [2.0, 3.0]))
    [1. 2. 3.]
    """
    return _moved_many([x, values], lambda parts: np.append(*parts, axis=axis))


# --- splitting -------------------------------------------------------------------------


@composite(
    cases=[
        (((6, 2),), {"indices_or_sections": 3}),
        (((4, 5),), {"indices_or_sections": [1, 3], "axis": 1}),
    ]
)
def split(x, indices_or_sections, axis: int = 0):
    """A list of sub-arrays, as ``np.split`` (equal sections, or at the given indices).

    >>> print(split([1.0, 2.0, 3.0, 4.0], 2))
    [array([1., 2.]), array([3., 4.])]
    """
    return _moved(x, np.split, indices_or_sections, axis)


@composite(cases=[(((5, 2),), {"indices_or_sections": 3})])
def array_split(x, indices_or_sections, axis: int = 0):
    """Like ``split``, but sections may differ in size by one, as ``np.array_split``.

    >>> print(array_split([1.0, 2.0, 3.0], 2))
    [array([1., 2.]), array([3.])]
    """
    return _moved(x, np.array_split, indices_or_sections, axis)


@composite(cases=[(((4, 3),), {"indices_or_sections": 2})])
def vsplit(x, indices_or_sections):
    """Split along axis 0, as ``np.vsplit``.

    >>> print(len(vsplit(np.zeros((4, 3)), 2)))
    2
    """
    return _moved(x, np.vsplit, indices_or_sections)


@composite(cases=[(((3, 4),), {"indices_or_sections": 2})])
def hsplit(x, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays), as ``np.hsplit``.

    >>> print(len(hsplit(np.zeros((3, 4)), 2)))
    2
    """
    return _moved(x, np.hsplit, indices_or_sections)


@composite(cases=[(((2, 3, 4),), {"indices_or_sections": 2})])
def dsplit(x, indices_or_sections):
    """Split along axis 2, as ``np.dsplit``.

    >>> print(len(dsplit(np.zeros((2, 3, 4)), [1])))
    2
    """
    return _moved(x, np.dsplit, indices_or_sections)


# --- copying and filling ---------------------------------------------------------------


@composite(
    method="repeat",
    cases=[(((3,),), {"repeats": 2}), (((2, 3),), {"repeats": [1, 0, 2], "axis": 1})],
)
def repeat(x, repeats, axis=None):
    """Repeat each element ``repeats`` times (flattened unless ``axis``), as ``np.repeat``.

    >>> print(repeat([1.0, 2.0], 2))
    [1. 1. 2. 2.]
    """
    return _moved(x, np.repeat, repeats, axis)


@composite(cases=[(((3,),), {"reps": 2}), (((2, 3),), {"reps": (2, 1, 2)})])
def tile(x, reps):
    """The array repeated ``reps`` times along each axis, as ``np.tile``.

    >>> print(tile([1.0, 2.0], 2))
    [1. 2. 1. 2.]
    """
    return _moved(x, np.tile, reps)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@composite(
    cases=[
        (((3, 4),), {"pad_width": 1}),
        (((3, 4),), {"pad_width": ((1, 2), (0, 1)), "mode": "edge"}),
        (((5,),), {"pad_width": 2, "mode": "reflect"}),
    ]
)
def pad(x, pad_width, mode: str = "constant", constant_values=0.0):
    """The array padded by ``pad_width`` along each axis, as ``np.pad``.

    ``mode`` is ``"constant"`` (with one ``constant_values`` number, which may
    itself carry a derivative), ``"edge"``, ``"reflect"``, ``"symmetric"`` or
    ``"wrap"``.

    >>> print(pad([1.0, 2.0], 1, mode="edge"))
    [1. 1. 2. 2.]
    """
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported; use one of {', '.join(_PAD_MODES)}")
    if mode != "constant":
        return _moved(x, np.pad, pad_width, mode)
    if np.ndim(raw(constant_values)) != 0:
        raise ValueError(
            "pad: give one number as constant_values (per-axis values are not supported)"
        )
    return _moved(x, np.pad, pad_width, "constant", fill=constant_values)


@composite(cases=[(((3,),), {}), (((3, 4),), {"k": 1}), (((4,),), {"k": -1})])
def diag(x, k: int = 0):
    """The ``k``-th diagonal of a 2-D array, or a 2-D array with a 1-D one on it, as ``np.diag``.

    >>> print(diag([1.0, 2.0]))
    [[1. 0.]
     [0. 2.]]
    """
    return _moved(x, np.diag, k)


@composite(
    method="diagonal",
    cases=[(((3, 4),), {}), (((2, 3, 4),), {"offset": 1, "axis1": 1, "axis2": 2})],
)
def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The diagonal of the ``(axis1, axis2)`` planes, moved last, as ``np.diagonal``.

    >>> print(diagonal([[1.0, 2.0], [3.0, 4.0]]))
    [1. 4.]
    """
    return _moved(x, np.diagonal, offset, axis1, axis2)


@composite(cases=[(((2, 2),), {}), (((3,),), {"k": 1})])
def diagflat(x, k: int = 0):
    """A 2-D array with the flattened input on its ``k``-th diagonal, as ``np.diagflat``.

    >>> print(diagflat([1.0, 2.0]))
    [[1. 0.]
     [0. 2.]]
    """
    return _moved(x, np.diagflat, k)


@composite(method="trace", cases=[(((3, 4),), {}), (((2, 3, 3),), {"axis1": 1, "axis2": 2})])
def trace(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The sum along a diagonal, as ``np.trace``.

    >>> print(trace([[1.0, 2.0], [3.0, 4.0]]))
    5.0
    """
    return sum(diagonal(x, offset, axis1, axis2), axis=-1)


@composite(cases=[(((3, 4),), {}), (((2, 3, 3),), {"k": -1})])
def tril(x, k: int = 0):
    """The lower triangle of the last two axes (zero above the ``k``-th diagonal), as ``np.tril``.

    >>> print(tril([[1.0, 2.0], [3.0, 4.0]]))
    [[1. 0.]
     [3. 4.]]
    """
    return _moved(x, np.tril, k)


@composite(cases=[(((3, 4),), {}), (((2, 3, 3),), {"k": 1})])
def triu(x, k: int = 0):
    """The upper triangle of the last two axes (zero below the ``k``-th diagonal), as ``np.triu``.

    >>> print(triu([[1.0, 2.0], [3.0, 4.0]]))
    [[1. 2.]
     [0. 4.]]
    """
    return _moved(x, np.triu, k)


# --- picking by index or by value ------------------------------------------------------


@composite(
    method="take",
    decided_by_values=(INDICES,),
    cases=[(((5,),), {"indices": [4, 0, 0]}), (((3, 4),), {"indices": [[1, 3]], "axis": 1})],
)
def take(x, indices, axis=None):
    """Elements at ``indices`` along ``axis`` (of the flattened array by default), as ``np.take``.

    >>> print(take([1.0, 2.0, 3.0], [2, 0]))
    [3. 1.]
    """
    return _moved(x, np.take, np.asanyarray(raw(indices)), axis)


@composite(
    cases=[(((3, 4),), {"indices": np.array([[0, 3], [1, 1], [2, 0]]), "axis": 1})],
    decided_by_values=(INDICES,),
)
def take_along_axis(x, indices, axis):
    """Elements at ``indices`` matched along ``axis``, as ``np.take_along_axis``.

    >>> print(take_along_axis([[1.0, 2.0], [3.0, 4.0]], np.array([[1], [0]]), 1))
    [[2.]
     [3.]]
    """
    return _moved(x, np.take_along_axis, np.asanyarray(raw(indices)), axis)


@composite(
    method="sort",
    cases=[(((5,),), {}), (((3, 4),), {"axis": 0})],
    decided_by_values=(ORDER,),
)
def sort(x, axis=-1):
    """The elements sorted along ``axis`` (flattened when ``None``), as ``np.sort``.

    The derivative follows each element to where it lands: the sort is a
    permutation, fixed by the values (tied elements keep their order).

    >>> print(sort([3.0, 1.0, 2.0]))
    [1. 2. 3.]
    """
    x = array_of(x)
    if axis is None:
        x, axis = ravel(x), -1
    return take_along_axis(x, np.argsort(raw(x), axis=axis, kind="stable"), axis)


@composite(
    cases=[(((5,),), {"kth": 2}), (((3, 4),), {"kth": 1, "axis": 0})],
    decided_by_values=(PARTITION_ORDER,),
)
def partition(x, kth, axis: int = -1):
    """The array partly sorted so that position ``kth`` holds its sorted value, as ``np.partition``.

    Elements before it are no larger and after it no smaller, in numpy's order.

    >>> print(partition([3.0, 1.0, 2.0], 1)[1])
    2.0
    """
    x = array_of(x)
    if axis is None:
        x, axis = ravel(x), -1
    return take_along_axis(x, np.argpartition(raw(x), kth, axis=axis), axis)


@composite()
def select(condlist, choicelist, default=0.0):
    """The first choice whose condition holds, elementwise, else ``default``, as ``np.select``.

    >>> print(select([np.array([True, False]), np.array([True, True])], [[1.0, 2.0], [3.0, 4.0]]))
    [1. 4.]
    """
    if len(condlist) != len(choicelist):
        raise ValueError("select: give one condition per choice")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(np.asanyarray(raw(cond), dtype=bool), choice, out)
    return out


@composite(cases=[(((3, 4),), {"fill_value": 2.5})])
def full_like(x, fill_value, dtype=None):
    """An array shaped like ``x`` filled with ``fill_value``, as ``np.full_like``.

    ``x`` gives only the shape (no derivative flows to it); ``fill_value``
    may carry a derivative.

    >>> print(full_like(np.zeros(2), 3.0))
    [3. 3.]
    """
    if not isinstance(fill_value, Box):
        # Of one example's shape (inside vmap, the same for every example).
        return np.full(shape_of(x), fill_value, dtype=dtype or np.result_type(raw(x)))
    return broadcast_to(fill_value, shape_of(x))


@composite(numpy=())
def assign_at(x, index, value):
    """``x`` with ``value`` written at ``index`` (``x[index] = value`` as an expression).

    Positions the index writes take ``value`` (broadcast to their shape) and
    its derivative; the others keep ``x``'s. What ``Tensor.__setitem__``
    records. An index that names a position twice is refused: which write
    wins would be arbitrary.

    >>> print(assign_at([1.0, 2.0, 3.0], slice(1, None), 0.0))
    [1. 0. 0.]
    """
    x = array_of(x)
    index = OPS["getitem"].prepare(x, index)["index"]
    hits = np.zeros(shape_of(x), dtype=np.int64)
    np.add.at(hits, index, 1)
    if hits.max(initial=0) > 1:
        raise IndexError(
            "assignment through an index that repeats positions is ambiguous; "
            "use adcompare.scatter_add to add at repeated positions"
        )
    target_shape = np.empty(shape_of(x), dtype=bool)[index].shape
    placed = scatter_add(broadcast_to(value, target_shape), index=index, shape=shape_of(x))
    return where(hits > 0, placed, x)
