"""GradBench's ``saddle`` eval: a min-max found by gradient descent inside gradient descent.

Siskind and Pearlmutter's saddle-point problem: with
``f(p, q) = (p₀² + p₁²) − (q₀² + q₁²)``, find ``p`` minimising
``max_q f(p, q)``, then the ``q`` maximising ``f(p, q)``. Every search is
GradBench's descent (:mod:`adcompare.gradbench.descent`) from the same
start.

The cost of ``p`` is itself a climb over ``q`` driven by ``∇_q f`` (the
inner derivative); the outer descent takes the gradient of that cost with
respect to ``p``, through the whole climb and every inner gradient in it:
nested AD. The four functions name the outer mode, then the inner one
(``rf``: reverse over forward); the final climb over ``q`` uses the inner
mode, as GradBench's tools do.

>>> p = np.array([1.0, 2.0])
>>> print(worst_case(p, np.array([1.0, 1.0]), "reverse"))
4.999999999863996
>>> ad.grad(lambda p: worst_case(p, np.array([1.0, 1.0]), "forward"))(p)
array([2., 4.])
"""

from __future__ import annotations

import math

import numpy as np

import adcompare as ad
from adcompare.gradbench import descent
from adcompare.gradbench.evals import InputError, Workload

__all__ = ["EVAL", "saddle", "saddle_point", "worst_case"]


def saddle(p, q):
    """``(p₀² + p₁²) − (q₀² + q₁²)``: a bowl in ``p``, a dome in ``q``.

    >>> print(saddle(np.array([1.0, 2.0]), np.array([0.5, 0.0])))
    4.75
    """
    return ad.sum(p**2) - ad.sum(q**2)


def _climb(p, start: np.ndarray, inner: str) -> tuple:
    """The function of ``q`` the climb at ``p`` maximises, its gradient by ``inner``, the start."""
    slope = ad.grad(saddle, argnums=1, mode=inner)
    return (lambda q: saddle(p, q)), (lambda q: slope(p, q)), start


def worst_case(p, start: np.ndarray, inner: str):
    """``max_q f(p, q)`` as the climb from ``start`` finds it, with ``∇_q f`` by ``inner``.

    ``p`` may carry an outer transform's derivative: the climb is then
    differentiated through, inner gradients included (see the module's example).
    """
    return descent.maximum(*_climb(p, start, inner))


def saddle_point(start: np.ndarray, outer: str, inner: str) -> list[float]:
    """``p`` then ``q``, four numbers: the min-max point the nested descents reach.

    ``outer`` differentiates :func:`worst_case`, whose climb ``inner`` drives.
    (GradBench's start, (1, 1), takes tens of seconds: see the module's example.)
    """

    def cost(p):
        return worst_case(p, start, inner)

    p = descent.argmin(cost, ad.grad(cost, mode=outer), start)
    q = descent.argmax(*_climb(p, start, inner))
    return [float(v) for v in np.concatenate([p, q])]


def _prepare(value) -> np.ndarray:
    start = value.get("start") if isinstance(value, dict) else None
    if not isinstance(start, list) or len(start) != 2:
        raise InputError(
            "saddle takes an object whose 'start' is a list of two numbers (the point "
            'every descent starts from); send e.g. {"start": [1.0, 1.0]}'
        )
    for v in start:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"saddle's 'start' must hold two finite numbers, not {start}")
    return np.array(start, dtype=float)


# GradBench's saddle eval labels its one input "w=0", as particle's.
EVAL = descent.nested_eval(
    "saddle", _prepare, saddle_point, Workload("w=0", lambda: {"start": [1.0, 1.0]})
)
