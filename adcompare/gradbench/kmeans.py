"""GradBench's ``kmeans`` eval: the k-means cost and one Newton step's direction.

Input ``{"points": [n][d], "centroids": [k][d]}``. ``cost`` answers
Σᵢ minⱼ ‖pᵢ − cⱼ‖², a number; ``dir`` answers, as a k × d list, the cost's
gradient with respect to the centroids divided elementwise by its Hessian's
diagonal (GradBench sends the last k points as centroids, so every centroid
is some point's nearest and the diagonal, twice the count of its points, is
not zero).

The squared distances are ``‖pᵢ‖² + (‖cⱼ‖² − 2 pᵢ·cⱼ)``, the bracket an
(n, k) matrix product. ``dir`` finds each point's nearest centroid from that
matrix (numpy's argmin on the values, in the timed call) and differentiates
the cost with those assignments fixed, Σᵢ ‖pᵢ − c[nearestᵢ]‖²: the same
function wherever the nearest centroid is unique, and the derivative AD of
``min`` gives there (it flows through the winning branch only), without
taping the (n, k) matrix. The Hessian's diagonal comes from
forward-over-reverse: the JVP of the reverse-mode gradient along the
all-ones direction is H·1, which is diag H because H is diagonal (centroids
and coordinates do not interact). That JVP is taken in a scalar t, of the
gradient at ``centroids + t``: one tangent input instead of k·d, which is
what a forward recording for replay seeds. Forward mode takes instead one lane per
centroid coordinate eᵢ, forward over forward: (∂ᵢ cost, ∂ᵢ² cost).

>>> prepared = EVAL.prepare({"points": [[0.0], [2.0], [10.0]], "centroids": [[1.5], [10.0]]})
>>> EVAL.functions["cost"](prepared, "reverse")
2.5
>>> EVAL.functions["dir"](prepared, "reverse").tolist()  # centroid − mean of its points
[[0.5], [0.0]]
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.gradbench.evals import Eval, InputError
from adcompare.gradbench.scalar import ByMode, field_array, fields, seeded_workloads

__all__ = ["EVAL", "assigned_cost", "cost", "nearest"]

#: GradBench's default (k, n, d), in its order (by k·n·d).
SIZES = tuple(
    sorted(
        ((k, n, d) for k in (10, 100, 1000) for n in (1000, 10000) for d in (8, 16)),
        key=lambda size: size[0] * size[1] * size[2],
    )
)
#: How many lane-elements (lanes × n × d) one forward pass carries.
LANE_ELEMENTS = 4_000_000


def _values(points: np.ndarray, size: tuple[int, int, int]) -> dict:
    # The centroids are the last k points, as GradBench takes them.
    points = points.tolist()
    return {"points": points, "centroids": points[-size[0] :]}


def _shifted_distances(points, centroids):
    """‖pᵢ − cⱼ‖² − ‖pᵢ‖² = ‖cⱼ‖² − 2 pᵢ·cⱼ, an (n, k) matrix."""
    return ad.matmul(points, ad.transpose(-2.0 * centroids)) + ad.sum(centroids**2, axis=1)


def cost(points, centroids):
    """Σᵢ minⱼ ‖pᵢ − cⱼ‖².

    >>> print(cost(np.array([[0.0], [3.0]]), np.array([[1.0]])))
    5.0
    """
    nearest_shifted = ad.min(_shifted_distances(points, centroids), axis=1)
    return ad.sum(nearest_shifted) + ad.sum(points**2)


def nearest(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The index of each point's nearest centroid (the first of equals).

    >>> nearest(np.array([[0.0], [3.0]]), np.array([[1.0], [2.5]])).tolist()
    [0, 1]
    """
    return np.argmin(_shifted_distances(points, centroids), axis=1)


def assigned_cost(centroids, points, assignment):
    """Σᵢ ‖pᵢ − c[assignmentᵢ]‖²: the cost with each point's centroid fixed.

    >>> print(assigned_cost(np.array([[1.0], [2.5]]), np.array([[0.0], [3.0]]), np.array([0, 1])))
    1.25
    """
    return ad.sum((points - centroids[assignment]) ** 2)


