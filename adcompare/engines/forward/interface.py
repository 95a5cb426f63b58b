"""The forward engine's face for transforms: seed inputs, read outputs, size the lanes.

As :mod:`adcompare.engines.reverse.interface` is to the tape: :func:`seed`
lifts a value into a ``Dual`` at a nesting level, :func:`lower` reads an
output's primal and tangent lanes back, and :func:`default_chunk` says how
many lanes one pass carries. Transforms use these and nothing private.
"""

from __future__ import annotations

from adcompare.engines.forward.dual import Dual
from adcompare.ops import reshape
from adcompare.ops.registry import shape_of

__all__ = ["LANE_BUDGET", "default_chunk", "lower", "seed"]

#: How many tangent elements (lanes × inputs) one forward pass may hold: the
#: default chunk is ``min(n, LANE_BUDGET // n)`` lanes. 2**17 float64 values
#: are 1 MiB, so the tangent of an input-sized intermediate stays in a core's
#: cache between the ops that read it; at n = 1000 that is 131 lanes a pass,
#: and 8 such passes run faster than one pass of 1000 lanes.
LANE_BUDGET = 2**17


def default_chunk(n: int) -> int:
    """The default number of lanes for ``n`` inputs: all of them, within a budget.

    >>> default_chunk(10), default_chunk(1000), default_chunk(10_000)
    (10, 131, 13)
    """
    return max(1, min(n, LANE_BUDGET // max(n, 1)))


def seed(primal, tangent, level: int, lanes: int | None = None) -> Dual:
    """A ``Dual`` at nesting ``level``: ``primal`` seeded with ``tangent``.

    One direction (``lanes`` None, ``tangent`` shaped like the primal), or
    ``lanes`` directions at once (``tangent`` of shape ``(lanes, *shape)``).
    Unlike ``Dual(...)`` it neither converts nor checks: it is how transforms,
    which have done both, lift their inputs.

    >>> import numpy as np
    >>> x = seed(np.array([1.0, 2.0]), np.eye(2), level=9, lanes=2)
    >>> lower(x * x, 9)
    (array([1., 4.]), array([[2., 0.],
           [0., 4.]]))
    """
    if lanes is None:
        tangent = reshape(tangent, (1,) + shape_of(primal))
    return Dual._make(primal, tangent, lanes, level)


def lower(value, level: int) -> tuple:
    """``(primal, tangent lanes)`` of an output at ``level``; the lanes, shaped
    ``(k, *primal.shape)``, are ``None`` where the output does not depend on the
    seeded inputs (a constant, or a box of another transform).
    """
    if isinstance(value, Dual) and value.level == level:
        return value.primal, value._tangent
    return value, None
