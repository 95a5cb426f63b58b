"""GradBench's ``llsq`` eval: a linear least-squares fit of a polynomial to a step function.

With ``tᵢ = −1 + 2i/(n−1)`` for i = 0 … n−1 and ``sᵢ = sign(tᵢ)``, the
objective of the m coefficients x is

    llsq(x) = ½ Σᵢ (sᵢ − Σⱼ xⱼ tᵢʲ)²

Input ``{"x": [m numbers], "n": int}``; ``primal`` answers a number,
``gradient`` a list of m. The powers ``tᵢʲ`` (a Vandermonde matrix, n × m)
depend on n only, not on x: each call computes them with numpy, and only the
residual is taped. Replay folds them into its recording (they are computed
from its int argument n, which it guards), so the replayed gradient does not
recompute them and is faster than the primal.

>>> prepared = EVAL.prepare({"x": [0.0, 1.0], "n": 3})
>>> print(EVAL.functions["primal"](prepared, "reverse"))  # t = -1, 0, 1: residuals 0
0.0
>>> EVAL.functions["gradient"](EVAL.prepare({"x": [0.0, 0.0], "n": 3}), "reverse").tolist()
[0.0, -2.0]
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.gradbench.evals import InputError
from adcompare.gradbench.scalar import (
    ByMode,
    field_array,
    fields,
    gradient_eval,
    seeded_workloads,
    whole_number,
)

__all__ = ["EVAL", "llsq"]

#: GradBench's default (n, m) pairs, in its order (by n·m).
SIZES = tuple((n, 128) for n in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392))

#: The most powers tᵢʲ (n × m) a call holds: 400 MB of float64.
MAX_POWERS = 50_000_000


def _values(draw: np.ndarray, size: tuple[int, int]) -> dict:
    return {"x": draw.tolist(), "n": size[0]}


def llsq(x, n: int):
    """½ Σᵢ (sign(tᵢ) − Σⱼ xⱼ tᵢʲ)² over the n points tᵢ = −1 + 2i/(n−1).

    >>> print(llsq(np.array([0.0, 0.0]), 3))  # ½ (1 + 0 + 1)
    1.0
    """
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    powers = np.vander(t, x.shape[0], increasing=True)
    residual = np.sign(t) - ad.matmul(powers, x)
    return ad.sum(residual * residual) / 2.0


def _prepare(value) -> tuple[np.ndarray, int]:
    value = fields(value, "llsq", ["x", "n"])
    x = field_array(value, "x", "llsq", 1)
    n = whole_number(value, "n", "llsq", 2)
    if n * x.size > MAX_POWERS:
        raise InputError(
            f"llsq's n × m = {n} × {x.size} powers exceed this tool's {MAX_POWERS:,} "
            "(the n × m matrix of powers is held in memory); send fewer points"
        )
    return x, n


EVAL = gradient_eval(
    "llsq",
    ByMode("llsq", llsq, work=lambda x, n: n * x.size),
    _prepare,
    lambda: seeded_workloads(
        SIZES, lambda size: f"n={size[0]},m={size[1]}", lambda size: (size[1],), _values
    ),
    auto="replay",
)