def _gradient(centroids, points, assignment):
    return ad.grad(assigned_cost)(centroids, points, assignment)


def _gradient_along_ones(t, centroids, points, assignment):
    """The gradient at ``centroids + t``: its derivative in the scalar t at 0 is H·1."""
    return _gradient(centroids + t, points, assignment)


_BY_MODE = ByMode("kmeans", _gradient_along_ones)
_ZERO, _ONE = np.zeros(()), np.ones(())


def _newton_direction(prepared, mode: str) -> np.ndarray:
    points, centroids = prepared
    assignment = nearest(points, centroids)
    arguments = (centroids, points, assignment)
    if mode == "forward":
        gradient, diagonal = _forward_lanes(*arguments)
    elif mode == "replay":
        # One tangent input (t), not k·d: the forward recording seeds one lane per input.
        program = _BY_MODE.replay(_ZERO, arguments, mode="forward")
        gradient, diagonal = program.jvp((_ZERO, *arguments), (_ONE,))
    else:
        gradient, diagonal = ad.jvp(
            lambda t: _gradient_along_ones(t, *arguments), (_ZERO,), (_ONE,)
        )
    if not np.all(diagonal):
        empty = int(np.flatnonzero(~np.any(diagonal, axis=1))[0])
        raise InputError(
            f"kmeans centroid {empty} is the nearest of no point, so its Hessian diagonal is 0 "
            "and dir divides by it; send centroids that are points (GradBench sends the last k)"
        )
    return gradient / diagonal


def _forward_lanes(centroids, points, assignment) -> tuple[np.ndarray, np.ndarray]:
    """(∂ᵢ cost, ∂ᵢ² cost) for every centroid coordinate i, one tangent lane eᵢ each."""
    k, d = centroids.shape
    _BY_MODE.check_forward(k * d, 3 * points.size)

    def along(direction):
        def slope(c):
            return ad.jvp(lambda c2: assigned_cost(c2, points, assignment), (c,), (direction,))[1]

        return ad.jvp(slope, (centroids,), (direction,))

    lanes = max(1, LANE_ELEMENTS // points.size)
    first, second = [], []
    for start in range(0, k * d, lanes):
        count = min(lanes, k * d - start)
        directions = np.zeros((count, k * d))  # the unit vectors e_start … e_start+count−1
        directions[np.arange(count), start + np.arange(count)] = 1.0
        slopes, curvatures = ad.vmap(along)(directions.reshape(count, k, d))
        first.append(slopes)
        second.append(curvatures)
    return np.concatenate(first).reshape(k, d), np.concatenate(second).reshape(k, d)


def _prepare(value) -> tuple[np.ndarray, np.ndarray]:
    value = fields(value, "kmeans", ["points", "centroids"])
    points = field_array(value, "points", "kmeans", 2)
    centroids = field_array(value, "centroids", "kmeans", 2)
    if points.shape[1] != centroids.shape[1]:
        raise InputError(
            f"kmeans's points have {points.shape[1]} coordinates but its centroids "
            f"{centroids.shape[1]}; send both with the same d"
        )
    return points, centroids


def _objective(prepared):
    """The cost as a function of the centroids, each point's nearest one fixed where it is:
    what ``dir`` takes the gradient and the Hessian's diagonal of."""
    points, centroids = prepared
    assignment = nearest(points, centroids)
    return (lambda c: assigned_cost(c, points, assignment)), (centroids,)


EVAL = Eval(
    name="kmeans",
    prepare=_prepare,
    functions={
        "cost": lambda prepared, mode: float(cost(*prepared)),
        "dir": _newton_direction,
    },
    encode=lambda function, result: result if function == "cost" else result.tolist(),
    primal="cost",
    derivative="dir",
    auto="replay",
    objective=_objective,
    workloads=lambda: seeded_workloads(
        SIZES, lambda size: "k={},n={},d={}".format(*size), lambda size: size[1:], _values
    ),
)
