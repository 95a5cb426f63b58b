"""What rules and engines read off a value that may be boxed: its plain value, shape and
masks."""

from __future__ import annotations

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.runtime.batch_arrays import BatchArray
from adcompare.runtime.boxes import Box


def anywhere(mask) -> bool:
    """Whether ``mask`` holds anywhere: for rules that skip a guarded path where it cannot matter.

    The guarded path (a ``where`` that masks a singular point) is right
    everywhere; skipping it where the mask is all false only saves work. A
    mask read from a batched value (inside ``vmap``) has no single answer for
    all examples, so it answers True and every example takes the guarded path.

    >>> import numpy as np
    >>> anywhere(np.array([False, True])), anywhere(np.zeros(2, bool))
    (True, False)
    """
    return isinstance(mask, (BatchArray, Box)) or bool(np.any(mask))


def everywhere(mask) -> bool:
    """Whether ``mask`` holds everywhere; a batched mask answers False (see :func:`anywhere`).

    >>> import numpy as np
    >>> everywhere(np.array([True, True])), everywhere(np.array([False, True]))
    (True, False)
    """
    return not isinstance(mask, (BatchArray, Box)) and bool(np.all(mask))


def array_of(value):
    """A box as it is; anything else (a list, a number) as a numpy array.

    >>> array_of([1.0, 2.0]).dtype
    dtype('float64')
    """
    return value if isinstance(value, Box) else np.asarray(value)


def shape_of(value) -> tuple[int, ...]:
    """The shape of a plain value or a box."""
    if type(value) is ndarray:
        return value.shape
    if type(value) is float or type(value) is int:
        return ()
    shape = getattr(value, "shape", None)
    if type(shape) is tuple:  # numpy scalars, placeholders and boxes: no copy
        return shape
    return tuple(shape) if shape is not None else np.shape(value)


def ndim_of(value) -> int:
    """The rank of a plain value or a box."""
    return value.ndim if type(value) is ndarray else len(shape_of(value))
