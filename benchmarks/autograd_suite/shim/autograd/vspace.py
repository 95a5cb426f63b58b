"""Vector spaces of values, as autograd's ``check_grads`` uses them: random vectors,
inner products and covectors of arrays, complex arrays and containers of them."""

import numpy as np

from adcompare.ops.registry import raw


class VSpace:
    """The space of one array shape and kind (real or complex)."""

    def __init__(self, value):
        value = np.asarray(raw(value))
        self.shape = value.shape
        self.complex = np.iscomplexobj(value)
        self.dtype = np.complex128 if self.complex else np.float64
        self.size = value.size

    def __eq__(self, other):
        return type(self) is type(other) and (self.shape, self.complex) == (
            other.shape,
            other.complex,
        )

    def __repr__(self):
        return f"VSpace(shape={self.shape}, complex={self.complex})"

    def zeros(self):
        return np.zeros(self.shape, self.dtype)

    def ones(self):
        return np.ones(self.shape, self.dtype)

    def randn(self):
        real = np.random.randn(*self.shape)
        return real + 1j * np.random.randn(*self.shape) if self.complex else real

    def add(self, x, y):
        return x + y

    def scalar_mul(self, x, a):
        return x * a

    def inner_prod(self, x, y):
        return float(np.real(np.vdot(np.ravel(raw(x)), np.ravel(raw(y)))))

    def covector(self, x):
        return np.conj(x)


class ContainerVSpace:
    """The product space of a tuple, list or dict of values."""

    def __init__(self, value):
        self.kind = type(value)
        self.keys = sorted(value) if isinstance(value, dict) else range(len(value))
        self.spaces = [vspace(value[k]) for k in self.keys]
        self.size = sum(s.size for s in self.spaces)

    def __eq__(self, other):
        return (
            type(self) is type(other)
            and (self.kind, list(self.keys)) == (other.kind, list(other.keys))
            and self.spaces == other.spaces
        )

    def __repr__(self):
        return f"{self.kind.__name__}VSpace({self.spaces})"

    def _build(self, values):
        if self.kind is dict:
            return dict(zip(self.keys, values))
        return self.kind(values) if self.kind in (tuple, list) else tuple(values)

    def _map(self, method, *values):
        return self._build(
            getattr(s, method)(*(v[k] for v in values)) for s, k in zip(self.spaces, self.keys)
        )

    def zeros(self):
        return self._build(s.zeros() for s in self.spaces)

    def ones(self):
        return self._build(s.ones() for s in self.spaces)

    def randn(self):
        return self._build(s.randn() for s in self.spaces)

    def add(self, x, y):
        return self._map("add", x, y)

    def scalar_mul(self, x, a):
        return self._build(s.scalar_mul(x[k], a) for s, k in zip(self.spaces, self.keys))

    def inner_prod(self, x, y):
        return sum(s.inner_prod(x[k], y[k]) for s, k in zip(self.spaces, self.keys))

    def covector(self, x):
        return self._map("covector", x)


def vspace(value):
    """The vector space ``value`` lives in."""
    if isinstance(value, (tuple, list, dict)):
        return ContainerVSpace(value)
    return VSpace(value)
