"""Synthetic classification data made with numpy: nothing is downloaded."""

from __future__ import annotations

import numpy as np

__all__ = ["DATASETS", "moons", "two_spirals"]


def two_spirals(
    n_per_class: int = 100, noise: float = 0.0, turns: float = 1.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals: points ``(N, 2)`` and labels 0 or 1 ``(N,)``.

    Class 0 follows ``r·(cos θ, sin θ)`` with ``r`` growing linearly from 0.1
    to 1 as ``θ`` turns ``turns`` times; class 1 is the same spiral rotated
    by half a turn. ``noise`` is the standard deviation of Gaussian jitter.

    >>> x, y = two_spirals(50, seed=0)
    >>> x.shape, y.shape, int(y.sum())
    ((100, 2), (100,), 50)
    >>> bool(np.allclose(x[50:], -x[:50]))  # without noise, the classes are opposites
    True
    """
    _check_size(n_per_class, noise)
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n_per_class)
    radius = 0.1 + 0.9 * t
    angle = 2 * np.pi * turns * t
    arm = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    x = np.concatenate([arm, -arm]) + noise * rng.standard_normal((2 * n_per_class, 2))
    y = np.repeat([0, 1], n_per_class)
    return x, y


def moons(
    n_per_class: int = 100, noise: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles (as scikit-learn's ``make_moons``).

    Class 0 is the upper half of the unit circle; class 1 the lower half
    shifted to start at (1, 0.5).

    >>> x, y = moons(3, noise=0.0)
    >>> print(x[:3].round(3))
    [[ 1.  0.]
     [ 0.  1.]
     [-1.  0.]]
    """
    _check_size(n_per_class, noise)
    rng = np.random.default_rng(seed)
    angle = np.linspace(0.0, np.pi, n_per_class)
    upper = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    lower = np.stack([1.0 - np.cos(angle), 0.5 - np.sin(angle)], axis=1)
    x = np.concatenate([upper, lower]) + noise * rng.standard_normal((2 * n_per_class, 2))
    y = np.repeat([0, 1], n_per_class)
    return x, y


def _check_size(n_per_class: int, noise: float) -> None:
    if not isinstance(n_per_class, (int, np.integer)) or n_per_class < 2:
        raise ValueError(f"n_per_class must be an integer of at least 2, got {n_per_class!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be a non-negative standard deviation, got {noise!r}")


DATASETS = {"spirals": two_spirals, "moons": moons}
