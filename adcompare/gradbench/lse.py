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
from adcompare.gradbench.scalar import (
    ByMode,
    field_array,
    fields,
    gradient_eval,
    seeded_workloads,
)

__all__ = ["EVAL", "logsumexp"]

#: GradBench's default sizes, in its order.
SIZES = (2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000)


def _values(draw: np.ndarray, n: int) -> dict:
    return {"x": draw.tolist()}


def logsumexp(x, shift):
    """log Σ exp(x) computed as ``shift + log Σ exp(x − shift)``; ``shift`` is a constant.

    >>> print(round(float(logsumexp(np.array([1000.0, 1000.0]), 1000.0)), 9))
    1000.693147181
    """
    return ad.log(ad.sum(ad.exp(x - shift))) + shift


def _prepare(value) -> tuple[np.ndarray]:
    return (field_array(fields(value, "lse", ["x"]), "x", "lse", 1),)


EVAL = gradient_eval(
    "lse",
    ByMode("lse", logsumexp),
    _prepare,
    lambda: seeded_workloads(SIZES, lambda n: f"n={n}", lambda n: (n,), _values),
    arguments=lambda x: (x, x.max()),
    auto="replay",
)
