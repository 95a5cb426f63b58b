"""Per-example gradients: what a mini-batch does to the gradient, example by example.

The problem ``per_example`` is the vector of the ``m`` examples' losses of a
small tanh network as a function of its ``n`` weights: its m×n Jacobian is
the matrix of per-example gradients, whose mean row is the gradient of the
mean loss. It is swept over the batch size ``m`` and computed three ways:

``per-example:loop``
    a Python loop of reverse passes, one example at a time (what a plain
    training loop would do: m recorded passes and m sweeps);
``per-example:vmap``
    ``vmap(grad(loss), in_axes=(None, 0, 0))``: one recorded pass over the
    batch, one sweep (JAX's and torch.func's recipe; Opacus computes the
    same);
``forward``
    forward lanes: ``jacfwd`` of the loss vector, one lane per weight, so
    every example's gradient comes out of ``ceil(n / k)`` passes.

The group ``per-example`` names these three and ``reverse`` (``jacrev``:
one recorded pass, m sweeps) for reference.
"""

from __future__ import annotations

import zlib

import numpy as np

import adcompare as ad

__all__ = ["MODE_NAMES", "PREPARERS", "example_loss", "make_per_example", "unavailable_reason"]

_INPUTS = 4
_HIDDEN = 8


def _split(xp, w):
    """The network's weights from the flat vector: ``(W1, b1, w2, b2)``."""
    d, h = _INPUTS, _HIDDEN
    sizes = np.cumsum([d * h, h, h])
    return xp.reshape(w[: sizes[0]], (d, h)), w[sizes[0] : sizes[1]], w[sizes[1] : sizes[2]], w[-1]


def example_loss(xp, w, x, y):
    """Squared error of the network on one example ``x`` (or a batch of rows)."""
    w1, b1, w2, b2 = _split(xp, w)
    prediction = xp.tanh(x @ w1 + b1) @ w2 + b2
    return (prediction - y) ** 2


def make_per_example(m: int):
    """``(f, w)``: the batch's vector of losses and the weights, with the data on ``f``.

    >>> f, w = make_per_example(3)
    >>> f(np, w).shape, w.shape
    ((3,), (49,))
    """
    rng = np.random.default_rng([zlib.crc32(b"per_example"), m])
    inputs = rng.standard_normal((m, _INPUTS))
    targets = np.sin(inputs.sum(axis=1))

    def f(xp, w):
        return example_loss(xp, w, inputs, targets)

    f.examples = (inputs, targets)  # what the per-example modes map over
    n = _INPUTS * _HIDDEN + 2 * _HIDDEN + 1
    return f, rng.standard_normal(n) / np.sqrt(_INPUTS)


def _gradient():
    return ad.grad(lambda w, x, y: example_loss(ad, w, x, y))


def loop(instance):
    """A Python loop of reverse passes, one per example."""
    gradient, (inputs, targets), w = _gradient(), instance.f.examples, instance.x
    return lambda: np.stack([gradient(w, x, y) for x, y in zip(inputs, targets)])


def batched(instance):
    """``vmap`` of the reverse gradient over the examples."""
    batched = ad.vmap(_gradient(), in_axes=(None, 0, 0))
    (inputs, targets), w = instance.f.examples, instance.x
    return lambda: batched(w, inputs, targets)


def unavailable_reason(instance) -> str | None:
    """Why ``instance`` has no examples to map over, or ``None``."""
    if getattr(instance.f, "examples", None) is None:
        return "per-example modes need a problem made of examples (per_example)"
    return None


#: The per-example modes: name, label and how to prepare the work.
PREPARERS = {
    "per-example:loop": ("per-example, loop of reverse passes", loop),
    "per-example:vmap": ("per-example, vmap over reverse", batched),
}

#: The modes the ``per-example`` group names.
MODE_NAMES = ("per-example:loop", "per-example:vmap", "forward", "reverse")
