"""``scatter_add``'s value at an index holding integer arrays, which may repeat a position.

``np.add.at`` accumulates repeats correctly but is several times slower than the two
ways that give the same numbers where they apply: ``np.bincount`` for whole rows, and
a plain assignment where no position repeats (:func:`distinct_positions`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["add_at", "distinct_positions"]

#: From this many values, a scatter checks whether its positions repeat (below, add.at
#: costs a few microseconds, less than the check).
_PLACE_FROM = 2**12
#: A set of flat positions up to this many times the count of positions (plus a
#: constant) is marked in a table of flags; a sparser one is sorted instead.
_MARKED_SPREAD = 8


def distinct_positions(index: tuple, shape: tuple) -> bool:
    """Whether ``index`` (integers, slices, ``None``, ``...`` and integer arrays) addresses
    no element of an array of ``shape`` twice; ``False`` where it cannot tell (boolean
    arrays, lists).

    Slices and integers never repeat a position, so only the integer arrays are read:
    the positions repeat exactly when two of their broadcast tuples name the same
    elements along the axes they index.

    >>> rows, cols = np.array([1, 2, 2]), np.array([0, 0, 1])
    >>> distinct_positions((slice(None), rows, cols), (4, 3, 3))
    True
    >>> distinct_positions((np.array([0, -3]),), (3,))  # -3 is 0 again
    False
    """
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    arrays, sizes, axis = [], [], 0
    for item in index:
        if item is None:
            continue
        if item is Ellipsis:
            axis += len(shape) - consumed
            continue
        if isinstance(item, np.ndarray):
            if item.dtype.kind not in "iu":
                return False
            arrays.append(item % shape[axis])
            sizes.append(shape[axis])
        elif not isinstance(item, (slice, int, np.integer)) or isinstance(item, bool):
            return False
        axis += 1
    if not arrays:
        return True
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*arrays)), sizes).ravel()
    room = math.prod(sizes)
    if flat.size > room:
        return False
    if room <= _MARKED_SPREAD * flat.size + 4096:
        seen = np.zeros(room, dtype=bool)
        seen[flat] = True
        return int(np.count_nonzero(seen)) == flat.size
    return np.unique(flat).size == flat.size


def add_at(v: np.ndarray, index: tuple, shape: tuple, dtype) -> np.ndarray:
    """``np.add.at(np.zeros(shape, dtype), index, v)``, bit for bit, by the fastest way
    that gives it: whole rows by ``np.bincount``, distinct positions by assignment.

    >>> add_at(np.array([1.0, 2.0, 4.0]), (np.array([0, 2, 0]),), (3,), np.float64)
    array([5., 0., 2.])
    """
    rows = _rows_by_bincount(v, index, shape, dtype)
    if rows is not None:
        return rows
    out = np.zeros(shape, dtype=dtype)
    if v.size >= _PLACE_FROM and distinct_positions(index, shape):
        out[index] = v + 0  # placed; + 0 gives −0.0 as 0, as adding it to a zero does
    else:
        np.add.at(out, index, v)
    return out


def _rows_by_bincount(v, index, shape, dtype):
    """``np.add.at(zeros(shape), (rows, ...), v)`` for whole rows picked by one 1-D index
    array (then only ``...`` and ``:``), in float64, by ``np.bincount``, which adds each
    bin's shares in the same order (so the same sums, bit for bit) many times faster;
    ``None`` where it does not apply."""
    rows = index[0]
    whole = all(i is Ellipsis or (type(i) is slice and i == slice(None)) for i in index[1:])
    if (
        not whole
        or dtype != np.float64
        or not isinstance(rows, np.ndarray)
        or rows.ndim != 1
        or rows.dtype.kind not in "iu"
        or v.shape != (rows.shape[0], *shape[1:])
    ):
        return None
    inner = math.prod(shape[1:])
    flat = (rows % shape[0])[:, None] * inner + np.arange(inner)
    return np.bincount(flat.ravel(), v.ravel(), minlength=math.prod(shape)).reshape(shape)
