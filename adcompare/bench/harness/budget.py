"""Why the sweep skips a cell before measuring it: the time budget per cell.

A mode is skipped at a size when a smaller size of it took longer than the
budget, when plain f's time says it cannot fit (:data:`CALLS_OF_F`), or when
extrapolating its last two measured sizes on the log-log scale predicts that
even a minimal cell (:data:`MIN_CALLS_PER_CELL` calls) would exceed the
budget; the first call is extrapolated on its own.
"""

from __future__ import annotations

import math

from adcompare.bench.harness.results import Results
from adcompare.bench.problems import Problem
from adcompare.durations import format_duration

__all__ = [
    "CALLS_OF_F",
    "MIN_CALLS_PER_CELL",
    "WARMUP_SLOPE_CAP",
    "budget_reason",
    "extrapolate",
    "size_text",
]

#: Calls a cell makes even with a single timed repeat: warm-up, the timed
#: call, the count run and the (slower, traced) memory run.
MIN_CALLS_PER_CELL = 4

#: The steepest growth assumed of a first call (symbolic differentiation of the dense
#: quadratic grew with slope 2 to 2.2 from n = 4 to 64).
WARMUP_SLOPE_CAP = 3.0

#: Modes whose one call costs at least this many calls of plain f, given n.
CALLS_OF_F = {"fd": lambda n: 2 * n, "forward1": lambda n: n}


def size_text(size: dict) -> str:
    """A size as text: ``n=4, m=8``.

    >>> size_text({"n": 4, "m": 8})
    'n=4, m=8'
    """
    return ", ".join(f"{k}={v}" for k, v in size.items())


def budget_reason(
    results: Results,
    problem: Problem,
    mode: str,
    size: dict,
    budget: float,
    *,
    plain: dict | None = None,
):
    """Why ``mode`` should skip ``size`` given the cells measured so far, or ``None``.

    ``plain`` stands for plain f's cell at ``size`` while that cell is not
    in ``results`` yet (its repeats are still being taken in turn).
    """
    measured = [
        c
        for c in results.cells
        if c["problem"] == problem.name
        and c["mode"] == mode
        and c["status"] == "ok"
        and c["size"].keys() == size.keys()  # sizes by other names do not compare
    ]
    for cell in measured:
        smaller = all(cell["size"][k] <= v for k, v in size.items()) and cell["size"] != size
        if smaller and cell.get("seconds", 0.0) > budget:
            return (
                f"{mode} took {cell['seconds']:.3g} s at {size_text(cell['size'])}, over the "
                f"{budget:g} s budget per cell, so larger sizes are skipped"
            )
    if mode in CALLS_OF_F:
        reason = _calls_of_f_reason(results, problem, mode, size, budget, plain)
        if reason:
            return reason
    for key in size:
        reason = _extrapolated_reason(measured, mode, size, key, budget)
        if reason:
            return reason
    return None


def extrapolate(x1, t1, x2, t2, at, *, low: float, high: float) -> tuple[float, float]:
    """``(time at x = at, slope)``: the line through ``(x1, t1)`` and ``(x2, t2)`` on
    log-log axes, its slope clamped to ``[low, high]``, carried on from ``(x2, t2)``.

    >>> extrapolate(10, 1.0, 20, 4.0, 40, low=0.0, high=3.0)
    (16.0, 2.0)
    >>> extrapolate(10, 1.0, 20, 64.0, 40, low=0.0, high=3.0)  # slope 6, clamped to 3
    (512.0, 3.0)
    """
    slope = min(high, max(low, math.log(t2 / t1) / math.log(x2 / x1)))
    return t2 * (at / x2) ** slope, slope


def _extrapolated_reason(measured: list[dict], mode: str, size: dict, key: str, budget: float):
    """Why extrapolating ``mode``'s two largest cells along ``key`` (the other size
    parameters equal) says a cell at ``size`` would exceed ``budget``, or ``None``."""
    value = size[key]
    line = sorted(
        (
            c
            for c in measured
            # A time flagged as taken under load would extrapolate the load, not the mode.
            if not c.get("flags")
            and c["size"][key] < value
            and all(c["size"][k] == v for k, v in size.items() if k != key)
        ),
        key=lambda c: c["size"][key],
    )
    if len(line) < 2:
        return None
    (x1, t1), (x2, t2) = [(c["size"][key], c["time"]["median"]) for c in line[-2:]]
    predicted, slope = extrapolate(x1, t1, x2, t2, value, low=0.0, high=3.0)
    if predicted * MIN_CALLS_PER_CELL > budget:
        return (
            f"{mode} is predicted to take {predicted:.2g} s a call at {size_text(size)} "
            f"(log-log slope {slope:.2f} from {key}={x1} and {key}={x2}), so a cell would "
            f"exceed the {budget:g} s budget"
        )
    warmups = [c["time"].get("warmup") for c in line[-2:]]
    if all(warmups) and _distinct_first_call(warmups[-1], t2, budget):
        # The first call can cost far more than the rest (symbolic mode traces and
        # differentiates it), and it grows faster: extrapolate it on its own.
        w1, w2 = warmups
        first, warmup_slope = extrapolate(x1, w1, x2, w2, value, low=0.0, high=WARMUP_SLOPE_CAP)
        if first + predicted * (MIN_CALLS_PER_CELL - 1) > budget:
            return (
                f"{mode}'s first call is predicted to take {first:.2g} s at "
                f"{size_text(size)} (log-log slope {warmup_slope:.2f} from {key}={x1} and "
                f"{key}={x2}), so a cell would exceed the {budget:g} s budget"
            )
    return None


def _distinct_first_call(warmup: float, median: float, budget: float) -> bool:
    """Whether a first call costs enough on its own to be extrapolated apart from the rest:
    ten times a later call and a twentieth of the budget (noise in a call of a few
    milliseconds must not skip a cell)."""
    return warmup >= 10 * median and warmup >= budget / 20


def _calls_of_f_reason(
    results: Results, problem: Problem, mode: str, size: dict, budget: float, plain
):
    """Why a mode costing at least ``CALLS_OF_F[mode](n)`` calls of f cannot fit, or ``None``."""
    plain = results.get((problem.name, "f", tuple(sorted(size.items())))) or plain
    if plain is None or plain["status"] != "ok" or not plain.get("time"):
        return None
    estimate = plain["time"]["median"]
    calls = CALLS_OF_F[mode](plain["n"])
    predicted = calls * estimate
    if predicted * MIN_CALLS_PER_CELL <= budget:
        return None
    return (
        f"{mode} costs at least {calls} calls of f ({format_duration(estimate)} each), "
        f"{predicted:.2g} s a call, so a cell would exceed the {budget:g} s budget"
    )
