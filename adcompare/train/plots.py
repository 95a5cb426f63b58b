"""Pictures of a training run (the loss curve, the decision boundary) and of the
training step's cost by reverse and forward mode.

Figures are drawn with matplotlib's object interface (no display, no pyplot
state) and written as PNG files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from adcompare.engines.reverse import no_grad
from adcompare.ops import softmax
from adcompare.train.loop import TrainingRun
from adcompare.train.step import MODES

__all__ = ["plot_decision_boundary", "plot_loss_curve", "plot_training_step"]

CLASS_COLOURS = ("#1f77b4", "#d62728")


def plot_loss_curve(run: TrainingRun, path: str | Path) -> Path:
    """Write the loss per step and per epoch, with training accuracy, to ``path``."""
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    loss_axes = figure.add_subplot()
    steps_per_epoch = len(run.step_losses) / len(run.epoch_losses)
    step_epochs = np.arange(1, len(run.step_losses) + 1) / steps_per_epoch
    loss_axes.plot(step_epochs, run.step_losses, color="0.75", lw=0.8, label="loss per mini-batch")
    epochs = np.arange(1, len(run.epoch_losses) + 1)
    loss_axes.plot(epochs, run.epoch_losses, color="black", lw=1.6, label="mean loss per epoch")
    loss_axes.set_yscale("log")
    loss_axes.set_xlabel("epoch")
    loss_axes.set_ylabel("cross-entropy loss (log scale)")
    accuracy_axes = loss_axes.twinx()
    accuracy_axes.plot(epochs, run.epoch_accuracies, color="tab:green", lw=1.6, label="accuracy")
    accuracy_axes.axhline(run.config.target_accuracy, color="tab:green", ls=":", lw=1)
    accuracy_axes.set_ylim(0.4, 1.02)
    accuracy_axes.set_ylabel("training accuracy", color="tab:green")
    reached = run.epoch_target_reached
    if reached is not None:
        accuracy_axes.axvline(reached, color="tab:green", ls="--", lw=1)
        accuracy_axes.annotate(
            f"{run.config.target_accuracy:.0%} at epoch {reached}",
            (reached, run.config.target_accuracy),
            xytext=(6, -18),
            textcoords="offset points",
            color="tab:green",
        )
    lines = loss_axes.get_lines() + accuracy_axes.get_lines()[:1]
    loss_axes.legend(lines, [line.get_label() for line in lines], loc="center right")
    config = run.config
    loss_axes.set_title(
        f"{config.dataset}: MLP {config.depth}×{config.hidden} {config.activation}, Adam "
        f"lr={config.lr:g}, batch {config.batch_size}, seed {config.seed} — final accuracy "
        f"{run.final_accuracy:.1%} in {run.seconds:.1f} s"
    )
    return _save(figure, path)


def plot_decision_boundary(run: TrainingRun, path: str | Path, resolution: int = 300) -> Path:
    """Write the model's class-1 probability over the plane, with the data, to ``path``."""
    low = run.x.min(axis=0) - 0.25
    high = run.x.max(axis=0) + 0.25
    grid_x, grid_y = np.meshgrid(
        np.linspace(low[0], high[0], resolution), np.linspace(low[1], high[1], resolution)
    )
    points = np.stack([grid_x.ravel(), grid_y.ravel()], axis=1)
    with no_grad():
        probability = softmax(run.model(points), axis=1).numpy()[:, 1].reshape(grid_x.shape)
    figure = Figure(figsize=(6.2, 5.5), layout="constrained")
    axes = figure.add_subplot()
    shading = axes.contourf(
        grid_x, grid_y, probability, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.55
    )
    axes.contour(grid_x, grid_y, probability, levels=[0.5], colors="black", linewidths=1.5)
    axes.scatter(
        run.x[:, 0],
        run.x[:, 1],
        c=run.y,
        cmap=ListedColormap(CLASS_COLOURS),
        s=14,
        edgecolors="white",
        linewidths=0.5,
    )
    figure.colorbar(shading, ax=axes, label="predicted probability of class 1 (red)")
    axes.set_aspect("equal")
    axes.set_xlabel("x₁")
    axes.set_ylabel("x₂")
    axes.set_title(
        f"{run.config.dataset}: decision boundary (black line, p = 0.5)\n"
        f"training accuracy {run.final_accuracy:.1%} on {len(run.y)} points"
    )
    return _save(figure, path)


def plot_training_step(rows: list[dict], path: str | Path) -> Path:
    """Write element work and time against P, reverse against forward mode, to ``path``;
    ``rows`` are :func:`~adcompare.train.step.step_rows` of the measured cells."""
    p = [row["n_params"] for row in rows]
    figure = Figure(figsize=(10, 4.2), layout="constrained")
    for axes, key, label in zip(
        figure.subplots(1, 2),
        ("elements", "seconds"),
        ("element work (deterministic count)", "seconds (median of repeats)"),
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
    return _save(figure, path)


def _save(figure: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path
