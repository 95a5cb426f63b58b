"""The recommendation: one sentence per function, read from its measurements.

Which derivative mode was cheapest at each measured size and by how much,
where forward and reverse mode cross, and whether ``jacobian(mode="auto")``
(:func:`adcompare.choose_mode`) picks the faster of the two there. Only the
modes a user can call to get the whole Jacobian compete: forward (one lane
or chunked), reverse, and their replays where measured; finite differences
and SymPy are references, not choices.
"""

from __future__ import annotations

import adcompare as ad
from adcompare.bench.harness.modes import mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.report import analysis
from adcompare.bench.report.compare import crossovers
from adcompare.bench.report.text import format_range

__all__ = ["CANDIDATES", "recommendation"]

#: The modes that compete, in the order a tie is broken.
CANDIDATES = ("reverse", "forward", "forward1", "reverse-replay", "forward-replay")
#: What ``jacobian(mode="auto")``'s choice is measured as.
AUTO_MODES = {"forward": "forward", "reverse": "reverse"}


def _cells_by_size(results: Results, problem: str, axis: str) -> dict:
    """``{size: {mode: cell}}`` of the competing modes' measured cells."""
    by_size: dict = {}
    for mode in CANDIDATES:
        for cell in analysis._ok(results, problem, mode):
            by_size.setdefault(cell[axis], {})[mode] = cell
    return by_size


def _median(cell: dict) -> float:
    return cell["time"]["median"]


def _sizes(axis: str, sizes: list) -> str:
    return f"{axis} = " + format_range(min(sizes), max(sizes), lambda v: f"{v:g}")


def _ratios(ratios: list[float]) -> str:
    return format_range(min(ratios), max(ratios), lambda v: f"{v:.2g}", "×")


def _cheapest(by_size: dict, axis: str) -> str:
    """Which mode was cheapest where, grouping neighbouring sizes with the same winner."""
    runs: list[list] = []  # [winner, sizes, ratios to the next cheapest, next cheapest]
    for size in sorted(by_size):
        ranked = sorted(by_size[size].items(), key=lambda item: _median(item[1]))
        (winner, best), (runner_up, second) = ranked[:2]
        if runs and runs[-1][0] == winner:
            runs[-1][1].append(size)
            runs[-1][2].append(_median(second) / _median(best))
            runs[-1][3].add(runner_up)
        else:
            runs.append([winner, [size], [_median(second) / _median(best)], {runner_up}])
    parts = []
    for i, (winner, sizes, ratios, runners_up) in enumerate(runs):
        than = mode_label(next(iter(runners_up))) if len(runners_up) == 1 else "the next cheapest"
        parts.append(
            f"{mode_label(winner)}{' is cheapest' if i == 0 else ''} at {_sizes(axis, sizes)} "
            f"({_ratios(ratios)} faster than {than})"
        )
    return ", then ".join(parts)


def _crossing(results: Results, problem: str, axis: str) -> str | None:
    found = crossovers(results, problem)
    if not found:
        return None
    # Chunked forward mode is what jacobian's "forward" runs: its crossing comes first.
    c = next((c for c in found if "forward" in (c.winner, c.loser)), found[0])
    if c.kind == "always":
        return f"{mode_label(c.winner)} is ahead of {mode_label(c.loser)} at every {axis} measured"
    if c.kind == "never":
        return (
            f"{mode_label(c.winner)} does not overtake {mode_label(c.loser)} within "
            f"{axis} ≤ {c.sizes[-1]:g}"
        )
    return f"{mode_label(c.winner)} overtakes {mode_label(c.loser)} at {axis} ≈ {c.value:.3g}"


def _auto(by_size: dict, axis: str) -> str | None:
    """Whether ``jacobian(mode="auto")`` picks the faster of forward and reverse."""
    picks, wrong = {}, {}
    for size, cells in sorted(by_size.items()):
        if not all(mode in cells for mode in AUTO_MODES.values()):
            continue
        cell = next(iter(cells.values()))
        picked = ad.choose_mode(cell["n"], cell["m"]).mode
        other = "reverse" if picked == "forward" else "forward"
        picks.setdefault(picked, []).append(size)
        ratio = _median(cells[picked]) / _median(cells[other])
        if ratio > 1:
            wrong.setdefault(other, []).append((size, ratio))
    if not picks:
        return None
    picked = " and ".join(f"{mode} at {_sizes(axis, sizes)}" for mode, sizes in picks.items())
    text = f'jacobian(mode="auto") picks {picked}'
    if not wrong:
        return text + ", the faster of forward and reverse at every measured size"
    misses = [
        f"at {_sizes(axis, [s for s, _ in where])} {mode_label(mode)} is "
        f'{_ratios([r for _, r in where])} faster, so pass mode="{mode}" there'
        for mode, where in wrong.items()
    ]
    return text + ", but " + " and ".join(misses)


def recommendation(results: Results, problem: str) -> str | None:
    """One sentence: the cheapest mode at each measured size, the crossover, and whether
    ``jacobian(mode="auto")`` picks it; ``None`` when fewer than two modes compete.

    >>> recommendation(Results(), "mymodel") is None
    True
    """
    axis = analysis.AXIS.get(analysis.family_of(results, problem))
    by_size = _cells_by_size(results, problem, axis) if axis else {}
    by_size = {size: cells for size, cells in by_size.items() if len(cells) >= 2}
    if not by_size:
        return None
    outputs = sorted({c["m"] for cells in by_size.values() for c in cells.values()})
    inputs = sorted({c["n"] for cells in by_size.values() for c in cells.values()})
    fixed = (
        f"m = {format_range(outputs[0], outputs[-1], str)}"
        if axis == "n"
        else f"n = {format_range(inputs[0], inputs[-1], str)}"
    )
    parts = [_cheapest(by_size, axis), _crossing(results, problem, axis), _auto(by_size, axis)]
    return f"**{problem}** ({fixed}): " + "; ".join(p for p in parts if p) + "."
