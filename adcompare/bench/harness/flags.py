"""Flags on a timing taken under load: the process waited for the CPU, or its
ratio to plain f moved between the sweep's rounds.

>>> busy_flags({"wall_over_cpu": 1.0, "round_medians": [1.0]}, None)
[]
"""

from __future__ import annotations

import numpy as np

from adcompare.bench.harness.measure import RATIO_SHIFT, WALL_OVER_CPU
from adcompare.bench.harness.results import Results

__all__ = ["busy_flags", "usual_wall_over_cpu"]


def _worst_wall_over_cpu(timing: dict) -> float:
    return max([timing.get("wall_over_cpu") or 0.0, *(timing.get("round_wall_over_cpu") or [])])


def usual_wall_over_cpu(results: Results, timings: list[dict]) -> float:
    """How much wall time exceeds CPU time on this machine today: the lower quartile
    over the cells timed so far (at least 1). On a machine shared all along, every
    cell waits; a burst of load is what lifts some cells above the rest."""
    seen = [_worst_wall_over_cpu(t) for t in timings]
    seen += [
        _worst_wall_over_cpu(c["time"])
        for c in results.cells
        if c["status"] == "ok" and (c.get("time") or {}).get("wall_over_cpu")
    ]
    return max(1.0, float(np.percentile(seen, 25))) if seen else 1.0


def busy_flags(timing: dict, plain: dict | None, usual: float = 1.0) -> list[str]:
    """Why a timing may be disturbed by other load, as sentences; empty if not.

    A timing is flagged when its wall time exceeds its CPU time by more than
    :data:`~adcompare.bench.harness.measure.WALL_OVER_CPU` times the ``usual``
    excess of this run (overall or in one round: a burst of load may hit one
    round only), or when its ratio to plain f's time (``plain``, timed in
    the same rounds) moved by more than
    :data:`~adcompare.bench.harness.measure.RATIO_SHIFT` between rounds.

    >>> busy_flags({"wall_over_cpu": 2.0, "round_medians": [1.0]}, None)
    ['wall time 2× the CPU time: the process waited for a CPU']
    >>> busy_flags({"wall_over_cpu": 2.0, "round_medians": [1.0]}, None, usual=1.8)
    []
    >>> busy_flags({"wall_over_cpu": 6.0, "round_medians": [1.0]}, None, usual=2.0)
    ["wall time 6× the CPU time, 3× this run's usual 2×: a burst of load"]
    >>> busy_flags({"wall_over_cpu": 1.0, "round_medians": [2.0, 4.0]},
    ...            {"wall_over_cpu": 1.0, "round_medians": [1.0, 1.0]})
    ["time ÷ f's moved from 2× to 4× between rounds"]
    """
    flags = []
    ratio = _worst_wall_over_cpu(timing)
    if ratio > WALL_OVER_CPU * usual and usual > 1.0:
        flags.append(
            f"wall time {ratio:.3g}× the CPU time, {ratio / usual:.3g}× this run's usual "
            f"{usual:.3g}×: a burst of load"
        )
    elif ratio > WALL_OVER_CPU * usual:
        flags.append(f"wall time {ratio:.3g}× the CPU time: the process waited for a CPU")
    if plain is None or plain is timing:
        return flags
    key = "round_cpu_medians" if timing.get("round_cpu_medians") else "round_medians"
    rounds = list(zip(timing.get(key) or [], plain.get(key) or []))
    ratios = [mine / theirs for mine, theirs in rounds if mine and theirs]
    if len(ratios) >= 2 and max(ratios) / min(ratios) > RATIO_SHIFT:
        flags.append(f"time ÷ f's moved from {ratios[0]:.3g}× to {ratios[-1]:.3g}× between rounds")
    return flags
