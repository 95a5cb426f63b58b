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

import numpy as np

from adcompare.runtime.boxes import raw

__all__ = ["BatchArray", "install_box", "mark", "padded", "rebox", "unmark"]

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
        if func is np.where:
            args = [raw(a) for a in args]
            level = _one_level(args)
            rank = max(_example_ndim(a) for a in args)
            return rebox(mark(np.where(*[padded(a, rank) for a in args], **kwargs), level))
        if func in _SHAPE_ONLY or func in _REDUCTIONS:
            return super().__array_function__(func, types, args, kwargs)
        raise TypeError(
            f"vmap: np.{func.__name__} on a value read from a batched value is not "
            "supported; write the rule with the op set's functions"
        )


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
