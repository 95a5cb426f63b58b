"""The report's replay part: how much of each mode's time was interpretation.

``reverse-replay`` and ``forward-replay`` run the programs
``adcompare.compile`` recorded: the same numpy calls as the eager engines,
without boxes, tapes or rule lookups. Eager time ÷ replayed time is then the
share of a mode's time that interpretation took, and the forward-versus-reverse
crossover measured on replays is the algorithmic one; the eager crossover
moves with each engine's overhead.
"""

from __future__ import annotations

from adcompare.bench.harness.results import Results
from adcompare.bench.report import analysis
from adcompare.bench.report.text import format_ratio

__all__ = ["interpretation_ratios", "replay_section"]

#: Each eager mode and its replayed counterpart.
PAIRS = (("reverse", "reverse-replay"), ("forward", "forward-replay"))

#: (winner, loser) as the swept count grows, eagerly and replayed.
CROSSINGS = {
    "many-inputs": (("reverse", "forward"), ("reverse-replay", "forward-replay")),
    "one-input": (("forward", "reverse"), ("forward-replay", "reverse-replay")),
}


def _medians(results: Results, problem: str, mode: str) -> dict[tuple, float]:
    return {
        (c["n"], c["m"]): c["time"]["median"]
        for c in results.cells
        if c["problem"] == problem
        and c["mode"] == mode
        and c["status"] == "ok"
        and c["time"]["median"]
    }


def interpretation_ratios(results: Results, problem: str, eager: str) -> dict[tuple, float]:
    """``{(n, m): eager median ÷ replayed median}`` where both were measured.

    >>> interpretation_ratios(Results(), "rosenbrock", "reverse")
    {}
    """
    replayed = dict(PAIRS)[eager]
    times, replays = _medians(results, problem, eager), _medians(results, problem, replayed)
    return {size: times[size] / replays[size] for size in sorted(times) if size in replays}


def _span(ratios: dict[tuple, float]) -> str:
    if not ratios:
        return "–"
    sizes = sorted(ratios, key=lambda size: (size[0] * size[1], size))
    first, last = ratios[sizes[0]], ratios[sizes[-1]]
    if len(sizes) == 1:
        return format_ratio(first)
    return (
        f"{format_ratio(first)} (n={sizes[0][0]}, m={sizes[0][1]}) → "
        f"{format_ratio(last)} (n={sizes[-1][0]}, m={sizes[-1][1]})"
    )


def _crossing_rows(results: Results, problem: str) -> list[str]:
    family = analysis.family_of(results, problem)
    axis = analysis.AXIS.get(family)
    if family not in CROSSINGS or axis is None:
        return []
    found = []
    for winner, loser in CROSSINGS[family]:
        crossing = analysis.crossover(results, problem, winner, loser)
        found.append(crossing.describe(axis) if crossing else "–")
    eager, replayed = CROSSINGS[family][0]
    if found == ["–", "–"]:
        return []
    return [f"| {problem} | {eager} beats {replayed} | {found[0]} | {found[1]} |"]


def replay_section(results: Results) -> list[str]:
    """The section on replayed modes, or nothing if no replay was measured."""
    problems = [
        p
        for p in analysis.problems_in(results)
        if any(interpretation_ratios(results, p, eager) for eager, _ in PAIRS)
    ]
    if not problems:
        return []
    lines = [
        "## Interpretation: eager time ÷ replayed time",
        "",
        "`reverse-replay` and `forward-replay` replay the program `adcompare.compile` "
        "recorded on their first call (the recording is in the warm-up time, not the "
        "median, as a peer's jit compilation is): the same numpy calls as the eager "
        "engines, without their boxes, tapes and rule lookups. Eager ÷ replayed is how "
        "many times over a mode's time interpretation made it, from the smallest size "
        "measured to the largest. With m > 1 outputs the replayed reverse mode replays f "
        "and its sweep once per output row, where eager reverse records f once.",
        "",
        "| problem | reverse: eager ÷ replayed | forward: eager ÷ replayed |",
        "|---|---|---|",
    ]
    for problem in problems:
        spans = [_span(interpretation_ratios(results, problem, eager)) for eager, _ in PAIRS]
        lines.append(f"| {problem} | " + " | ".join(spans) + " |")
    rows = [row for p in problems for row in _crossing_rows(results, p)]
    if rows:
        lines += [
            "",
            "Crossovers measured eagerly and on replays: the replayed one is the "
            "algorithmic crossover, the eager one is moved by each engine's overhead.",
            "",
            "| problem | comparison | eager | replayed |",
            "|---|---|---|---|",
            *rows,
        ]
    return lines + [""]
