"""GradBench's ``det`` eval: the determinant of an ℓ × ℓ matrix by expansion by minors.

Input ``{"A": [ℓ² numbers, row-major], "ell": ℓ}``; ``primal`` answers a
number, ``gradient`` the ℓ² partial derivatives, row-major (the cofactor
matrix).

GradBench's reference expands along the first row recursively, visiting
every minor of every permutation: O(ℓ!) work. The same sum is computed here
level by level over column subsets (a minor is shared by every permutation
that reaches it): the minor of the last m rows on the columns S is

    D(S) = Σₖ (−1)ᵏ · A[ℓ−m, Sₖ] · D(S without Sₖ)

for S's columns S₀ < S₁ < … in turn, and det A = D({0, …, ℓ−1}). Level m
holds the C(ℓ, m) minors of size m, ℓ·2^(ℓ−1) products in all (11,264 at
ℓ = 11 against the reference's 39,916,800 paths). It is a polynomial in A
written with the op set, so its derivative is exact everywhere, singular
matrices included (where ``det``'s rule, det·A⁻ᵀ, has no inverse to take).

>>> prepared = EVAL.prepare({"A": [2.0, 1.0, 4.0, 3.0], "ell": 2})
>>> print(EVAL.functions["primal"](prepared, "reverse"))
2.0
>>> EVAL.functions["gradient"](prepared, "reverse").tolist()  # the cofactors
[3.0, -4.0, -1.0, 2.0]
"""

from __future__ import annotations

from functools import cache
from itertools import combinations

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

__all__ = ["EVAL", "det_by_minors"]

#: GradBench's default sizes ℓ, in its order.
SIZES = (5, 6, 7, 8, 9, 10, 11)
#: The largest ℓ taken: level sizes grow as 2^ℓ (ℓ = 20 holds 10⁷ products).
MAX_ELL = 20


@cache
def _levels(ell: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per level m = 1 … ℓ: for each product, the index of its signed entry in (A, −A)
    (flat, −A after A's ℓ² entries) and of the smaller minor it multiplies; each
    (C(ℓ, m), m), row c for subset c."""
    levels = []
    previous = {(): 0}
    for m in range(1, ell + 1):
        subsets = list(combinations(range(ell), m))
        row = ell - m
        # the k-th column of a subset carries the sign (−1)ᵏ: odd k read from −A
        entries = np.array(
            [[row * ell + c + (k % 2) * ell * ell for k, c in enumerate(s)] for s in subsets]
        )
        smaller = np.array(
            [[previous[subset[:k] + subset[k + 1 :]] for k in range(m)] for subset in subsets]
        )
        levels.append((entries, smaller))
        previous = {subset: i for i, subset in enumerate(subsets)}
    return tuple(levels)


def _values(draw: np.ndarray, ell: int) -> dict:
    return {"A": draw.tolist(), "ell": ell}


def det_by_minors(a, ell: int):
    """The determinant of the ℓ × ℓ matrix whose row-major entries are ``a`` (ℓ²).

    >>> print(det_by_minors(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0]), 3))
    -3.0
    """
    signed = ad.concatenate([a, -a])
    minors = np.ones(1)
    for entries, smaller in _levels(ell):
        minors = ad.sum(signed[entries] * minors[smaller], axis=1)
    return minors[0]


def _prepare(value) -> tuple[np.ndarray, int]:
    value = fields(value, "det", ["A", "ell"])
    ell = whole_number(value, "ell", "det", 1)
    if ell > MAX_ELL:
        raise InputError(
            f"det's ell of {ell} is beyond this tool's {MAX_ELL} (expansion by minors "
            f"holds 2^ell minors); send a smaller matrix"
        )
    a = field_array(value, "A", "det", 1)
    if a.size != ell * ell:
        raise InputError(f"det's A must hold ell² = {ell * ell} numbers (row-major), not {a.size}")
    return a, ell


EVAL = gradient_eval(
    "det",
    ByMode("det", det_by_minors, work=lambda a, ell: ell * 2 ** (ell - 1)),
    _prepare,
    lambda: seeded_workloads(SIZES, str, lambda ell: (ell * ell,), _values),
    auto="replay",
)
