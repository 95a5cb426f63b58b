"""The ADBench and GradBench objectives as benchmark problems, on instances the package
generates at the sizes of ADBench's test files (:func:`adcompare.adbench.bundled`).

They are not swept: each is one instance (family ``"fixed"``), measured to
compare its derivative time ÷ objective time with the ratios other tools
published (:mod:`~adcompare.bench.report.published`). Their objectives are written
once against adcompare's op set (:mod:`adcompare.adbench`); with ``xp =
numpy`` (plain f, the baseline every ratio divides by) a problem runs its
hand-written numpy form (:mod:`adcompare.adbench.plain`, checked equal to the
op-set objective to 1e-12), as the published ratios divide by each tool's
fastest primal; with any other ``xp`` it runs the op-set objective.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from adcompare import adbench
from adcompare.adbench.plain import plain_objective

__all__ = ["REAL_PROBLEMS", "RealProblem", "problem_function"]


def problem_function(problem) -> Callable:
    """An ADBench or GradBench instance as a problem's ``f(xp, x)``: its hand-written
    numpy form with ``xp = numpy``, its op-set objective (BA: residuals) otherwise.

    >>> gmm = adbench.bundled("adbench-gmm-test")
    >>> f = problem_function(gmm)
    >>> bool(abs(f(np, gmm.params) - f(None, gmm.params)) < 1e-12)
    True
    """
    function = problem.residuals if isinstance(problem, adbench.BAProblem) else problem.objective
    plain = plain_objective(problem)
    return lambda xp, x: plain(x) if xp is np else function(x)


@dataclass(frozen=True)
class RealProblem:
    """A built-in instance as a problem; ``opt_in`` ones are left out of the default list."""

    name: str
    description: str
    opt_in: bool = False

    def make(self) -> tuple[Callable, object]:
        """``(f, x)`` as every problem gives them: ``f(numpy, x)`` is the plain-numpy form.

        >>> f, x = REAL_PROBLEMS[2].make()
        >>> f(None, x).shape, x.shape
        ((30,), (62,))
        """
        problem = adbench.bundled(self.name)
        return problem_function(problem), problem.params


REAL_PROBLEMS = (
    RealProblem(
        "adbench-gmm-1k",
        "ADBench's Gaussian mixture objective on a generated instance, d = 2, K = 5, "
        "1000 points: 30 parameters",
    ),
    RealProblem(
        "gradbench-gmm-1k",
        "GradBench's corrected Gaussian mixture objective on a generated instance, d = 2, "
        "k = 5, n = 1000: 30 parameters",
    ),
    RealProblem(
        "adbench-ba-test",
        "ADBench bundle adjustment on a generated instance, 2 cameras, 10 points, "
        "10 observations: 30 residuals of "
        "62 parameters",
    ),
    RealProblem(
        "adbench-lstm",
        "ADBench's LSTM loss on a generated instance, 2 layers, 14 bits, 1024 characters: "
        "266 parameters "
        "(opt in: seconds per gradient)",
        opt_in=True,
    ),
)
