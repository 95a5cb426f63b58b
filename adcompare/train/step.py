"""The training step as a benchmark problem: the gradient of an MLP's loss
with respect to all P parameters, by reverse mode and by forward mode.

The loss is one number and the parameters are P inputs, so reverse mode
gets the whole gradient from one recorded pass and one backward sweep,
while forward mode needs P tangent lanes (in ``ceil(P / chunk)`` passes):
its work grows like P times a forward pass. ``sweep_training_step`` grows P
by widening the hidden layers and measures both.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adcompare import nn
from adcompare.runtime.cost import count
from adcompare.train.datasets import two_spirals
from adcompare.train.loop import build_mlp
from adcompare.transforms import grad

__all__ = [
    "TrainingStep",
    "measure_training_step",
    "sweep_training_step",
    "training_step",
    "write_training_step",
]

MODES = ("reverse", "forward")


@dataclass
class TrainingStep:
    """The loss of an MLP on a fixed batch as a function of its flat parameter vector."""

    model: nn.Module
    x: np.ndarray
    y: np.ndarray
    theta: np.ndarray

    @property
    def n_params(self) -> int:
        """P, the number of inputs of the loss."""
        return int(self.theta.size)

    def loss(self, theta):
        """The mean cross-entropy with ``theta`` (any op-set value) as the parameters."""
        shapes = {name: p.shape for name, p in self.model.named_parameters()}
        parameters = nn.vector_to_parameters(theta, shapes)
        logits = nn.functional_call(self.model, parameters, self.x)
        return nn.functional.cross_entropy(logits, self.y)


def training_step(hidden: int, batch_size: int = 64, seed: int = 0) -> TrainingStep:
    """The problem for an MLP 2 → hidden → hidden → 2 on ``batch_size`` spiral points.

    >>> training_step(4).n_params  # (2·4 + 4) + (4·4 + 4) + (4·2 + 2)
    42
    """
    x, y = two_spirals(batch_size // 2, noise=0.05, seed=seed)
    nn.init.manual_seed(seed)
    model = build_mlp(2, hidden, 2, 2)
    return TrainingStep(model, x, y, nn.parameters_to_vector(model.parameters()))


def measure_training_step(problem: TrainingStep, repeats: int = 3) -> dict:
    """Counts and best-of-``repeats`` seconds of the gradient by each mode.

    >>> row = measure_training_step(training_step(2), repeats=1)
    >>> row["reverse"]["sweeps"], row["forward"]["passes"], row["max_difference"] < 1e-12
    (1, 1, True)
    """
    row: dict = {"n_params": problem.n_params}
    gradients = {}
    for mode in MODES:
        gradient_fn = grad(problem.loss, mode=mode)
        with count() as cost:
            gradients[mode] = gradient_fn(problem.theta)
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            gradient_fn(problem.theta)
            seconds.append(time.perf_counter() - start)
        row[mode] = {
            "seconds": min(seconds),
            "elements": sum(cost.elements.values()),
            "passes": cost.passes,
            "sweeps": cost.sweeps,
            "tape_records": cost.tape_records,
        }
    row["max_difference"] = float(np.max(np.abs(gradients["reverse"] - gradients["forward"])))
    return row


def sweep_training_step(widths=(2, 4, 8, 16, 32, 64), repeats: int = 3) -> list[dict]:
    """One measurement per hidden width, P growing roughly like width²."""
    return [
        {"hidden": width, **measure_training_step(training_step(width), repeats)}
        for width in widths
    ]


def write_training_step(rows: list[dict], out: str | Path) -> list[Path]:
    """Write the sweep as ``training_step.json`` and ``training_step.png`` in ``out``."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data_path = out / "training_step.json"
    data_path.write_text(json.dumps({"problem": "mlp_training_step", "rows": rows}, indent=2))
    p = [row["n_params"] for row in rows]
    figure = Figure(figsize=(10, 4.2), layout="constrained")
    for axes, key, label in zip(
        figure.subplots(1, 2),
        ("elements", "seconds"),
        ("element work (deterministic count)", "seconds (best of repeats)"),
    ):
        for mode, colour in zip(MODES, ("tab:blue", "tab:orange")):
            axes.plot(p, [row[mode][key] for row in rows], "o-", color=colour, label=mode)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xticks(p, [str(v) for v in p])
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.set_xlabel("P, parameters of the MLP")
        axes.set_ylabel(label)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
    last = rows[-1]
    figure.suptitle(
        "Gradient of the MLP loss w.r.t. all P parameters: reverse mode (1 sweep) against "
        f"forward mode (P lanes)\nat P = {last['n_params']} forward mode does "
        f"{last['forward']['elements'] / last['reverse']['elements']:.0f}× the work"
    )
    plot_path = out / "training_step.png"
    figure.savefig(plot_path, dpi=110)
    return [plot_path, data_path]
