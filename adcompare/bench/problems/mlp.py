"""The MLP of the targets: batch 64, 784-128-10, tanh, softmax cross-entropy.

The loss is :class:`~adcompare.train.mlp.MLP`'s forward pass and its
cross-entropy, over one flat vector of all the weights, so every engine
differentiates the same function; :func:`make_mlp` also gives its gradient by
hand-written numpy backprop (:meth:`~adcompare.train.mlp.MLP.backprop`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.bench.problems import Instance, problem
from adcompare.train.mlp import MLP, cross_entropy

__all__ = ["make_mlp"]


def make_mlp(
    batch: int = 64, inputs: int = 784, hidden: int = 128, classes: int = 10
) -> tuple[Instance, Callable[[np.ndarray], np.ndarray]]:
    """The loss as an :class:`Instance` over its weights, and its hand-written gradient.

    The data are fixed: pixel-like inputs in [0, 1) and random labels, from a
    seeded generator.

    >>> inst, gradient = make_mlp(batch=2, inputs=3, hidden=4, classes=2)
    >>> inst.n, gradient(inst.x).shape
    (26, (26,))
    """
    rng = np.random.default_rng([batch, inputs, hidden, classes])
    images = rng.random((batch, inputs))
    one_hot = np.eye(classes)[rng.integers(0, classes, batch)]
    net = MLP((inputs, hidden, classes), "tanh")

    def loss(xp, w):
        return cross_entropy(xp, net.forward(xp, w, images), one_hot)

    def softmax_minus_labels(logits: np.ndarray) -> np.ndarray:
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return (probabilities - one_hot) / batch

    def gradient(w: np.ndarray) -> np.ndarray:
        return net.backprop(w, images, softmax_minus_labels)

    weights = net.scaled_normal(rng)
    size = {"batch": batch, "inputs": inputs, "hidden": hidden, "classes": classes}
    model = problem(
        build=lambda **_: (loss, weights),
        name="mlp-784",
        sweep=tuple(size),
        family="many-inputs",
        xp=True,
        studies=(),
    )
    return model.build(**size), gradient
