"""Which input elements each output element of an op depends on: the sparsity rules' vocabulary.

A rule (the ``sparsity`` field of an op record) returns :class:`Links`:
per argument position, the pairs ``(rows, cols)`` saying that output element
``rows[t]`` (flat index) depends on element ``cols[t]`` of that argument, and
the *interactions* that make second derivatives: ``(i, j, rows, a, b)`` says
that output element ``rows[t]`` has a non-zero mixed second derivative in
element ``a[t]`` of argument ``i`` and element ``b[t]`` of argument ``j``
(``x * y`` interacts, ``x + y`` does not). The interactions may also be given
as a function returning them, called only when second derivatives are traced
(a function of a whole matrix has as many pairs as the square of its links).
Everything here is plain numpy on element numbers; :mod:`adcompare.sparsity`
propagates the index sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Links",
    "element_numbers",
    "elementwise_links",
    "reduction_links",
]


@dataclass(frozen=True)
class Links:
    """Dependencies of one op application: per argument ``(rows, cols)`` or ``None``.

    >>> links = elementwise_links(np.zeros(2), np.zeros(2), np.zeros(()))
    >>> [c.tolist() for _, c in links.inputs]
    [[0, 1], [0, 0]]
    """

    inputs: tuple
    interactions: tuple | Callable[[], tuple] = ()


def element_numbers(shape) -> np.ndarray:
    """The flat index of every element, shaped ``shape``.

    >>> element_numbers((2, 2)).tolist()
    [[0, 1], [2, 3]]
    """
    return np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)


def _broadcast_numbers(arg, out_shape) -> np.ndarray:
    return np.broadcast_to(element_numbers(np.shape(arg)), out_shape).ravel()


def elementwise_links(out, *args, keep=None) -> Links:
    """Each output element depends on the element of each argument it broadcasts from.

    ``keep``, one boolean array per argument, limits each argument's links to
    the output elements where it holds (a local pattern: the branch taken).
    """
    rows = np.arange(np.size(out))
    links = []
    for i, a in enumerate(args):
        cols = _broadcast_numbers(a, np.shape(out))
        if keep is None:
            links.append((rows, cols))
        else:
            chosen = np.broadcast_to(keep[i], np.shape(out)).ravel()
            links.append((rows[chosen], cols[chosen]))
    return Links(tuple(links))


def reduction_links(out, x, axis, keepdims, keep=None) -> Links:
    """Each output element depends on the slice it reduces (where ``keep`` holds, if given)."""
    shape = np.shape(x)
    kept = tuple(1 if i - len(shape) in axis else d for i, d in enumerate(shape))
    rows = np.broadcast_to(element_numbers(kept), shape).ravel()
    cols = np.arange(rows.size)
    if keep is not None:
        chosen = np.broadcast_to(keep, shape).ravel()
        rows, cols = rows[chosen], cols[chosen]
    return Links(((rows, cols),))
