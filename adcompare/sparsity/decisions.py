"""Values a global pattern's tracer hands out, so that decisions taken from them are seen.

A global pattern must hold at every input, but ``f`` may read the traced
values and decide from them: ``sort`` indexes with ``argsort`` of them,
``x[x > 0]`` with a mask. In a global trace, :meth:`Tracer.raw_value
<adcompare.sparsity.tracer.Tracer.raw_value>` gives a :class:`FromValues`
array; what numpy computes from it is one too, and the trace notes where
each lies in memory (``np.asarray`` of one is a plain view of the same
memory, as static parameters are prepared). An op whose record declares
an operand decided by values (``getitem``'s ``index``; see
``decided_by_values``) and receives one computed from the values then links
each output element to every element of its array arguments: the union over
every decision (:func:`decided_here`). Where the decision changes a shape (a
mask selects as many elements as it holds true), no pattern holds at every
input, and the trace refuses.
"""

from __future__ import annotations

import numpy as np

from adcompare.pytree import plain_views, sequence_like
from adcompare.runtime.boxes import Box
from adcompare.runtime.buffers import memory_key

__all__ = ["FromValues", "decided_here", "read_from"]

#: numpy functions whose result's shape follows the values, not the shapes, of their operands.
_SHAPE_FROM_VALUES = frozenset(
    {np.nonzero, np.flatnonzero, np.argwhere, np.unique, np.extract, np.compress}
)


class FromValues(np.ndarray):
    """An array computed from the values of a global trace's inputs.

    ``varies_shape`` says its shape follows those values (``nonzero`` of a mask);
    ``read`` is the trace's record of such arrays by memory (see :func:`read_from`).

    >>> import numpy as np
    >>> x = read_from(np.array([2.0, -1.0, 3.0]), {})
    >>> order = np.argsort(x)
    >>> type(order).__name__, np.nonzero(x > 0)[0].varies_shape, order.varies_shape
    ('FromValues', True, False)
    """

    varies_shape = False
    read: dict | None = None

    def __array_finalize__(self, obj):
        self.varies_shape = getattr(obj, "varies_shape", False)
        self.read = getattr(obj, "read", None)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if any(isinstance(i, Box) for i in inputs):
            return NotImplemented  # the traced operand's own dispatch takes it
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        return _from_values(result, _varies(inputs), self.read)

    def __array_function__(self, func, types, args, kwargs):
        if any(issubclass(t, Box) for t in types):
            return NotImplemented
        result = func(*_plain(args), **_plain(kwargs))
        return _from_values(result, func in _SHAPE_FROM_VALUES or _varies(args), self.read)

    def __getitem__(self, index):
        parts = index if isinstance(index, tuple) else (index,)
        masks = any(isinstance(p, np.ndarray) and p.dtype == bool and p.ndim for p in parts)
        result = _plain(self)[_plain(index)]
        return _from_values(result, masks or self.varies_shape or _varies(parts), self.read)


def _plain(value):
    return plain_views(value, FromValues)


def _varies(values) -> bool:
    if isinstance(values, (list, tuple)):
        return any(_varies(v) for v in values)
    return isinstance(values, FromValues) and values.varies_shape


def _from_values(result, varies: bool, read: dict):
    if isinstance(result, (tuple, list)):
        parts = [_from_values(r, varies, read) for r in result]
        return sequence_like(result, parts)
    if isinstance(result, np.ndarray):
        marked = read_from(result, read)
        marked.varies_shape = varies
        return marked
    return result


def read_from(value: np.ndarray, read: dict | None) -> FromValues:
    """``value`` marked as computed from traced values, and noted in ``read`` (a trace's
    record: memory key to array, kept alive so that no other array takes its memory)."""
    marked = value.view(FromValues)
    marked.read = read
    if read is not None:
        read[memory_key(marked)] = marked
    return marked


def decided_here(value, read: dict) -> str | None:
    """Whether ``value`` (an operand, or a tuple of them) was computed from traced values:
    ``"shape"`` where its shape follows them, ``"values"``, or ``None``.

    A plain view of such an array (``np.asarray`` of it) counts as it.

    >>> import numpy as np
    >>> read = {}
    >>> mask = read_from(np.array([1.0, -1.0]), read) > 0
    >>> decided_here((slice(None), np.asarray(mask)), read), decided_here(np.nonzero(mask), read)
    ('values', 'shape')
    >>> print(decided_here([0, 1], read))
    None
    """
    if isinstance(value, (tuple, list)):
        found = {decided_here(v, read) for v in value} - {None}
        return "shape" if "shape" in found else (found.pop() if found else None)
    if isinstance(value, np.ndarray):
        value = read.get(memory_key(value), value)
        if isinstance(value, FromValues):
            return "shape" if value.varies_shape else "values"
    return None
