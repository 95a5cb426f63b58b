"""Building arrays: ``array`` and ``asarray`` of nested lists that hold boxes, the index
expressions ``r_`` and ``c_``, ``row_stack`` and ``linspace``, as composites.

numpy's own ``np.array([x, y])`` cannot build an array of boxes: its constructor
takes no dispatch, so a box meets it only through ``__array__``, which would
drop the derivative and is refused. ``adcompare.array`` builds the same array
by stacking, and so does ``adcompare.r_[...]``, which reads its index
expression as ``np.r_`` does (numpy's own ``r_`` runs on the elements'
positions, see :mod:`adcompare.ops.rearrange`).
"""

from __future__ import annotations

import numpy as np

from adcompare.ops.composite import stack
from adcompare.ops.elementwise import add, divide, multiply, subtract, where
from adcompare.ops.rearrange import _moved_many, moveaxis, vstack
from adcompare.ops.registry import Box, array_of, composite, raw, shape_of
from adcompare.ops.shape import broadcast_to


def _holds_box(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_holds_box(item) for item in obj)
    return isinstance(obj, Box)


def _built(obj):
    """A nested list or tuple as one array, stacked from its elements."""
    if isinstance(obj, (list, tuple)):
        if not obj:
            return np.asarray(obj, dtype=float)
        return stack([_built(item) for item in obj])
    return array_of(obj)


@composite(numpy=())
def array(obj, dtype=None):
    """An array from a nested list or tuple that may hold boxes, as ``np.array``.

    The elements are stacked, so derivatives pass through each; their shapes must
    agree, as numpy's do. Without a box inside, it is ``np.array`` itself.
    (numpy's ``np.array`` cannot hold boxes: call this one.)

    >>> import adcompare as ad
    >>> print(ad.grad(lambda x: ad.sum(array([[x, 2.0 * x], [x * x, 1.0]])))(3.0))
    9.0
    """
    if not _holds_box(obj):
        return np.array(raw(obj), dtype=dtype)
    out = _built(obj)
    return out if dtype is None else out.astype(dtype)


@composite(numpy=())
def asarray(obj, dtype=None):
    """``array(obj, dtype)``: a box stays as it is, as ``np.asarray`` keeps an array.

    >>> print(asarray([1.0, 2.0]))
    [1. 2.]
    """
    if isinstance(obj, Box) and dtype is None:
        return obj
    return array(obj, dtype=dtype)


@composite(numpy=("row_stack",), listed=True)
def row_stack(arrays, dtype=None, casting: str = "same_kind"):
    """``vstack(arrays)``, as numpy's older name for it.

    >>> print(row_stack([[1.0, 2.0], [3.0, 4.0]]).shape)
    (2, 2)
    """
    return vstack(arrays, dtype=dtype, casting=casting)


class IndexJoin:
    """An index expression that joins arrays, as ``np.r_`` (``IndexJoin("r_")``) or
    ``np.c_``: ``r_[x, 0.0, 1:4]``, ``c_[x, y]``, ``r_["0,2", x, y]``; boxes may be
    among the items. Calling it, ``r_(x, y)``, reads the items the same way.

    >>> import adcompare as ad
    >>> print(ad.r_[np.array([1.0, 2.0]), 0.0, 1:3])
    [1. 2. 0. 1. 2.]
    >>> print(ad.c_[np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    [[1. 3.]
     [2. 4.]]
    """

    def __init__(self, name: str):
        self.__name__ = self.__qualname__ = name
        self._numpy = getattr(np, name)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if not _holds_box(key):
            return self._numpy[key]
        if any(isinstance(item, str) and item in ("r", "c") for item in key):
            raise ValueError(
                f"{self.__name__}: the 'r' and 'c' directives build an np.matrix, which "
                "cannot carry a derivative; leave them out"
            )
        # Slices become the arrays numpy makes of them; then numpy's own index expression
        # runs on the items' element positions, and the result gathers the elements.
        items = [item if isinstance(item, str) else _item(item) for item in key]
        arrays = [item for item in items if not isinstance(item, str)]

        def join(positions):
            parts = iter(positions)
            return self._numpy[tuple(i if isinstance(i, str) else next(parts) for i in items)]

        return _moved_many(arrays, join)

    def __call__(self, *items):
        return self[items]


def _item(item):
    return np.r_[item] if isinstance(item, slice) else array_of(item)


r_ = composite(numpy=())(IndexJoin("r_"))
c_ = composite(numpy=())(IndexJoin("c_"))


@composite(cases=[(((), ()), {"num": 5}), (((2,), (2,)), {"num": 4, "axis": 1, "endpoint": False})])
def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, axis=0):
    """``num`` evenly spaced numbers from ``start`` to ``stop``, as ``np.linspace``:
    differentiable in both endpoints (arrays of them too).

    Computed as numpy does, ``start + k * (stop - start) / div``, with the last
    number ``stop`` itself where ``endpoint`` holds.

    >>> import adcompare as ad
    >>> print(linspace(0.0, 1.0, 5))
    [0.   0.25 0.5  0.75 1.  ]
    >>> print(ad.grad(lambda b: ad.sum(linspace(0.0, b, 5)))(1.0))
    2.5
    """
    if int(num) != num or num < 0:
        raise ValueError(f"linspace: num={num!r}; give a non-negative whole number")
    num = int(num)
    start, stop = array_of(start), array_of(stop)
    shape = np.broadcast_shapes(shape_of(start), shape_of(stop))
    div = num - 1 if endpoint else num
    steps = np.arange(num, dtype=float).reshape((-1,) + (1,) * len(shape))
    delta = subtract(stop, start)
    step = divide(delta, float(div)) if div > 0 else np.nan
    out = add(multiply(steps, step if div > 0 else delta), start)
    if endpoint and num > 1:
        last = np.zeros((num,) + (1,) * len(shape), dtype=bool)
        last[-1] = True
        out = where(last, broadcast_to(stop, shape), out)
    out = moveaxis(out, 0, axis) if shape else out
    return (out, step) if retstep else out
