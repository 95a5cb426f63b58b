"""The MLP: layer widths and an activation, written once against an array namespace ``xp``.

Its parameters are one flat vector, layer by layer: the weight, in × out
(``nn.Linear``'s weight transposed, so a layer is ``x @ weight + bias`` and
its cotangent needs no copy), then the bias. :meth:`MLP.module` is the same
MLP as an ``nn`` module; :meth:`MLP.flatten` and :meth:`MLP.module_parameters`
carry parameters between the two. The forward pass runs on numpy (plain f),
on adcompare's dual numbers and tensors, and on the peers' arrays alike;
:meth:`MLP.backprop` is its gradient written by hand in numpy, the baseline
the engines are measured against.

>>> import numpy as np
>>> net = MLP((2, 3, 1))
>>> net.n_params, net.forward(np, np.zeros(net.n_params), np.ones((4, 2))).shape
(13, (4, 1))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from adcompare import nn

__all__ = ["ACTIVATIONS", "MLP", "cross_entropy", "mean_squared_error"]

#: Each activation: written against ``xp``, as an ``nn`` module, and its slope in
#: terms of its own output (what backprop by hand multiplies by).
ACTIVATIONS: dict[str, tuple[Callable, type, Callable[[np.ndarray], np.ndarray]]] = {
    "relu": (lambda xp, z: xp.maximum(z, 0.0), nn.ReLU, lambda a: (a > 0.0).astype(a.dtype)),
    "tanh": (lambda xp, z: xp.tanh(z), nn.Tanh, lambda a: 1.0 - a**2),
    "sigmoid": (lambda xp, z: 1.0 / (1.0 + xp.exp(-z)), nn.Sigmoid, lambda a: a * (1.0 - a)),
}


def mean_squared_error(xp, prediction, targets):
    """The mean of the squared differences.

    >>> import numpy as np
    >>> float(mean_squared_error(np, np.array([1.0, 3.0]), np.array([0.0, 0.0])))
    5.0
    """
    return xp.mean((prediction - targets) ** 2)


def cross_entropy(xp, logits, one_hot):
    """The mean softmax cross-entropy of rows of ``logits`` against one-hot labels.

    >>> import numpy as np
    >>> loss = cross_entropy(np, np.zeros((2, 4)), np.eye(4)[:2])  # equal logits: log 4
    >>> print(round(float(loss), 12), round(float(np.log(4.0)), 12))
    1.38629436112 1.38629436112
    """
    # log Σ exp, shifted by the row maximum so that exp cannot overflow.
    shift = xp.max(logits, axis=1, keepdims=True)
    log_norm = xp.log(xp.sum(xp.exp(logits - shift), axis=1, keepdims=True)) + shift
    return xp.mean(xp.sum(one_hot * (log_norm - logits), axis=1))


@dataclass(frozen=True)
class MLP:
    """Dense layers of ``widths`` (inputs, hidden..., outputs), ``activation`` between them.

    >>> MLP((784, 128, 10)).n_params
    101770
    """

    widths: tuple[int, ...]
    activation: str = "tanh"

    def __post_init__(self):
        if len(self.widths) < 2 or min(self.widths) < 1:
            raise ValueError(f"an MLP needs two or more positive widths, not {self.widths}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}"
            )

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """Each layer's weight shape, (in, out)."""
        return list(zip(self.widths[:-1], self.widths[1:]))

    @property
    def n_params(self) -> int:
        """How many numbers the flat parameter vector holds."""
        return sum((inputs + 1) * out for inputs, out in self.shapes)

    def layers(self, xp, w) -> list[tuple]:
        """The flat vector ``w`` as each layer's (weight, bias)."""
        layers, start = [], 0
        for inputs, out in self.shapes:
            weight = xp.reshape(w[start : start + inputs * out], (inputs, out))
            start += inputs * out
            layers.append((weight, w[start : start + out]))
            start += out
        return layers

    def forward(self, xp, w, inputs):
        """The outputs (before any loss) for rows of ``inputs``, with parameters ``w``."""
        act = ACTIVATIONS[self.activation][0]
        layers = self.layers(xp, w)
        for weight, bias in layers[:-1]:
            inputs = act(xp, inputs @ weight + bias)
        weight, bias = layers[-1]
        return inputs @ weight + bias

    def backprop(self, w: np.ndarray, inputs: np.ndarray, output_bar) -> np.ndarray:
        """The gradient of a loss over ``w``, by hand in numpy, given ``output_bar(z)``:
        the loss's derivative with respect to the outputs ``z``.

        >>> net = MLP((2, 1))  # one linear layer: z = x·w + b, loss Σz
        >>> net.backprop(np.ones(3), np.array([[1.0, 2.0]]), np.ones_like)
        array([1., 2., 1.])
        """
        activation, slope = ACTIVATIONS[self.activation][0], ACTIVATIONS[self.activation][2]
        layers = self.layers(np, w)
        activations = [inputs]
        for weight, bias in layers[:-1]:
            activations.append(activation(np, activations[-1] @ weight + bias))
        weight, bias = layers[-1]
        z_bar = output_bar(activations[-1] @ weight + bias)
        pieces = []
        for index in range(len(layers) - 1, -1, -1):
            weight = layers[index][0]
            pieces[:0] = [(activations[index].T @ z_bar).ravel(), z_bar.sum(axis=0)]
            if index:
                z_bar = (z_bar @ weight.T) * slope(activations[index])
        return np.concatenate(pieces)

    def scaled_normal(self, rng: np.random.Generator) -> np.ndarray:
        """Starting parameters: each weight normal with variance 1 ÷ its fan-in, biases 0.

        >>> MLP((2, 3, 1)).scaled_normal(np.random.default_rng(0)).shape
        (13,)
        """
        pieces = []
        for inputs, out in self.shapes:
            pieces += [rng.standard_normal(inputs * out) / np.sqrt(inputs), np.zeros(out)]
        return np.concatenate(pieces)

    def module(self) -> nn.Sequential:
        """The same MLP as an ``nn`` module (its own initial parameters).

        >>> MLP((2, 8, 2), "relu").module()
        Sequential(
          (0): Linear(in_features=2, out_features=8, bias=True)
          (1): ReLU()
          (2): Linear(in_features=8, out_features=2, bias=True)
        )
        """
        layers: list[nn.Module] = []
        for inputs, out in self.shapes:
            layers += [nn.Linear(inputs, out), ACTIVATIONS[self.activation][1]()]
        return nn.Sequential(*layers[:-1])

    def flatten(self, module: nn.Sequential) -> np.ndarray:
        """The flat vector of :meth:`module`'s parameters (each weight transposed).

        >>> net = MLP((2, 3, 1))
        >>> w = net.scaled_normal(np.random.default_rng(0))
        >>> module = net.module()
        >>> module.load_state_dict(net.module_parameters(w))
        >>> bool(np.array_equal(net.flatten(module), w))
        True
        """
        parameters = [p.detach().numpy() for p in module.parameters()]
        return np.concatenate(
            [piece.T.ravel() if piece.ndim == 2 else piece for piece in parameters]
        )

    def module_parameters(self, w) -> dict:
        """The flat vector ``w`` as :meth:`module`'s parameters by name."""
        return {
            name: value
            for index, (weight, bias) in enumerate(self.layers(np, w))
            for name, value in ((f"{2 * index}.weight", weight.T), (f"{2 * index}.bias", bias))
        }
