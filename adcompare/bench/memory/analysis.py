"""What the memory study's plots and report read off its cells: theory fits, the
budget crossing, the Pareto front and revolve's predicted time.

The theory lines have a fixed slope on log-log axes and one fitted constant:
memory ∝ 1 (forward mode, and revolve with S snapshots once T ≥ S), ∝ √T
(blocks of √T steps, revolve with √T snapshots) or ∝ T (the full tape).
"""

from __future__ import annotations

import math

import numpy as np

from adcompare.bench.memory.peers import ALL_MEMORY_MODES

__all__ = [
    "SLOPES",
    "budget_crossing",
    "fit_memory",
    "ok_cells",
    "pareto_front",
    "predicted_seconds",
]

#: The log-log slope of each growth law.
SLOPES = {"1": 0.0, "S": 0.0, "sqrt(T)": 0.5, "T": 1.0}


def ok_cells(cells: list[dict], problem: str, mode: str) -> list[dict]:
    """The measured cells of one problem and mode, by T."""
    found = [
        c for c in cells if c["problem"] == problem and c["mode"] == mode and c["status"] == "ok"
    ]
    return sorted(found, key=lambda c: c["steps"])


def fit_memory(cells: list[dict], mode: str) -> tuple[float, float] | None:
    """``(c, slope)`` with peak memory ≈ c·T^slope, the slope fixed by the mode's theory.

    Revolve with S snapshots is fitted on the cells with T ≥ S only (below,
    it stores every state). Returns ``None`` without traced memory.

    >>> cells = [{"steps": t, "memory": {"peak_bytes": 8 * t}} for t in (10, 100)]
    >>> c, slope = fit_memory(cells, "reverse")
    >>> round(c, 9), slope
    (8.0, 1.0)
    """
    definition = ALL_MEMORY_MODES[mode]
    slope = SLOPES[definition.growth]
    points = [
        (c["steps"], c["memory"]["peak_bytes"])
        for c in cells
        if c["memory"].get("peak_bytes")
        and (definition.snapshots is None or c["steps"] >= definition.snapshots(c["steps"]))
    ]
    if not points:
        return None
    logs = [math.log(m) - slope * math.log(t) for t, m in points]
    return float(math.exp(sum(logs) / len(logs))), slope


def budget_crossing(fit: tuple[float, float] | None, budget: float) -> float | None:
    """The T at which the fitted memory reaches ``budget`` (``inf`` if it never does).

    >>> budget_crossing((8.0, 1.0), 8e6), budget_crossing((1e6, 0.0), 8e6)
    (1000000.0, inf)
    """
    if fit is None:
        return None
    c, slope = fit
    if slope == 0.0:
        return math.inf if c <= budget else 0.0
    return (budget / c) ** (1.0 / slope)


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The points ``(name, memory, seconds)`` no other point beats on both, by memory.

    >>> pareto_front([("a", 1, 9), ("b", 2, 5), ("c", 3, 6), ("d", 4, 1)])
    [('a', 1, 9), ('b', 2, 5), ('d', 4, 1)]
    """
    front = []
    for point in sorted(points, key=lambda p: (p[1], p[2])):
        if not front or point[2] < front[-1][2]:
            front.append(point)
    return front


def predicted_seconds(cell: dict, plain: dict, reverse: dict) -> float | None:
    """Revolve's time predicted from its recompute count, and two measured step costs.

    Every untaped step evaluation (the forward pass's T and the sweep's
    advances: ``recomputed_steps`` in all) costs what one step of plain f
    costs; each of the T taped steps and its sweep costs what one step of the
    full tape costs.

    >>> cell = {"steps": 10, "counts": {"recomputed_steps": 30}}
    >>> print(predicted_seconds(cell, {"time": {"median": 1.0}}, {"time": {"median": 5.0}}))
    8.0
    """
    if plain is None or reverse is None:
        return None
    steps = cell["steps"]
    untaped = plain["time"]["median"] / steps
    taped = reverse["time"]["median"] / steps
    return cell["counts"]["recomputed_steps"] * untaped + steps * taped


def largest_common_steps(cells: list[dict], problem: str) -> int | None:
    """The largest T at which the most modes of ``problem`` were measured."""
    counts: dict[int, int] = {}
    for c in cells:
        if c["problem"] == problem and c["status"] == "ok":
            counts[c["steps"]] = counts.get(c["steps"], 0) + 1
    if not counts:
        return None
    most = max(counts.values())
    return max(t for t, n in counts.items() if n == most)


def theory_curve(fit: tuple[float, float], steps: np.ndarray) -> np.ndarray:
    """The fitted theory line at ``steps``."""
    c, slope = fit
    return c * np.asarray(steps, dtype=float) ** slope
