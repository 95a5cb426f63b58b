"""Numbers drawn from second-order cells: HVP ÷ gradient, the cheapest composition.

Each HVP is compared with one reverse-mode gradient (the ``reverse`` cell
at the same n, m = 1), and each Hessian with one HVP by the same
composition. Nothing here measures; plots and the report read these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from adcompare.bench.harness.results import Results
from adcompare.bench.harness.second_order import composition_of
from adcompare.bench.report import analysis

__all__ = ["GRADIENT", "Cheapest", "cheapest_hvps", "compositions", "hessian_per_hvp", "hvp_ratio"]

#: The first-order mode every HVP is divided by: one gradient by reverse mode.
GRADIENT = "reverse"


def compositions(results: Results, problem: str, kind: str = "hvp") -> list[str]:
    """The compositions measured on ``problem`` as ``kind`` (``"hvp"`` or ``"hessian"``)."""
    return [
        composition_of(m)
        for m in analysis.modes_in(results, problem, order=2)
        if m.startswith(f"{kind}:")
    ]


def hvp_ratio(
    results: Results, problem: str, composition: str, metric: str = "time"
) -> tuple[np.ndarray, np.ndarray]:
    """``(n, HVP ÷ gradient)`` for one composition, by time or element work."""
    return analysis.series_ratio(results, problem, f"hvp:{composition}", GRADIENT, metric)


def hessian_per_hvp(
    results: Results, problem: str, composition: str, metric: str = "work"
) -> tuple[np.ndarray, np.ndarray]:
    """``(n, Hessian ÷ one HVP)`` for one composition: about n if a Hessian is n HVPs."""
    return analysis.series_ratio(
        results, problem, f"hessian:{composition}", f"hvp:{composition}", metric
    )


@dataclass(frozen=True)
class Cheapest:
    """At one n: the fastest HVP composition, the next one and the slowest.

    ``margin`` is the next one's time ÷ the winner's, ``spread`` the
    slowest's ÷ the winner's (both ≥ 1).
    """

    n: float
    winner: str
    runner_up: str
    margin: float
    slowest: str
    spread: float


def cheapest_hvps(results: Results, problem: str) -> list[Cheapest]:
    """The cheapest HVP composition at each n where at least two were timed."""
    times: dict[float, dict[str, float]] = {}
    for composition in compositions(results, problem):
        for n, t in zip(*analysis.series(results, problem, f"hvp:{composition}")):
            times.setdefault(float(n), {})[composition] = float(t)
    found = []
    for n in sorted(times):
        ranked = sorted(times[n].items(), key=lambda item: item[1])
        if len(ranked) < 2:
            continue
        (winner, best), (runner_up, second) = ranked[0], ranked[1]
        slowest, worst = ranked[-1]
        found.append(Cheapest(n, winner, runner_up, second / best, slowest, worst / best))
    return found
