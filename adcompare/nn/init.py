"""The random generator that layers draw their initial weights from.

Layers take an optional ``generator`` (a ``numpy.random.Generator``); without
one they use the default generator here, which :func:`manual_seed` resets,
so a model built after ``manual_seed(s)`` is the same on every run.
"""

from __future__ import annotations

import numpy as np

__all__ = ["default_generator", "manual_seed", "uniform"]

_default = [np.random.default_rng(0)]


def manual_seed(seed: int) -> np.random.Generator:
    """Reset the default generator to ``seed`` and return it.

    >>> from adcompare.nn import Linear, init
    >>> _ = init.manual_seed(3); a = Linear(2, 2).weight.detach().numpy()
    >>> _ = init.manual_seed(3); b = Linear(2, 2).weight.detach().numpy()
    >>> bool((a == b).all())
    True
    """
    _default[0] = np.random.default_rng(seed)
    return _default[0]


def default_generator() -> np.random.Generator:
    """The generator layers use when they are not given one."""
    return _default[0]


def uniform(
    shape: tuple[int, ...], bound: float, generator: np.random.Generator | None = None
) -> np.ndarray:
    """Draw an array of ``shape`` uniformly from ``[-bound, bound)``.

    >>> values = uniform((1000,), 0.5, np.random.default_rng(0))
    >>> bool(values.min() >= -0.5 and values.max() < 0.5)
    True
    """
    rng = default_generator() if generator is None else generator
    return rng.uniform(-bound, bound, size=shape)
