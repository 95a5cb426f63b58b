"""Plain arrays read from a batched value inside ``vmap``.

Some rules read a value to make a constant (``np.sign(raw(x))`` for abs, the
winners of a max, the mask of relu). Read from a batched value, that
constant has the batch axis too: it is a :class:`BatchArray`, a numpy array
that remembers which vmap its axis 0 belongs to, so numpy's ufuncs line it
up with values of one example and give a batched value back, and the vmap
engine treats it as batched. The engine installs its box type here
(:func:`install_box`): this module sits below the op set and the engines.
"""

from __future__ import annotations

import inspect

import numpy as np

from adcompare.runtime.boxes import raw

__all__ = [
    "BatchArray",
    "install_box",
    "mark",
    "mark_as_index",
    "padded",
    "per_example_index",
    "rebox",
    "unmark",
]

_SHAPE_ONLY = {
    np.shape,
    np.ndim,
    np.size,
    np.result_type,
    np.reshape,
    np.ones_like,
    np.zeros_like,
    np.empty_like,
    np.copyto,
}
_REDUCTIONS = {np.sum, np.max, np.min, np.amax, np.amin, np.prod, np.any, np.all}


class BatchArray(np.ndarray):
    """A plain array read from a batched value: axis 0 is the batch of vmap ``levels[0]``.

    numpy's ufuncs and ``np.where`` on it line it up with values of one
    example and give a batched value back, so a rule's constant stays batched.
    """

    levels: tuple = ()

    def __array_finalize__(self, obj):
        self.levels = getattr(obj, "levels", ())

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [raw(a) for a in inputs]  # a batched value among them reads as a BatchArray
        level = _one_level(inputs)
        out = kwargs.pop("out", None)
        if method == "__call__":
            rank = max(_example_ndim(a) for a in inputs)
            result = ufunc(*[padded(a, rank) for a in inputs], **kwargs)
        elif method == "reduce":
            (value,) = inputs
            axis = kwargs.pop("axis", 0)
            if axis is None:
                axis = tuple(range(1, np.ndim(value)))
            else:
                axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
                axis = tuple(int(a) + 1 if a >= 0 else int(a) for a in axes)
            result = ufunc.reduce(value.view(np.ndarray), axis=axis, **kwargs)
        else:
            raise TypeError(
                f"vmap: np.{ufunc.__name__}.{method} on a value read from a batched value is "
                "not supported; write the rule with the op set's functions"
            )
        if out is not None:
            raise TypeError(
                f"vmap: np.{ufunc.__name__}(..., out=...) on a value read from a batched value "
                "is not supported; write the rule without out="
            )
        return rebox(mark(result, level))

    def __array_function__(self, func, types, args, kwargs):
        if func in _ELEMENTWISE:
            return rebox(_elementwise(func, args, kwargs))
        if func in _EVERY_ELEMENT:
            return _every_element(func, args, kwargs)
        if func in _SHAPE_ONLY or func in _REDUCTIONS:
            return super().__array_function__(func, types, args, kwargs)
        if func in _ALONG_AXES:
            return _along_axes(func, args, kwargs)
        if func in _TRAILING_AXES:
            level = _one_level(args)
            return _marked_parts(func(*[_plain(a) for a in args], **kwargs), level)
        if func in _EACH_EXAMPLE:
            return _each_example(func, args, kwargs)
        raise TypeError(
            f"vmap: np.{func.__name__} on a value read from a batched value (raw() inside "
            "vmap) is not supported; compute it with adcompare's functions, or call the "
            "function once per example in a Python loop"
        )


#: numpy functions of one example's axes, with their axis parameters: the batch axis
#: goes first, axes counted from the front move one along.
_ALONG_AXES = {
    np.argsort: ("axis",),
    np.argpartition: ("axis",),
    np.take_along_axis: ("axis",),
    np.diagonal: ("axis1", "axis2"),
}
#: numpy functions of the last axes, over stacks of them: the batch is one more stack.
_TRAILING_AXES = {
    np.linalg.slogdet,
    np.linalg.svd,
    np.linalg.qr,
    np.linalg.eigh,
    np.linalg.eigvalsh,
    np.linalg.det,
    np.iscomplexobj,
    np.isrealobj,
}


#: numpy functions of elements lined up by broadcasting, like ufuncs.
_ELEMENTWISE = {np.where, np.isclose, np.iscomplex, np.isreal}


def _elements_equal(a, b, equal_nan=False):
    # With equal_nan, isclose with no tolerance: equal elements, and NaN with NaN.
    return np.isclose(a, b, rtol=0, atol=0, equal_nan=True) if equal_nan else np.equal(a, b)


#: numpy's questions about every element, each with its question about one element.
_EVERY_ELEMENT = {np.allclose: np.isclose, np.array_equal: _elements_equal}


def _elementwise(func, args, kwargs) -> BatchArray:
    """``func`` of arrays lined up element by element, examples with examples."""
    args = [raw(a) for a in args]
    level = _one_level(args)
    rank = max(_example_ndim(a) for a in args)
    return mark(func(*[padded(a, rank) for a in args], **kwargs), level)


def _every_element(func, args, kwargs):
    """``np.allclose`` or ``np.array_equal`` answered per example: a batched boolean."""
    shapes = {np.shape(a)[isinstance(a, BatchArray) :] for a in map(raw, args)}
    if func is np.array_equal and len(shapes) > 1:
        return False  # numpy's answer for arrays of different shapes, for every example
    each = _elementwise(_EVERY_ELEMENT[func], args, kwargs)
    answer = np.all(each.view(np.ndarray), axis=tuple(range(1, each.ndim)))
    return rebox(mark(answer, each.levels))


#: numpy functions whose arguments are one example's, called once per example.
_EACH_EXAMPLE = {np.searchsorted, np.digitize}


