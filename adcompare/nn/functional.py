"""Layers and losses as functions of tensors, as ``torch.nn.functional``.

Every loss takes ``reduction``: ``"mean"`` (the default) averages the
per-sample losses, ``"sum"`` adds them, ``"none"`` returns them. Since
differentiation is linear, the gradient of the mean loss over a batch is
the average of the per-sample gradients, and the sum's is ``N`` times that.

The activations (``relu``, ``tanh``, ``sigmoid``, ``softmax``,
``log_softmax``) are the op set's own. Everything is built from the op set,
so it needs no derivative code and works in both engines (``Tensor`` and
``Dual``).
"""

from __future__ import annotations

import numpy as np

from adcompare import ops
from adcompare.ops import (
    getitem,
    log_softmax,
    matmul,
    mean,
    negative,
    relu,
    sigmoid,
    softmax,
    softplus,
    square,
    tanh,
    transpose,
)
from adcompare.ops.registry import raw, shape_of

__all__ = [
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "linear",
    "log_softmax",
    "mse_loss",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]

REDUCTIONS = ("mean", "sum", "none")


def linear(x, weight, bias=None):
    """``x·Wᵀ + b`` with ``weight`` of shape (out_features, in_features).

    >>> print(linear(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]), np.array([0.5])))
    [[11.5]]
    """
    in_features = shape_of(weight)[-1]
    if shape_of(x)[-1:] != (in_features,):
        raise ValueError(
            f"linear: input of shape {shape_of(x)} does not end in in_features={in_features} "
            f"(the weight has shape {shape_of(weight)}); pass inputs of shape (N, {in_features})"
        )
    out = matmul(x, transpose(weight))
    return out if bias is None else out + bias


def _reduce(losses, reduction: str):
    if reduction == "mean":
        return mean(losses)
    if reduction == "sum":
        return ops.sum(losses)
    return losses


def check_reduction(reduction: str, name: str) -> None:
    """Refuse a ``reduction`` other than "mean", "sum" or "none", naming ``name``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction={reduction!r}; use one of {', '.join(REDUCTIONS)}")


def mse_loss(prediction, target, reduction: str = "mean"):
    """Squared error ``(prediction - target)²``, reduced over every element.

    >>> print(mse_loss(np.array([1.0, 3.0]), np.array([0.0, 0.0])))
    5.0
    >>> print(mse_loss(np.array([1.0, 3.0]), np.array([0.0, 0.0]), reduction="none"))
    [1. 9.]
    """
    check_reduction(reduction, "mse_loss")
    if shape_of(prediction) != shape_of(target):
        raise ValueError(
            f"mse_loss: prediction of shape {shape_of(prediction)} against target of shape "
            f"{shape_of(target)}; reshape one so the shapes agree (broadcasting here is "
            "almost always a bug)"
        )
    return _reduce(square(prediction - target), reduction)


def cross_entropy(logits, target, reduction: str = "mean"):
    """Cross-entropy of integer class ``target`` (N,) under ``logits`` (N, C).

    The per-sample loss is ``logsumexp(z) - z[target]``, computed through
    ``log_softmax`` (stable for large logits); its gradient with respect to
    the logits is ``softmax(z) - onehot(target)``.

    >>> print(round(float(cross_entropy(np.array([[0.0, 0.0]]), np.array([1]))), 6))
    0.693147
    >>> print(cross_entropy(np.array([[1000.0, 0.0]]), np.array([0])))
    0.0
    """
    check_reduction(reduction, "cross_entropy")
    shape = shape_of(logits)
    labels = np.asarray(raw(target))
    if len(shape) != 2:
        raise ValueError(
            f"cross_entropy: logits must have shape (N, C), got {shape}; "
            "for one sample use logits[None] and target[None]"
        )
    if not np.issubdtype(labels.dtype, np.integer) or labels.shape != shape[:1]:
        raise ValueError(
            f"cross_entropy: target must be {shape[0]} integer class labels (shape "
            f"({shape[0]},)), got dtype {labels.dtype} and shape {labels.shape}; "
            "convert with target.astype(int)"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= shape[1]):
        raise ValueError(
            f"cross_entropy: class labels must lie in 0..{shape[1] - 1} for {shape[1]} "
            f"classes, got labels from {labels.min()} to {labels.max()}"
        )
    log_probabilities = log_softmax(logits, axis=1)
    picked = getitem(log_probabilities, (np.arange(shape[0]), labels))
    return _reduce(negative(picked), reduction)


def binary_cross_entropy_with_logits(logits, target, reduction: str = "mean"):
    """Binary cross-entropy of ``target`` in [0, 1] under ``sigmoid(logits)``.

    Computed as ``softplus(z) - z·y``, which equals
    ``-(y·log σ(z) + (1-y)·log(1-σ(z)))`` and never overflows.

    >>> print(round(float(binary_cross_entropy_with_logits(np.array([0.0]), np.array([1.0]))), 6))
    0.693147
    """
    check_reduction(reduction, "binary_cross_entropy_with_logits")
    if shape_of(logits) != shape_of(target):
        raise ValueError(
            f"binary_cross_entropy_with_logits: logits of shape {shape_of(logits)} against "
            f"target of shape {shape_of(target)}; the shapes must agree"
        )
    return _reduce(softplus(logits) - logits * target, reduction)
