"""Layers: ``Linear``, the activations, ``Sequential`` and ``Flatten``."""

from __future__ import annotations

import math

import numpy as np

from adcompare.nn import functional
from adcompare.nn.init import uniform
from adcompare.nn.module import Module
from adcompare.nn.parameter import Parameter
from adcompare.ops import relu, reshape, sigmoid, tanh
from adcompare.ops.registry import shape_of

__all__ = ["Flatten", "Linear", "ReLU", "Sequential", "Sigmoid", "Tanh"]


class Linear(Module):
    """``y = x·Wᵀ + b``, laid out and initialised as PyTorch's ``nn.Linear``.

    ``weight`` has shape (out_features, in_features) and ``bias`` shape
    (out_features,); both are drawn uniformly from ±1/√in_features (what
    PyTorch's ``kaiming_uniform_(a=√5)`` amounts to) from ``generator``, or
    from the default generator that ``nn.init.manual_seed`` resets.

    >>> from adcompare import nn
    >>> layer = nn.Linear(3, 2, generator=np.random.default_rng(0))
    >>> layer.weight.shape, layer.bias.shape
    ((2, 3), (2,))
    >>> layer(np.zeros((5, 3))).shape
    (5, 2)
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        generator: np.random.Generator | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"Linear: {name} must be a positive integer, got {value!r}")
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(uniform((out_features, in_features), bound, generator))
        if bias:
            self.bias = Parameter(uniform((out_features,), bound, generator))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class ReLU(Module):
    """``max(x, 0)`` elementwise (derivative 0 at 0, as PyTorch).

    >>> from adcompare import nn
    >>> print(nn.ReLU()(np.array([-1.0, 2.0])))
    [0. 2.]
    """

    def forward(self, x):
        return relu(x)


class Tanh(Module):
    """``tanh(x)`` elementwise.

    >>> from adcompare import nn
    >>> print(nn.Tanh()(np.array([0.0])))
    [0.]
    """

    def forward(self, x):
        return tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise.

    >>> from adcompare import nn
    >>> print(nn.Sigmoid()(np.array([0.0])))
    [0.5]
    """

    def forward(self, x):
        return sigmoid(x)


class Flatten(Module):
    """Merge the axes ``start_dim..end_dim`` into one (by default all but the batch axis).

    >>> from adcompare import nn
    >>> nn.Flatten()(np.zeros((4, 2, 3))).shape
    (4, 6)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x):
        shape = shape_of(x)
        start = self.start_dim % len(shape) if shape else 0
        end = self.end_dim % len(shape) if shape else 0
        if start > end:
            raise ValueError(
                f"Flatten: start_dim={self.start_dim} comes after end_dim={self.end_dim} "
                f"for an input of shape {shape}"
            )
        merged = math.prod(shape[start : end + 1])
        return reshape(x, shape[:start] + (merged,) + shape[end + 1 :])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Sequential(Module):
    """Modules applied in order; they are named ``0``, ``1``, ... as in PyTorch.

    >>> from adcompare import nn
    >>> model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    >>> len(model), type(model[1]).__name__
    (3, 'Tanh')
    >>> model(np.zeros((7, 2))).shape
    (7, 1)
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for index, module in enumerate(modules):
            if not isinstance(module, Module):
                raise TypeError(
                    f"Sequential: argument {index} is a {type(module).__name__}, not a Module; "
                    "wrap functions in a Module subclass"
                )
            setattr(self, str(index), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index: int | slice) -> Module:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(*modules[index])
        return modules[index]

    def forward(self, x):
        for module in self:
            x = module(x)
        return x
