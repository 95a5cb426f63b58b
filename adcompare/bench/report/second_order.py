"""The report's second-order parts: HVP ÷ gradient and the cheapest composition.

Every sentence is computed from the results through
:mod:`~adcompare.bench.report.second_order_analysis`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from adcompare.bench.harness.results import Results
from adcompare.bench.report import analysis
from adcompare.bench.report import second_order_analysis as second
from adcompare.bench.report.text import format_range, format_ratio
from adcompare.durations import format_duration

__all__ = ["second_order_conclusions", "second_order_figure", "second_order_section"]


def _hessian_sentence(results: Results, problems: list[str]) -> str | None:
    per_composition: dict[str, list[float]] = {}
    for problem in problems:
        for composition in second.compositions(results, problem, "hessian"):
            x, y = second.hessian_per_hvp(results, problem, composition, "work")
            per_composition.setdefault(composition, []).extend(
                ratio / n for n, ratio in zip(x, y) if n > 1
            )
    parts = []
    for composition, values in per_composition.items():
        if not values:
            continue
        median = float(np.median(values))
        words = "about n HVPs" if 0.5 <= median <= 2 else f"{median:.2g} × n HVPs"
        spread = format_range(min(values), max(values), lambda v: f"{v:.2g}")
        parts.append(f"{composition} {spread} ({words})")
    if not parts:
        return None
    return (
        "A full Hessian's element work ÷ (n × one HVP's), over the measured problems and "
        "sizes: " + "; ".join(parts) + "."
    )


def _overall(results: Results, problems: list[str]) -> str | None:
    cheapest = [c for p in problems for c in second.cheapest_hvps(results, p)]
    if not cheapest:
        return None
    wins = Counter(c.winner for c in cheapest)
    best, count = wins.most_common(1)[0]
    margins = [c.margin for c in cheapest if c.winner == best]
    others = ", ".join(f"{w} {k}" for w, k in wins.most_common()[1:])
    text = (
        f"On this machine the cheapest HVP composition was {best} at {count} of "
        f"{len(cheapest)} measured (problem, n) pairs"
        + (f" (then {others})" if others else "")
        + ", ahead of the next composition by "
        + format_range(min(margins), max(margins), lambda v: format_ratio(v)[:-1], "×")
        + f" (median {format_ratio(float(np.median(margins)))})."
    )
    largest = {}
    for c in cheapest:
        largest.setdefault(c.slowest, []).append(c.spread)
    slowest, spreads = max(largest.items(), key=lambda item: max(item[1]))
    text += f" The dearest was {slowest}, up to {format_ratio(max(spreads))} the cheapest's time."
    return text


def _cheapest(results: Results, problems: list[str]) -> str | None:
    parts = []
    for problem in problems:
        cheapest = second.cheapest_hvps(results, problem)
        if cheapest:
            parts.append(
                f"**{problem}** "
                + ", ".join(
                    f"{c.winner} at n = {c.n:g} ({format_ratio(c.margin)} faster than "
                    f"{c.runner_up}, {format_ratio(c.spread)} than {c.slowest})"
                    for c in cheapest
                )
            )
    return "Cheapest HVP by time: " + "; ".join(parts) + "." if parts else None


def second_order_conclusions(results: Results, problems: list[str]) -> list[str]:
    """Conclusion lines (without bullets) on HVPs and Hessians, or none; each HVP's
    ratios to the gradient are in its problem's table."""
    lines = [_cheapest(results, problems)]
    lines += [_overall(results, problems), _hessian_sentence(results, problems)]
    return [line for line in lines if line]


def _table(results: Results, problem: str) -> list[str]:
    hvps = second.compositions(results, problem)
    hessians = second.compositions(results, problem, "hessian")
    gradient = dict(zip(*analysis.series(results, problem, second.GRADIENT)))
    columns = [("hvp", c) for c in hvps] + [("hessian", c) for c in hessians]
    values = {
        column: dict(zip(*analysis.series(results, problem, f"{column[0]}:{column[1]}")))
        for column in columns
    }
    work = {c: dict(zip(*second.hvp_ratio(results, problem, c, "work"))) for c in hvps}
    sizes = sorted({n for column in values.values() for n in column})
    lines = [
        "| n | gradient | "
        + " | ".join(f"{'HVP' if kind == 'hvp' else 'Hessian'}, {c}" for kind, c in columns)
        + " |",
        "|---:|---:|" + "---:|" * len(columns),
    ]
    for n in sizes:
        row = [format_duration(gradient[n]) if n in gradient else "–"]
        for kind, composition in columns:
            t = values[kind, composition].get(n)
            if t is None:
                row.append("–")
                continue
            ratio = ""
            if kind == "hvp" and n in gradient:
                ratio = f" ({format_ratio(t / gradient[n])}"
                if n in work[composition]:
                    ratio += f"; {format_ratio(work[composition][n])}"
                ratio += ")"
            row.append(format_duration(t) + ratio)
        lines.append(f"| {n:g} | " + " | ".join(row) + " |")
    return lines + [""]


def second_order_figure(results: Results, problem: str, figures: dict) -> list[str]:
    """The Markdown image of ``problem``'s second-derivative figure, if it has one."""
    stem = f"{problem}-second-order"
    if not second.compositions(results, problem) or stem not in figures:
        return []
    what = "time and element work of HVPs, Hessians and the gradient, and their ratios, against n"
    return [f"![{problem}: {what}]({figures[stem].name})"]


def second_order_section(results: Results, problem: str) -> list[str]:
    """The second-order table of a many-inputs problem's section, or nothing."""
    if not second.compositions(results, problem):
        return []
    return _table(results, problem)


#: How to read every second-order figure and table: said once, in "How to read".
SECOND_ORDER_LEGEND = (
    "Second derivatives: the figure's top panels show the time and element work of one HVP "
    "(solid) and of the full Hessian (dashed) per composition, outer mode first, with one "
    "reverse gradient (black); bottom left one HVP ÷ one gradient, by time (solid) and "
    "element work (dotted); bottom right the Hessian ÷ one HVP of the same composition, by "
    "time (solid) and element work (dotted), beside the dashed line n. The table below a problem's "
    "first-derivative table gives median times, in brackets an HVP's time ÷ the reverse "
    "gradient's, then its element work ÷ the gradient's."
)