def _each_example(func, args, kwargs):
    """``func`` called on each example's arguments (a plain one shared), results stacked."""
    level = _one_level([a for a in (*args, *kwargs.values()) if isinstance(a, BatchArray)])
    size = next(len(a) for a in (*args, *kwargs.values()) if isinstance(a, BatchArray))

    def example(value, b):
        return _plain(value)[b] if isinstance(value, BatchArray) else value

    results = [
        func(*[example(a, b) for a in args], **{k: example(v, b) for k, v in kwargs.items()})
        for b in range(size)
    ]
    return mark(np.stack(results), level)


def _plain(value):
    return value.view(np.ndarray) if isinstance(value, BatchArray) else value


def _marked_parts(result, level: tuple):
    """A numpy result (an array, a named tuple of arrays, or a flag) marked as batched."""
    if isinstance(result, tuple):
        parts = [_marked_parts(part, level) for part in result]
        return type(result)(*parts) if hasattr(result, "_fields") else tuple(parts)
    if isinstance(result, (bool, np.bool_)):
        return result  # a question about the dtype, the same for every example
    return mark(result, level)


def _along_axes(func, args, kwargs):
    """``func`` on each example: arrays with the batch axis first (broadcast where a
    plain argument is the same for every example), axes of one example shifted by one."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = bound.arguments
    level = _one_level([a for a in arguments.values() if isinstance(a, BatchArray)])
    arrays = [name for name, value in arguments.items() if isinstance(value, np.ndarray)]
    size = next(len(arguments[n]) for n in arrays if isinstance(arguments[n], BatchArray))
    for name in arrays:
        value = arguments[name]
        if not isinstance(value, BatchArray):
            value = np.broadcast_to(value, (size, *np.shape(value)))
        arguments[name] = value.view(np.ndarray)
    for name in _ALONG_AXES[func]:
        axis = arguments[name]
        if axis is None:  # numpy's flattened array: each example flattened
            for array in arrays:
                arguments[array] = arguments[array].reshape(size, -1)
            arguments[name] = 1
        elif axis >= 0:
            arguments[name] = axis + 1
    return mark(func(*bound.args, **bound.kwargs), level)


def _one_level(values) -> tuple:
    found = {a.levels for a in values if isinstance(a, BatchArray)}
    if len(found) != 1 or len(next(iter(found))) != 1:
        raise TypeError(
            "vmap: nested vmap through a rule that reads values (abs, maximum, where, ...) "
            "is not supported; vmap once over a flattened batch"
        )
    return found.pop()


def _example_ndim(value) -> int:
    return np.ndim(value) - (1 if isinstance(value, BatchArray) else 0)


def padded(value, rank: int):
    """A batched array with size-1 axes after the batch axis; plain values as they are."""
    if not isinstance(value, BatchArray):
        return value
    plain = value.view(np.ndarray)
    missing = rank - (plain.ndim - 1)
    if missing <= 0:
        return plain
    return plain.reshape(plain.shape[:1] + (1,) * missing + plain.shape[1:])


def mark(value, levels: tuple):
    """``value`` as a :class:`BatchArray` of vmap ``levels`` (plain numbers become arrays)."""
    value = np.asarray(value).view(BatchArray)
    value.levels = levels
    return value


#: The vmap engine's box type, installed by the engine (the op set is below it).
_BOX: list = []


def install_box(box_type: type) -> None:
    """Tell the op set which box holds a batch (``adcompare.engines.batched.Batched``)."""
    _BOX[:] = [box_type]


def rebox(value: BatchArray):
    """An op's result computed from a :class:`BatchArray`: a batched value again."""
    return _BOX[0](value.view(np.ndarray), _one_level([value])[0])


def unmark(value, level: int):
    """``(plain value, batched?)``: a BatchArray of this vmap level as a plain array."""
    if isinstance(value, BatchArray):
        if value.levels != (level,):
            _one_level([value, mark(0, (level,))])
        return value.view(np.ndarray), True
    return value, False


def per_example_index(index: tuple) -> tuple | None:
    """An index holding positions per example (vmap's ``BatchArray``) as one plain index
    of the batched array: the batch axis indexed by its own numbers, so each example
    reads its own positions; ``None`` for an index that is the same for every example.

    The per-example positions must lead the index (``x[i]``, ``x[i, j, :]``), so that
    numpy puts their axes first both per example and batched.

    >>> positions = mark(np.array([[2, 0], [1, 1]]), (7,))  # two examples' positions
    >>> x = np.array([[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]])
    >>> print(x[per_example_index((positions,))])
    [[12. 10.]
     [21. 21.]]
    """
    batches = [item for item in index if isinstance(item, BatchArray)]
    if not batches:
        return None
    advanced = [not isinstance(item, slice) and item is not Ellipsis for item in index]
    leading = advanced.index(False) if False in advanced else len(index)
    if any(advanced[leading:]) or any(item is None for item in index):
        raise TypeError(
            "vmap: positions that differ per example (a sort's permutation) must lead the "
            "index, as in x[i] or x[i, j, :]; move the indexed axes first with "
            "adcompare.moveaxis"
        )
    items = index[:leading]
    rank = max(np.ndim(item) - isinstance(item, BatchArray) for item in items)
    size = len(batches[0])
    numbers = np.arange(size).reshape((size,) + (1,) * rank)
    return (numbers, *[padded(item, rank) for item in items], *index[leading:])


def mark_as_index(index: tuple, value):
    """``value`` computed with a per-example index, marked as the index's batch.

    >>> mark_as_index((mark([[0], [1]], (7,)),), np.zeros(2)).levels
    (7,)
    """
    return mark(value, next(item for item in index if isinstance(item, BatchArray)).levels)
