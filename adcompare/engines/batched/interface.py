"""The batched engine's face for transforms: make a batch, read a batched output.

As :mod:`adcompare.engines.forward.interface` is to ``Dual``: :func:`lift`
makes a value a batch at a nesting level and :func:`lower` reads an output
back with its batch axis first. ``vmap`` (:mod:`adcompare.transforms.vectorize`)
uses these and nothing private.
"""

from __future__ import annotations

from adcompare.engines.batched.batch import Batched
from adcompare.runtime.batch_arrays import BatchArray, unmark

__all__ = ["lift", "lower"]


def lift(value, level: int) -> Batched:
    """``value`` as a batch at nesting ``level``: its leading axis is the batch.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> x = lift(np.array([[1.0, 2.0], [3.0, 4.0]]), level=9)
    >>> x.shape, lower(ad.sum(x * x), 9)
    ((2,), (array([ 5., 25.]), True))
    """
    return Batched(value, level)


def lower(value, level: int) -> tuple:
    """``(value, batched)`` of an output at ``level``: batched, the value has its batch
    axis first; not batched (a constant, or a box of another transform), it is as given.

    A value computed with numpy from a batched one (a mask ``raw(x) > 0``) is
    batched too.

    >>> lower(2.0, 9)
    (2.0, False)
    """
    if isinstance(value, Batched) and value.level == level:
        return value.value, True
    if isinstance(value, BatchArray):
        return unmark(value, level)[0], True
    return value, False
