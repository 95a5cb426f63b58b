"""An array namespace for a library whose arrays do not mix with numpy's.

The problems are written against ``xp`` and close over numpy constants:
``matrix @ x``, ``-labels * (features @ w)``. JAX and HIPS autograd accept
numpy operands, but ``ndarray @ torch.Tensor`` raises. :class:`WrappedNamespace`
runs the same code anyway: ``x`` enters as a :class:`WrappedArray`, whose
operators turn numpy operands into the library's arrays, and ``xp.sum``,
``xp.tanh``, ... call the library's functions on unwrapped arguments.

The wrapper is library-neutral; given numpy's own functions it computes
exactly what numpy does, which is how it is tested without any peer:

>>> import numpy as np
>>> xp = WrappedNamespace("numpy", {"sum": np.sum, "sin": np.sin}, np.asarray)
>>> x = xp.wrap(np.array([0.0, 1.0]))
>>> float(xp.unwrap(xp.sum(np.array([2.0, 3.0]) * xp.sin(x))))
2.5244129544236893
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["WrappedArray", "WrappedNamespace"]


class WrappedArray:
    """A library's array with numpy-compatible operators.

    ``__array_ufunc__ = None`` makes numpy's ``ndarray.__mul__`` and friends
    return ``NotImplemented``, so ``numpy_constant * wrapped`` reaches
    :meth:`__rmul__`, which converts the constant.
    """

    __array_ufunc__ = None
    __slots__ = ("namespace", "value")

    def __init__(self, value, namespace: WrappedNamespace):
        self.value = value
        self.namespace = namespace

    def _apply(self, operation: Callable, other, reflected: bool = False) -> WrappedArray:
        other = self.namespace.unwrap(other)
        left, right = (other, self.value) if reflected else (self.value, other)
        return WrappedArray(operation(left, right), self.namespace)

    def __add__(self, other):
        return self._apply(operator.add, other)

    def __radd__(self, other):
        return self._apply(operator.add, other, reflected=True)

    def __sub__(self, other):
        return self._apply(operator.sub, other)

    def __rsub__(self, other):
        return self._apply(operator.sub, other, reflected=True)

    def __mul__(self, other):
        return self._apply(operator.mul, other)

    def __rmul__(self, other):
        return self._apply(operator.mul, other, reflected=True)

    def __truediv__(self, other):
        return self._apply(operator.truediv, other)

    def __rtruediv__(self, other):
        return self._apply(operator.truediv, other, reflected=True)

    def __pow__(self, other):
        return self._apply(operator.pow, other)

    def __rpow__(self, other):
        return self._apply(operator.pow, other, reflected=True)

    def __matmul__(self, other):
        return self._apply(operator.matmul, other)

    def __rmatmul__(self, other):
        return self._apply(operator.matmul, other, reflected=True)

    def __neg__(self):
        return WrappedArray(-self.value, self.namespace)

    def __getitem__(self, index):
        return WrappedArray(self.value[index], self.namespace)

    @property
    def shape(self) -> tuple[int, ...]:
        """The wrapped array's shape."""
        return tuple(self.value.shape)


class WrappedNamespace:
    """``xp`` built from a table of the library's functions under numpy's names.

    ``functions`` maps each name the problems use (``"sum"``, ``"tanh"``,
    ``"concatenate"``, ...) to a function taking the library's arrays with
    numpy's keywords (``axis``, ``keepdims``); ``as_native`` turns a numpy
    array into the library's. A name missing from the table raises an
    ``AttributeError`` that says which names there are.
    """

    def __init__(self, library: str, functions: Mapping[str, Callable], as_native: Callable):
        self.library = library
        self.functions = dict(functions)
        self.as_native = as_native

    def wrap(self, native) -> WrappedArray:
        """``native`` (an array of the library) as a :class:`WrappedArray`."""
        return WrappedArray(native, self)

    def unwrap(self, value):
        """The library's array for ``value``: wrapped arrays unwrapped, numpy
        arrays converted, lists and tuples converted item by item, Python
        numbers left alone."""
        if isinstance(value, WrappedArray):
            return value.value
        if isinstance(value, np.ndarray):
            return self.as_native(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.unwrap(item) for item in value)
        return value

    def __getattr__(self, name: str) -> Callable:
        try:
            function = self.functions[name]
        except KeyError:
            raise AttributeError(
                f"the {self.library} namespace has no {name!r}; a problem may use only "
                f"{', '.join(sorted(self.functions))} (add {name!r} to its function table)"
            ) from None

        def call(*args, **kwargs):
            return self.wrap(function(*map(self.unwrap, args), **kwargs))

        call.__name__ = name
        # Later look-ups find the attribute without coming back here.
        setattr(self, name, call)
        return call
