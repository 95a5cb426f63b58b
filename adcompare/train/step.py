"""The training step as a benchmark problem: the gradient of an MLP's loss
with respect to all P parameters, by reverse mode and by forward mode.

The loss is one number and the parameters are P inputs, so reverse mode
gets the whole gradient from one recorded pass and one backward sweep,
while forward mode needs P tangent lanes (in ``ceil(P / chunk)`` passes):
its work grows like P times a forward pass. The benchmark harness measures
it as its problem ``training_step``, swept over P by widening the hidden
layers (``adcompare train --step-cost``, into a results file);
:func:`step_rows` reads those cells back for the figure and the summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from adcompare import nn
from adcompare.train.datasets import two_spirals
from adcompare.train.mlp import MLP, cross_entropy

__all__ = [
    "MODES",
    "WIDTHS",
    "TrainingStep",
    "hidden_for",
    "parameter_counts",
    "step_rows",
    "training_step",
]

#: The modes compared, as the harness names them.
MODES = ("reverse", "forward")

#: The hidden widths ``adcompare train --step-cost`` measures.
WIDTHS = (2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class TrainingStep:
    """The loss of an MLP on a fixed batch as a function of its flat parameter vector."""

    net: MLP
    x: np.ndarray
    one_hot: np.ndarray
    theta: np.ndarray

    @property
    def n_params(self) -> int:
        """P, the number of inputs of the loss."""
        return int(self.theta.size)

    def loss(self, xp, theta):
        """The mean cross-entropy with ``theta`` (any op-set value) as the parameters."""
        return cross_entropy(xp, self.net.forward(xp, theta, self.x), self.one_hot)


def training_step(hidden: int, batch_size: int = 64, seed: int = 0) -> TrainingStep:
    """The problem for an MLP 2 → hidden → hidden → 2 (ReLU) on ``batch_size`` spiral
    points, at the parameters ``nn`` initialises the same MLP with.

    >>> training_step(4).n_params  # (2·4 + 4) + (4·4 + 4) + (4·2 + 2)
    42
    """
    x, y = two_spirals(batch_size // 2, noise=0.05, seed=seed)
    net = MLP((2, hidden, hidden, 2), "relu")
    nn.init.manual_seed(seed)
    theta = net.flatten(net.module())
    return TrainingStep(net, x, np.eye(2)[y], theta)


def parameter_counts(widths=WIDTHS) -> list[int]:
    """P for each hidden width h: h² + 6h + 2.

    >>> parameter_counts((2, 4))
    [18, 42]
    """
    return [h * h + 6 * h + 2 for h in widths]


def hidden_for(n_params: int) -> int:
    """The hidden width whose P is nearest ``n_params`` (at least 1).

    >>> hidden_for(42), hidden_for(40)
    (4, 4)
    """
    return max(1, round(math.sqrt(n_params + 7) - 3))


def step_rows(cells: list[dict]) -> list[dict]:
    """The measured training-step cells as one row per P: each mode's median seconds,
    element work, passes, sweeps and tape records, and the larger of the two modes'
    derivative-check errors (each mode checked against the other engine).

    >>> cell = {"problem": "training_step", "mode": "reverse", "n": 18, "status": "ok",
    ...         "time": {"median": 0.5}, "check": {"error": 0.0},
    ...         "counts": {"elements": {"numpy": 3, "reverse": 4}, "passes": 0, "sweeps": 1,
    ...                    "tape_records": 9}}
    >>> step_rows([cell])[0]["reverse"]["elements"]
    7
    """
    rows: dict[int, dict] = {}
    for cell in cells:
        if cell["problem"] != "training_step" or cell["status"] != "ok":
            continue
        row = rows.setdefault(cell["n"], {"n_params": cell["n"], "check_error": 0.0})
        counts = cell["counts"]
        row[cell["mode"]] = {
            "seconds": cell["time"]["median"],
            "elements": sum(counts["elements"].values()),
            "passes": counts["passes"],
            "sweeps": counts["sweeps"],
            "tape_records": counts["tape_records"],
        }
        row["check_error"] = max(row["check_error"], cell["check"]["error"])
    return [rows[n] for n in sorted(rows)]
