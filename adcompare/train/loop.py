"""Train an MLP classifier on synthetic data: the loop every PyTorch user knows.

``train(TrainingConfig())`` fits a two-hidden-layer ReLU network to the two
spirals with Adam on shuffled mini-batches, with every random choice (data,
initial weights, batch order) fixed by ``seed``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from adcompare import nn, optim
from adcompare.engines.reverse import no_grad
from adcompare.train.datasets import DATASETS
from adcompare.train.mlp import ACTIVATIONS, MLP

__all__ = ["TrainingConfig", "TrainingRun", "accuracy", "train"]


@dataclass(frozen=True)
class TrainingConfig:
    """Everything that decides a training run."""

    dataset: str = "spirals"
    n_per_class: int = 100
    noise: float = 0.05
    hidden: int = 32
    depth: int = 2
    activation: str = "relu"
    epochs: int = 200
    batch_size: int = 50
    lr: float = 0.02
    seed: int = 0
    target_accuracy: float = 0.97

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown dataset {self.dataset!r}; use one of {', '.join(DATASETS)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}"
            )
        for name in ("hidden", "depth", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.n_per_class < 2:
            raise ValueError(f"n_per_class must be at least 2, got {self.n_per_class}")
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a standard deviation of 0 or more, got {self.noise}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive learning rate, got {self.lr}")


@dataclass
class TrainingRun:
    """What a run produced: the model, its data, and the curves."""

    config: TrainingConfig
    model: nn.Module
    x: np.ndarray
    y: np.ndarray
    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    epoch_accuracies: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def final_accuracy(self) -> float:
        """Training accuracy after the last epoch."""
        return self.epoch_accuracies[-1]

    @property
    def epoch_target_reached(self) -> int | None:
        """The first epoch (from 1) whose training accuracy met the target."""
        for epoch, value in enumerate(self.epoch_accuracies, start=1):
            if value >= self.config.target_accuracy:
                return epoch
        return None

    def summary(self) -> dict:
        """The run's figures as JSON-ready values."""
        return {
            "config": asdict(self.config),
            "parameters": sum(p.size for p in self.model.parameters()),
            "final_accuracy": self.final_accuracy,
            "epoch_target_reached": self.epoch_target_reached,
            "seconds": self.seconds,
            "epoch_losses": self.epoch_losses,
            "epoch_accuracies": self.epoch_accuracies,
        }


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """The fraction of samples whose largest logit is their label (nothing recorded).

    >>> model = nn.Linear(2, 2); model.load_state_dict({"weight": np.eye(2), "bias": np.zeros(2)})
    >>> accuracy(model, np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]]), np.array([0, 1, 0]))
    0.6666666666666666
    """
    with no_grad():
        predicted = model(x).numpy().argmax(axis=1)
    return float(np.mean(predicted == y))


def train(config: TrainingConfig) -> TrainingRun:
    """Fit an MLP to ``config.dataset`` with Adam and the cross-entropy loss.

    >>> run = train(TrainingConfig(dataset="moons", epochs=3))
    >>> len(run.epoch_losses), len(run.step_losses)
    (3, 12)
    """
    x, y = DATASETS[config.dataset](config.n_per_class, noise=config.noise, seed=config.seed)
    nn.init.manual_seed(config.seed)
    model = MLP((2, *[config.hidden] * config.depth, 2), config.activation).module()
    optimizer = optim.Adam(model.parameters(), lr=config.lr)
    loss_fn = nn.CrossEntropyLoss()
    batches = nn.MiniBatches(x, y, batch_size=config.batch_size, seed=config.seed)
    run = TrainingRun(config, model, x, y)
    start = time.perf_counter()
    for _ in range(config.epochs):
        model.train()
        epoch_losses = []
        for inputs, labels in batches:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            epoch_losses.append(loss.item())
        model.eval()
        run.step_losses += epoch_losses
        run.epoch_losses.append(float(np.mean(epoch_losses)))
        run.epoch_accuracies.append(accuracy(model, x, y))
    run.seconds = time.perf_counter() - start
    return run
