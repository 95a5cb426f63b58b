"""Optimizers: ``SGD`` and ``Adam`` with PyTorch's update formulas.

``step()`` updates each parameter in place inside ``no_grad()``, so the
update is not recorded and the parameters stay leaves; parameters whose
``grad`` is ``None`` are skipped. Per-parameter state (momentum buffers,
Adam's moments) lives in ``optimizer.state[parameter]``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from adcompare.engines.reverse import Tensor, no_grad
from adcompare.ops import sqrt

__all__ = ["SGD", "Adam", "Optimizer"]


class Optimizer:
    """What every optimizer shares: its parameters, its state, ``zero_grad``."""

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError(
                f"{type(self).__name__} got an empty parameter list; pass model.parameters()"
            )
        seen: dict[int, int] = {}
        for index, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad or not p.is_leaf:
                raise TypeError(
                    f"{type(self).__name__}: parameter {index} is not a leaf Tensor that "
                    "requires grad; optimizers update leaves (nn.Parameter or "
                    "Tensor(..., requires_grad=True))"
                )
            # A parameter listed twice would be stepped twice per step(): refuse rather
            # than warn (PyTorch warns, and plans to raise) or silently drop one entry.
            first = seen.setdefault(id(p), index)
            if first != index:
                raise ValueError(
                    f"{type(self).__name__}: parameter {index} is parameter {first} again, "
                    "so it would be stepped twice; list each parameter once"
                )
        _check_nonnegative(type(self).__name__, lr=lr)
        self.lr = lr
        self.state: dict[Tensor, dict] = {p: {} for p in self.params}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient: to ``None`` (default), or to zeros."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = np.zeros(p.shape, dtype=p.dtype)

    def step(self) -> None:
        """Update every parameter that has a gradient, without recording."""
        with no_grad():
            for p in self.params:
                if p.grad is not None:
                    self._update(p, p.grad.detach(), self.state[p])

    def _update(self, p: Tensor, grad: Tensor, state: dict) -> None:
        raise NotImplementedError


def _check_nonnegative(name: str, **values: float) -> None:
    for key, value in values.items():
        if not value >= 0.0:
            raise ValueError(f"{name}: {key} must be a non-negative number, got {value!r}")


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's momentum and weight decay.

    With gradient ``g``, parameter ``p``, step ``t``::

        g ← g + weight_decay · p
        b ← g                                   at t = 1 (with momentum)
        b ← momentum · b + (1 − dampening) · g  afterwards
        g ← g + momentum · b  if nesterov, else  g ← b
        p ← p − lr · g

    >>> import adcompare as ad
    >>> w = ad.Tensor([1.0], requires_grad=True)
    >>> opt = SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> print(w)  # 1 - 0.1·2 = 0.8, then 0.8 - 0.1·(0.9·2 + 1.6) = 0.46
    tensor([0.46], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(params, lr)
        _check_nonnegative("SGD", momentum=momentum, weight_decay=weight_decay, dampening=dampening)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov momentum needs momentum > 0 and dampening = 0")
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def _update(self, p: Tensor, grad: Tensor, state: dict) -> None:
        if self.weight_decay:
            grad = grad + self.weight_decay * p
        if self.momentum:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = grad.detach().clone()
            else:
                buffer = state["momentum_buffer"]
                buffer *= self.momentum
                buffer += (1.0 - self.dampening) * grad
            buffer = state["momentum_buffer"]
            grad = grad + self.momentum * buffer if self.nesterov else buffer
        p -= self.lr * grad


class Adam(Optimizer):
    """Adam with PyTorch's bias correction.

    With gradient ``g``, parameter ``p``, step ``t`` (from 1)::

        g ← g + weight_decay · p
        m ← β₁ · m + (1 − β₁) · g          (m, v start at 0)
        v ← β₂ · v + (1 − β₂) · g²
        p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + eps)

    >>> import adcompare as ad
    >>> w = ad.Tensor([1.0, -2.0], requires_grad=True)
    >>> opt = Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> print(w)  # the first step moves each weight by lr against its gradient's sign
    tensor([ 0.9, -1.9], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, lr)
        _check_nonnegative("Adam", eps=eps, weight_decay=weight_decay)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"Adam: betas must be two numbers in [0, 1), got {betas!r}")
        self.betas = tuple(betas)
        self.eps = eps
        self.weight_decay = weight_decay

    def _update(self, p: Tensor, grad: Tensor, state: dict) -> None:
        beta1, beta2 = self.betas
        if self.weight_decay:
            grad = grad + self.weight_decay * p
        if not state:
            state["step"] = 0
            state["exp_avg"] = Tensor(np.zeros(p.shape, dtype=p.dtype))
            state["exp_avg_sq"] = Tensor(np.zeros(p.shape, dtype=p.dtype))
        state["step"] += 1
        step = state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg *= beta1
        exp_avg += (1.0 - beta1) * grad
        exp_avg_sq *= beta2
        exp_avg_sq += (1.0 - beta2) * grad * grad
        corrected_mean = exp_avg / (1.0 - beta1**step)
        corrected_square = exp_avg_sq / (1.0 - beta2**step)
        p -= self.lr * corrected_mean / (sqrt(corrected_square) + self.eps)
