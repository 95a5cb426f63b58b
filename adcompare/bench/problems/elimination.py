"""Problems where the elimination order matters: the elimination study's.

Each is written once against an array namespace ``xp`` and defined by
:func:`~adcompare.bench.problems.problem` with ``studies=("elimination",)``,
so it is measured by name (``adcompare bench --problems hourglass``) and
listed by :func:`~adcompare.bench.problems.problems_of`:

``hourglass``, ``hourglass-2``, ``hourglass-4``, ``hourglass-8``
    ``tanh(W₂ tanh(W₁ tanh(x)))`` with ``W₁`` of ``k × n`` and ``W₂`` of
    ``m × k``: a wide map into a bottleneck ``k`` wide and out again. The
    Jacobian has rank ``k``; forward and reverse mode carry the full width
    through one of the wide diagonals (about ``(k + 1)·n·m`` multiplications),
    cross-country elimination multiplies the diagonals into the thin ``W``
    blocks first and pays ``k·n·m`` once.
``helmholtz``
    the terms of the Helmholtz free energy ``xᵢ log(xᵢ / (1 − Σx))`` as
    graphax writes them (Griewank and Walther's running example, reduced to its
    entropy term), n mole fractions in, n terms out.
``robot-arm``
    forward kinematics of a planar arm of n links: the joint angles in, the
    hand's position and orientation out (3 outputs).
"""

from __future__ import annotations

import zlib

import numpy as np

from adcompare.bench.problems.define import problem

__all__ = ["BOTTLENECKS", "ELIMINATION_PROBLEMS"]

#: The bottleneck widths of the hourglass problems.
BOTTLENECKS = (1, 2, 4, 8)


def _rng(name: str, *size: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(name.encode()), *size])


def hourglass(k: int):
    """The build function of the hourglass whose bottleneck is ``k`` wide.

    >>> f, x = hourglass(1)(n=3, m=2)
    >>> f(np, x).shape, x.shape
    ((2,), (3,))
    """

    def build(n: int, m: int):
        rng = _rng("hourglass", k, n, m)
        narrowing = rng.standard_normal((k, n)) / np.sqrt(n)
        widening = rng.standard_normal((m, k))

        def f(xp, x):
            return xp.tanh(widening @ xp.tanh(narrowing @ xp.tanh(x)))

        return f, rng.standard_normal(n)

    return build


def _helmholtz(n: int):
    def f(xp, x):
        return x * xp.log(x / (1.0 + -xp.sum(x)))

    # mole fractions: positive, summing to less than one
    return f, _rng("helmholtz", n).uniform(0.1, 1.0, n) / (2.0 * n)


def _robot_arm(n: int):
    lengths = _rng("robot-arm", n).uniform(0.5, 1.5, n)

    def f(xp, angles):
        heading = xp.cumsum(angles)
        x = xp.sum(lengths * xp.cos(heading))
        y = xp.sum(lengths * xp.sin(heading))
        return xp.stack([x, y, heading[-1]])

    return f, _rng("robot-arm-angles", n).uniform(-1.0, 1.0, n)


_WIDE = {
    "n": (2048, "the elimination study stops at 2048 inputs"),
    "m": (2048, "the elimination study stops at 2048 outputs"),
}

ELIMINATION_PROBLEMS = [
    *(
        problem(
            build=hourglass(k),
            name="hourglass" if k == 1 else f"hourglass-{k}",
            sweep=("n", "m"),
            description=f"the hourglass tanh(W₂ tanh(W₁ tanh x)), n → {k} → m",
            xp=True,
            limits=_WIDE,
            studies=("elimination",),
        )
        for k in BOTTLENECKS
    ),
    *(
        problem(
            build=build,
            name=name,
            sweep=("n",),
            family="jacobian",
            description=description,
            xp=True,
            limits={"n": (2048, "the elimination study stops at n = 2048")},
            studies=("elimination",),
        )
        for build, name, description in (
            (
                _helmholtz,
                "helmholtz",
                "Helmholtz free-energy terms xᵢ log(xᵢ / (1 − Σx)), n in, n out",
            ),
            (
                _robot_arm,
                "robot-arm",
                "forward kinematics of a planar arm of n links: hand x, y and heading",
            ),
        )
    ),
]
