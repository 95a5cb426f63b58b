"""GradBench's ``lse`` eval: log Σᵢ exp(xᵢ) and its gradient, the softmax of x.

Input ``{"x": [n numbers]}``; ``primal`` answers a number, ``gradient`` a list
of n. The sum is taken shifted by the largest element, as GradBench's
reference does (no exp overflows): ``lse(x) = a + log Σ exp(xᵢ − a)``, with
``a = max x`` found on the values by numpy in each timed call and passed in
as a constant. That is exact, not an approximation: lse is shift-invariant,
so its derivative with respect to ``a`` is identically zero, and only the
terms that depend on x are taped (no tie-splitting rule of ``max`` is run).

>>> prepared = EVAL.prepare({"x": [0.0, float(np.log(3.0))]})
>>> print(round(EVAL.functions["primal"](prepared, "reverse"), 12), round(float(np.log(4.0)), 12))
1.38629436112 1.38629436112
>>> EVAL.functions["gradient"](prepared, "reverse").round(12).tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.gradbench.evals import Eval, Workload
from adcompare.gradbench.scalar import ByMode, field_array, fields, legacy_draws, message

__all__ = ["EVAL", "logsumexp"]

#: GradBench's default sizes, in its order.
SIZES = (2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000)


def logsumexp(x, shift):
    """log Σ exp(x) computed as ``shift + log Σ exp(x − shift)``; ``shift`` is a constant.

    >>> print(round(float(logsumexp(np.array([1000.0, 1000.0]), 1000.0)), 9))
    1000.693147181
    """
    return ad.log(ad.sum(ad.exp(x - shift))) + shift


_BY_MODE = ByMode("lse", logsumexp)


def _prepare(value) -> np.ndarray:
    return field_array(fields(value, "lse", ["x"]), "x", "lse", 1)


def _primal(x: np.ndarray, mode: str) -> float:
    return float(logsumexp(x, np.max(x)))


def _gradient(x: np.ndarray, mode: str) -> np.ndarray:
    return _BY_MODE.gradient(mode, x, np.max(x))


def _draw(i: int) -> list[float]:
    return legacy_draws(31337, [(size,) for size in SIZES[: i + 1]]).tolist()


def _workloads() -> tuple[Workload, ...]:
    # One generator seeded once, a draw per workload in turn, as GradBench's eval draws them.
    return tuple(
        Workload(
            f"n={n}",
            lambda i=i: message(x=_draw(i)),
        )
        for i, n in enumerate(SIZES)
    )


EVAL = Eval(
    name="lse",
    prepare=_prepare,
    functions={"primal": _primal, "gradient": _gradient},
    encode=lambda function, result: result if function == "primal" else result.tolist(),
    primal="primal",
    derivative="gradient",
    auto="replay",
    workloads=_workloads,
)
