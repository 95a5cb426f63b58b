"""The MLP of the targets: batch 64, 784-128-10, tanh, softmax cross-entropy.

The loss is written once against ``xp``, over one flat vector of all the
weights (W₁, b₁, W₂, b₂), so every engine differentiates the same function;
:func:`make_mlp` also gives its gradient by hand-written numpy backprop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.bench.problems import Instance

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
    ends = np.cumsum([inputs * hidden, hidden, hidden * classes, classes])

    def loss(xp, w):
        w1 = xp.reshape(w[: ends[0]], (inputs, hidden))
        w2 = xp.reshape(w[ends[1] : ends[2]], (hidden, classes))
        activations = xp.tanh(images @ w1 + w[ends[0] : ends[1]])
        logits = activations @ w2 + w[ends[2] :]
        # log Σ exp, shifted by the row maximum so that exp cannot overflow.
        shift = xp.max(logits, axis=1, keepdims=True)
        log_norm = xp.log(xp.sum(xp.exp(logits - shift), axis=1, keepdims=True)) + shift
        return xp.mean(xp.sum(one_hot * (log_norm - logits), axis=1))

    def gradient(w: np.ndarray) -> np.ndarray:
        w1 = w[: ends[0]].reshape(inputs, hidden)
        w2 = w[ends[1] : ends[2]].reshape(hidden, classes)
        activations = np.tanh(images @ w1 + w[ends[0] : ends[1]])
        logits = activations @ w2 + w[ends[2] :]
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        logits_bar = (probabilities - one_hot) / batch
        pre_activation_bar = (logits_bar @ w2.T) * (1.0 - activations**2)
        return np.concatenate(
            [
                (images.T @ pre_activation_bar).ravel(),
                pre_activation_bar.sum(axis=0),
                (activations.T @ logits_bar).ravel(),
                logits_bar.sum(axis=0),
            ]
        )

    weights = np.concatenate(
        [
            rng.standard_normal(inputs * hidden) / np.sqrt(inputs),
            np.zeros(hidden),
            rng.standard_normal(hidden * classes) / np.sqrt(hidden),
            np.zeros(classes),
        ]
    )
    size = {"batch": batch, "inputs": inputs, "hidden": hidden, "classes": classes}
    return Instance("mlp-784", size, loss, weights, weights.size, 1, "many-inputs"), gradient
