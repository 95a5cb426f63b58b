"""Compare a run's conclusions with a reference run's: which crossovers moved.

A crossover (where one mode overtakes another as the swept count grows) is
the conclusion a quick sweep exists to show. Two runs agree when, for every
problem and comparison both measured, the crossover lies between the same
two measured sizes (or holds at every size, or at none), by time and by
element work. Timings themselves always differ between machines.
"""

from __future__ import annotations

from adcompare.bench.harness.modes import mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.report import analysis

__all__ = ["compare_conclusions", "crossovers"]

#: The comparisons that decide each family: (winner, loser) as the count grows.
#: One-input problems have n = 1, so both forward modes do the same single
#: pass; the first one measured is compared.
COMPARISONS = {
    "many-inputs": [[("reverse", "forward1")], [("reverse", "forward")]],
    "one-input": [[("forward", "reverse"), ("forward1", "reverse")]],
}


def crossovers(results: Results, problem: str, metric: str = "time") -> list:
    """The deciding crossovers of ``problem`` (see :data:`COMPARISONS`).

    >>> crossovers(Results(), "rosenbrock")
    []
    """
    family = analysis.family_of(results, problem)
    found = []
    for choices in COMPARISONS.get(family, []):
        for winner, loser in choices:
            result = analysis.crossover(results, problem, winner, loser, metric)
            if result:
                found.append(result)
                break
    return found


def _bracket(crossover) -> tuple:
    return crossover.kind, crossover.below, crossover.above


def compare_conclusions(results: Results, reference: Results) -> tuple[int, list[str], list[str]]:
    """How many crossovers both runs show, a sentence for each that moved, and the
    problems whose time crossover moved only within the timing noise.

    A time crossover moved within the noise when, at every size where the two
    runs order the two modes differently, one of the runs cannot tell them
    apart: their interquartile ranges overlap. Two modes that cost the same
    near the crossing (reverse mode and chunked forward mode at small n) put
    it anywhere among those sizes from run to run.

    >>> compare_conclusions(Results(), Results())
    (0, [], [])
    """
    agreed, moved, noise = 0, [], []
    for problem in analysis.problems_in(results):
        axis = analysis.AXIS.get(analysis.family_of(results, problem))
        if axis is None:
            continue
        for metric, words in (("time", "by time"), ("work", "by element work")):
            theirs = {(c.winner, c.loser): c for c in crossovers(reference, problem, metric)}
            for mine in crossovers(results, problem, metric):
                other = theirs.get((mine.winner, mine.loser))
                if other is None:
                    continue
                if _bracket(mine) == _bracket(other):
                    agreed += 1
                    continue
                if metric == "time" and _within_noise(results, reference, problem, axis, mine):
                    noise.append(problem)
                    continue
                moved.append(
                    f"{problem}: {mode_label(mine.winner)} beats {mode_label(mine.loser)} "
                    f"{words} {mine.describe(axis)}, the reference {other.describe(axis)}"
                )
    return agreed, moved, noise


def _times(results: Results, problem: str, mode: str, axis: str) -> dict:
    """``{size: (median, interquartile range)}`` of ``mode``'s times on ``problem``."""
    return {
        cell[axis]: (cell["time"]["median"], cell["time"].get("iqr", 0.0))
        for cell in analysis._ok(results, problem, mode)
    }


def _within_noise(results: Results, reference: Results, problem: str, axis: str, mine) -> bool:
    """Whether the two runs order ``mine``'s modes differently only where one of them
    cannot tell the modes apart (see :func:`compare_conclusions`)."""
    runs = [
        (_times(run, problem, mine.winner, axis), _times(run, problem, mine.loser, axis))
        for run in (results, reference)
    ]
    sizes = set.intersection(*(set(times) for pair in runs for times in pair))
    differing = [x for x in sizes if len({win[x][0] < lose[x][0] for win, lose in runs}) == 2]
    return bool(differing) and all(
        any(_overlap(win[x], lose[x]) for win, lose in runs) for x in differing
    )


def _overlap(a: tuple, b: tuple) -> bool:
    """Whether two (median, IQR) intervals overlap."""
    return abs(a[0] - b[0]) <= (a[1] + b[1]) / 2
