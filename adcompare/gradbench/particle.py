"""GradBench's ``particle`` eval: aim a charged particle at the origin, by nested AD.

Siskind and Pearlmutter's charged-particle problem. A particle of unit
mass and charge starts at (0, 8) with velocity (0.75, 0) and is repelled by
two unit charges at (10, 10 − w) and (10, 0): its acceleration is minus the
gradient of the potential ``p(x; w) = Σ 1 / ‖x − c‖``. Naive Euler steps
of ``DT`` move it while the next position stays above the x-axis; a linear
step from the last one then finds where it crosses the axis, at ``x₀``.
The control ``w`` that brings it to the origin minimises ``x₀²``, found by
GradBench's gradient descent (:mod:`adcompare.gradbench.descent`).

Each Euler step takes the gradient of ``p`` (the inner derivative), and the
descent takes the derivative of the whole flight with respect to ``w`` (the
outer one), through every inner gradient: nested AD. The four functions
name the outer mode, then the inner one (``rf``: reverse over forward).

>>> print(round(flight(0.0, "reverse"), 9), round(flight(0.0, "forward"), 9))
3.199079003 3.199079003
"""

from __future__ import annotations

import math

import numpy as np

import adcompare as ad
from adcompare.gradbench import descent
from adcompare.gradbench.evals import InputError, Workload

__all__ = ["EVAL", "flight", "optimise", "potential"]

#: The particle's position and velocity at t = 0, and the Euler step.
START = np.array([0.0, 8.0])
VELOCITY = np.array([0.75, 0.0])
DT = 0.1
#: The charges at w = 0, and how each coordinate moves with w (the first goes down).
CHARGES = np.array([[10.0, 10.0], [10.0, 0.0]])
CHARGES_PER_W = np.array([[0.0, -1.0], [0.0, 0.0]])


def potential(x, charges):
    """The electric potential at ``x`` of unit charges at the rows of ``charges``.

    >>> print(potential(np.array([0.0, 0.0]), np.array([[3.0, 4.0], [0.0, 2.0]])))
    0.7
    """
    return ad.sum(1.0 / ad.sqrt(ad.sum((x - charges) ** 2, axis=1)))


def flight(w, inner: str):
    """``x₀²``, where the particle fired with control ``w`` crosses the x-axis.

    The force at each Euler step is minus :func:`potential`'s gradient,
    taken by ``ad.grad`` in mode ``inner``.

    >>> print(f"{flight(0.2071918746486116, 'forward'):.1e}")  # 9e-5 from the origin
    7.8e-09
    """
    slope = ad.grad(potential, mode=inner)
    charges = CHARGES + w * CHARGES_PER_W
    x, velocity = START, VELOCITY
    while True:
        x_next = x + DT * velocity
        if x_next[1] <= 0.0:
            break
        x, velocity = x_next, velocity - DT * slope(x, charges)
    time_to_axis = -x[1] / velocity[1]
    return (x[0] + time_to_axis * velocity[0]) ** 2


def optimise(w0: float, outer: str, inner: str) -> float:
    """The control GradBench's descent finds from ``w0``: ``outer`` differentiates
    the flight, whose forces ``inner`` differentiates.

    >>> round(optimise(0.2071918746, "reverse", "reverse"), 6)
    0.207192
    """

    def cost(w):
        return flight(w[0], inner)

    w = descent.argmin(cost, ad.grad(cost, mode=outer), np.array([w0]))
    return float(w[0])


def _prepare(value) -> float:
    if not isinstance(value, dict) or "w" not in value:
        raise InputError(
            f"particle takes an object with a number 'w' (the starting control), not "
            f"{type(value).__name__ if not isinstance(value, dict) else sorted(value)}; "
            'send e.g. {"w": 0.0}'
        )
    w = value["w"]
    if isinstance(w, bool) or not isinstance(w, (int, float)):
        raise InputError(f"particle's 'w' must be a number, not {type(w).__name__}")
    if not math.isfinite(w):
        raise InputError(f"particle's 'w' must be a finite number, not {w}")
    return float(w)


EVAL = descent.nested_eval("particle", _prepare, optimise, Workload("w=0", lambda: {"w": 0.0}))
