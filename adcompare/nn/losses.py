"""Loss modules: the functional losses with their ``reduction`` fixed."""

from __future__ import annotations

from adcompare.nn import functional
from adcompare.nn.module import Module

__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "MSELoss"]


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        functional.check_reduction(reduction, type(self).__name__)
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}" if self.reduction != "mean" else ""


class MSELoss(_Loss):
    """Squared error, as ``functional.mse_loss``.

    >>> import numpy as np
    >>> from adcompare import nn
    >>> print(nn.MSELoss(reduction="sum")(np.array([1.0, 3.0]), np.array([0.0, 0.0])))
    10.0
    """

    def forward(self, prediction, target):
        return functional.mse_loss(prediction, target, self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy from logits and integer class labels, as ``functional.cross_entropy``.

    >>> import numpy as np
    >>> from adcompare import nn
    >>> print(round(float(nn.CrossEntropyLoss()(np.zeros((2, 4)), np.array([0, 3]))), 6))
    1.386294
    """

    def forward(self, logits, target):
        return functional.cross_entropy(logits, target, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy from logits, as ``functional.binary_cross_entropy_with_logits``.

    >>> import numpy as np
    >>> from adcompare import nn
    >>> nn.BCEWithLogitsLoss(reduction="none")(np.zeros(3), np.ones(3)).shape
    (3,)
    """

    def forward(self, logits, target):
        return functional.binary_cross_entropy_with_logits(logits, target, self.reduction)
