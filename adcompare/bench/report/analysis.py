"""Numbers drawn from results: series, fitted slopes, crossovers.

Plots and the report read results only through these functions, so both
say the same thing. Nothing here measures or recomputes.

A series is indexed by the swept count: ``n`` for many-inputs problems,
``m`` for one-input problems, the actual counts of the built instance (an
MLP's weight count is rounded to whole layers).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from adcompare.bench.harness.modes import MODES
from adcompare.bench.harness.results import Results
from adcompare.bench.peers import PEER_MODES
from adcompare.bench.problems import REGISTRY
from adcompare.bench.report.text import format_slope

__all__ = [
    "AXIS",
    "BATCHING_PAIRS",
    "JACOBIAN_PAIRS",
    "Crossover",
    "Slope",
    "crossover",
    "description_of",
    "family_of",
    "fit_slope",
    "grid_ratio",
    "home_machine",
    "machine_of",
    "modes_in",
    "problems_in",
    "series",
    "series_ratio",
    "work",
]

#: The count a one-parameter family is plotted against.
AXIS = {"many-inputs": "n", "one-input": "m", "batch": "m"}

#: Forward and reverse mode compared like with like: one lane against one row a sweep,
#: chunked lanes against chunked rows, so a ratio measures the mode, not the batching.
JACOBIAN_PAIRS = (("forward1", "reverse1"), ("forward", "reverse"))

#: What batching buys each mode: the unbatched mode against the batched one.
BATCHING_PAIRS = (("forward1", "forward"), ("reverse1", "reverse"))


def work(cell: dict) -> float:
    """A cell's element work: the elements its ops touched, all engines together.

    >>> work({"counts": {"elements": {"numpy": 10, "forward": 30}}})
    40
    """
    return sum((cell.get("counts") or {}).get("elements", {}).values())


def _ok(results: Results, problem: str, mode: str | None = None) -> list[dict]:
    return [
        c
        for c in results.cells
        if c["problem"] == problem
        and c["status"] == "ok"
        and (mode is None or c["mode"] == mode)
        and c.get("time")
    ]


def problems_in(results: Results) -> list[str]:
    """The problems with cells, in first-seen order."""
    return list(dict.fromkeys(c["problem"] for c in results.cells))


def modes_in(results: Results, problem: str, order: int = 1) -> list[str]:
    """The modes measured on ``problem``, in the registry's order.

    ``order=1`` gives plain f and the first-order modes (peers' after
    adcompare's, then modes this version does not know), ``order=2`` the
    second-order ones.
    """
    seen = {c["mode"] for c in _ok(results, problem)}
    registered = [*MODES, *PEER_MODES]
    known = [m for m in registered if m in seen] + sorted(seen - set(registered))
    return [m for m in known if (MODES[m].order == 2 if m in MODES else False) == (order == 2)]


def description_of(results: Results, problem: str) -> str:
    """What ``problem`` is, as its cells recorded it (a user's function has no other
    record), else as the registry describes it; ``""`` when neither says.

    >>> description_of(Results(), "rosenbrock")[:19]
    'extended Rosenbrock'
    """
    for c in results.cells:
        if c["problem"] == problem and c.get("description"):
            return c["description"]
    known = REGISTRY.get(problem)
    return known.description if known else ""


def family_of(results: Results, problem: str) -> str | None:
    """The family recorded on ``problem``'s cells."""
    for c in results.cells:
        if c["problem"] == problem and c.get("family"):
            return c["family"]
    return None


def _value(cell: dict, metric: str) -> float | None:
    if metric == "time":
        return cell["time"]["median"]
    if metric == "work":
        return work(cell) or None
    if metric == "memory":
        return (cell.get("memory") or {}).get("peak_bytes")
    if metric == "tape":
        return (cell.get("counts") or {}).get("tape_bytes") or None
    raise ValueError(f"unknown metric {metric!r}; use time, work, memory or tape")


def machine_of(results: Results, cell: dict) -> str | None:
    """The machine (host name) that measured ``cell``, as its environment records it.

    >>> results = Results({"schema": "", "schema_version": 1, "runs": [], "cells": [],
    ...                    "environments": {"env-a": {"machine": "node1"}}})
    >>> machine_of(results, {"env": "env-a"}), machine_of(results, {})
    ('node1', None)
    """
    return (results.data["environments"].get(cell.get("env")) or {}).get("machine")


def home_machine(results: Results, problem: str) -> str | None:
    """The machine that timed most of ``problem``'s cells (the first seen of equals).

    A sweep on a cluster keeps a problem's sizes on one machine while it has
    a worker; where they spread over several, absolute times are read from
    this machine alone, since times from different machines do not share a
    curve. Ratios to f compare across machines: f and the mode at a size are
    timed in turn on one worker.
    """
    machines = Counter(machine_of(results, c) for c in _ok(results, problem))
    return machines.most_common(1)[0][0] if machines else None


def flagged(cell: dict) -> bool:
    """Whether the cell's time was flagged as taken under load (see the sweep's flags).

    >>> flagged({"flags": ["wall time 2× the CPU time"]}), flagged({})
    (True, False)
    """
    return bool(cell.get("flags"))


def series(
    results: Results,
    problem: str,
    mode: str,
    metric: str = "time",
    *,
    relative: bool = False,
    unflagged: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of ``mode`` on a one-parameter ``problem``, sorted by x.

    ``relative`` divides each value by plain f's at the same size (sizes
    where f was not measured are left out). ``unflagged`` leaves out times
    flagged as taken under load (and, with ``relative``, sizes where f's
    time was flagged); counts are never flagged. Times are compared within
    one machine: a ratio only to f timed on the same machine, absolute times
    only from the problem's :func:`home_machine`.
    """
    axis = AXIS[family_of(results, problem)]
    timed = metric == "time"
    drop = unflagged and timed
    home = home_machine(results, problem)
    baseline = {}
    if relative:
        baseline = {
            (c[axis], machine_of(results, c) if timed else None): _value(c, metric)
            for c in _ok(results, problem, "f")
            if _value(c, metric) and not (drop and flagged(c))
        }
    points = []
    for cell in _ok(results, problem, mode):
        machine = machine_of(results, cell)
        if (drop and flagged(cell)) or (timed and not relative and machine != home):
            continue
        value = _value(cell, metric)
        key = (cell[axis], machine if timed else None)
        if value is None or (relative and key not in baseline):
            continue
        points.append((cell[axis], value / baseline[key] if relative else value))
    points.sort()
    return np.array([p[0] for p in points], float), np.array([p[1] for p in points], float)


def series_ratio(
    results: Results, problem: str, mode: str, baseline: str, metric: str = "time"
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)``: ``mode``'s value ÷ ``baseline``'s at each x where both were measured."""
    x, y = series(results, problem, mode, metric)
    xb, yb = series(results, problem, baseline, metric)
    base = dict(zip(xb, yb))
    points = [(xi, yi / base[xi]) for xi, yi in zip(x, y) if base.get(xi)]
    return np.array([p[0] for p in points], float), np.array([p[1] for p in points], float)


@dataclass(frozen=True)
class Slope:
    """A least-squares slope of log y against log x over ``lo ≤ x ≤ hi``."""

    slope: float
    lo: float
    hi: float
    points: int

    def __str__(self) -> str:
        return format_slope(self.slope)


def fit_slope(x, y, *, upper: bool = True) -> Slope | None:
    """The log-log slope of ``y`` against ``x``.

    With ``upper`` only the upper part of the range is fitted (x at least
    the geometric middle of the range, and at least two points), where the
    asymptotic growth shows instead of fixed per-call overhead.

    >>> print(fit_slope([1, 10, 100, 1000], [5, 5, 50, 500]))
    1.00
    >>> fit_slope([4], [1.0]) is None
    True
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = (x > 0) & (y > 0)
    x, y = x[keep], y[keep]
    if len(x) < 2 or x.min() == x.max():
        return None
    if upper:
        middle = math.sqrt(x.min() * x.max())
        chosen = x >= middle
        if chosen.sum() < 2:
            chosen = x >= np.sort(x)[-2]
        x, y = x[chosen], y[chosen]
    slope = np.polyfit(np.log(x), np.log(y), 1)[0]
    return Slope(float(slope), float(x.min()), float(x.max()), len(x))


@dataclass(frozen=True)
class Crossover:
    """Where ``winner`` overtakes ``loser`` as the swept count grows.

    ``kind`` is ``"at"`` (``value`` interpolated between ``below`` and
    ``above``), ``"always"`` (the winner is ahead at every common size) or
    ``"never"`` (the loser is still ahead at the largest common size).
    """

    winner: str
    loser: str
    kind: str
    value: float | None
    below: float | None
    above: float | None
    sizes: tuple

    def describe(self, axis: str) -> str:
        """The crossover in words, e.g. ``from n ≈ 37 (between 16 and 64)``."""
        if self.kind == "always":
            return f"at every {axis} measured ({axis} ≥ {self.sizes[0]:g})"
        if self.kind == "never":
            return f"not within {axis} ≤ {self.sizes[-1]:g}"
        return f"from {axis} ≈ {self.value:.3g} (between {self.below:g} and {self.above:g})"


def crossover(
    results: Results, problem: str, winner: str, loser: str, metric: str = "time"
) -> Crossover | None:
    """The size beyond which ``winner`` is cheaper than ``loser`` for good.

    Uses the sizes where both were measured; ``None`` with fewer than two.
    Between the last size where the loser is ahead and the next, the
    crossing is interpolated on the log-log scale.
    """
    xw, yw = series(results, problem, winner, metric)
    xl, yl = series(results, problem, loser, metric)
    common = sorted(set(xw) & set(xl))
    if len(common) < 2:
        return None
    ratio = {x: yl[list(xl).index(x)] / yw[list(xw).index(x)] for x in common}
    sizes = tuple(common)
    if all(ratio[x] > 1 for x in common):
        return Crossover(winner, loser, "always", None, None, None, sizes)
    if ratio[common[-1]] <= 1:
        return Crossover(winner, loser, "never", None, None, None, sizes)
    last_behind = max(i for i, x in enumerate(common) if ratio[x] <= 1)
    below, above = common[last_behind], common[last_behind + 1]
    r0, r1 = math.log(ratio[below]), math.log(ratio[above])
    fraction = -r0 / (r1 - r0) if r1 != r0 else 0.5
    value = math.exp(math.log(below) + fraction * (math.log(above) - math.log(below)))
    return Crossover(winner, loser, "at", value, below, above, sizes)


def grid_ratio(
    results: Results, problem: str, numerator: str, denominator: str, metric: str = "time"
) -> dict[tuple[int, int], float]:
    """``{(n, m): numerator ÷ denominator}`` over a Jacobian problem's grid."""
    values = {}
    for mode in (numerator, denominator):
        for cell in _ok(results, problem, mode):
            value = _value(cell, metric)
            if value:
                values[mode, cell["n"], cell["m"]] = value
    return {
        (n, m): values[numerator, n, m] / values[denominator, n, m]
        for (mode, n, m) in values
        if mode == numerator and (denominator, n, m) in values
    }
