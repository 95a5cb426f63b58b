"""The report: ``report.md`` beside its figures, every sentence computed from results.

Sections: a summary (fitted slopes and crossovers), conclusions, the machines, one section per
problem (figure, caption, table of medians, and for many-inputs problems the second derivatives:
:mod:`~adcompare.bench.report.second_order`), the peers (:mod:`~adcompare.bench.report.peers`),
ADBench and GradBench beside published ratios (:mod:`~adcompare.bench.report.real`), elimination
orders (:mod:`~adcompare.bench.report.elimination`), what was skipped, failed or disagreed. Nothing
is measured here.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from adcompare.bench.harness.measure import RATIO_SHIFT, WALL_OVER_CPU
from adcompare.bench.harness.modes import MODES, mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.problems import size_text
from adcompare.bench.report import analysis
from adcompare.bench.report.compare import crossovers
from adcompare.bench.report.elimination import elimination_section
from adcompare.bench.report.machine import machine_section
from adcompare.bench.report.peers import peer_conclusions, peer_section
from adcompare.bench.report.plots import figure_markdown, save_figures
from adcompare.bench.report.real import real_conclusions, real_measured, real_section
from adcompare.bench.report.recommend import recommendation
from adcompare.bench.report.replay import replay_section
from adcompare.bench.report.second_order import (
    SECOND_ORDER_LEGEND,
    second_order_conclusions,
    second_order_figure,
    second_order_section,
)
from adcompare.bench.report.text import format_range, format_ratio
from adcompare.durations import format_duration

__all__ = ["render", "write_report"]


def _label(mode: str) -> str:
    return mode_label(mode)


def _axis(results: Results, problem: str) -> str | None:
    return analysis.AXIS.get(analysis.family_of(results, problem))


def _slopes(results: Results, problem: str, metric: str = "time", relative: bool = False):
    slopes = {}
    for mode in analysis.modes_in(results, problem):
        if relative and mode == "f":
            continue
        x, y = analysis.series(results, problem, mode, metric, relative=relative, unflagged=True)
        fit = analysis.fit_slope(x, y, upper=metric == "time")
        if fit:
            slopes[mode] = fit
    return slopes


def _flagged_sizes(results: Results, problem: str, mode: str) -> int:
    """How many of ``mode``'s times on ``problem`` the fitted slopes leave out as flagged."""
    everything = analysis.series(results, problem, mode)[0]
    return len(everything) - len(analysis.series(results, problem, mode, unflagged=True)[0])


def _flag_conclusion(results: Results) -> list[str]:
    flagged = [c for c in results.cells if c["status"] == "ok" and analysis.flagged(c)]
    if not flagged:
        return []
    shown = 8
    names = ", ".join(f"{c['problem']} {c['mode']} at {_size(c)}" for c in flagged[:shown])
    if len(flagged) > shown:
        names += f" and {len(flagged) - shown} more"
    return [
        f"{len(flagged)} of {sum(c['status'] == 'ok' for c in results.cells)} times are "
        f"flagged as taken under a burst of load (wall time over {WALL_OVER_CPU:g}× the CPU "
        f"time, beyond the run's usual excess, or time ÷ f's moving over {RATIO_SHIFT:g}× "
        f"between rounds): {names}. The tables mark them †, and the fitted slopes leave them "
        "out."
    ]


def _ratio_at_largest(results: Results, problem: str, mode: str):
    x, y = analysis.series(results, problem, mode, "time", relative=True)
    return (x[-1], y[-1]) if len(x) else None


def _summary(results: Results, problems: list[str]) -> list[str]:
    modes = [m for m in MODES if any(m in analysis.modes_in(results, p) for p in problems)]
    lines = [
        "## Summary",
        "",
        "Fitted log-log slope of the median time per call against the swept count "
        "(n inputs, or m outputs for one-input problems), over the upper half of the sweep "
        "(from the geometric middle of the measured range up), where growth shows rather "
        "than fixed per-call overhead. A slope of 1 means time proportional to the count; "
        "k† says how many flagged sizes the fit left out. Crossovers: the count beyond which "
        "the first mode is cheaper than the second at every measured size, interpolated on "
        "the log-log scale; by measured time, then by the deterministic element work.",
        "",
        "| problem | swept | "
        + " | ".join(_label(m) for m in modes)
        + " | crossovers (by time; by element work) |",
        "|---|---|" + "---|" * len(modes) + "---|",
    ]
    for problem in problems:
        axis = _axis(results, problem)
        if axis is None:
            continue
        slopes = _slopes(results, problem)
        row = []
        for m in modes:
            if m not in slopes:
                row.append("–")
                continue
            left_out = _flagged_sizes(results, problem, m)
            row.append(
                f"{slopes[m]} ({axis} {slopes[m].lo:g}–{slopes[m].hi:g}"
                + (f", {left_out}†" if left_out else "")
                + ")"
            )
        lines.append(
            f"| {problem} | {axis} | "
            + " | ".join(row)
            + f" | {_crossover_text(results, problem)} |"
        )
    return lines + [""]


def _recommendations(results: Results, problems: list[str]) -> list[str]:
    """One sentence per function, in one conclusion: which mode to use where."""
    sentences = [r for r in (recommendation(results, p) for p in problems) if r]
    if not sentences:
        return []
    return [
        "Which mode to use, by median time among the modes that compute the whole Jacobian "
        "(forward, reverse, and their replays where measured): " + " ".join(sentences)
    ]


def _crossover_text(results: Results, problem: str) -> str:
    """Every crossover of ``problem`` in one table cell, by time and by element work."""
    axis = _axis(results, problem)
    by_work = {(c.winner, c.loser): c for c in crossovers(results, problem, "work")}
    parts = []
    for c in crossovers(results, problem):
        work = by_work.get((c.winner, c.loser))
        parts.append(
            f"{_label(c.winner)} beats {_label(c.loser)} {c.describe(axis)}; "
            f"{work.describe(axis) if work else '–'}"
        )
    return ". ".join(parts) or "–"


def _largest_sizes_conclusion(results: Results, problems: list[str]) -> str | None:
    """What the modes cost, as a multiple of f's time, at each problem's largest sizes;
    how they grow is the summary's slopes, and the crossovers its last column."""
    parts = []
    for problem in problems:
        axis = _axis(results, problem)
        if axis is None:
            continue
        ratios = []
        for mode in ("reverse", "reverse1", "forward", "forward1"):
            found = _ratio_at_largest(results, problem, mode)
            if found:
                ratios.append(f"{_label(mode)} {format_ratio(found[1])} at {axis} = {found[0]:g}")
        if ratios:
            parts.append(f"**{problem}** " + ", ".join(ratios))
    if not parts:
        return None
    return "Time ÷ f's at the largest sizes measured: " + "; ".join(parts) + "."


def _grid_conclusion(results: Results, problem: str) -> str:
    sentences = []
    for metric, what in (("time", "faster"), ("work", "cheaper in element work")):
        parts = []
        for mode, reverse in analysis.JACOBIAN_PAIRS:
            ratios = analysis.grid_ratio(results, problem, mode, reverse, metric)
            if not ratios:
                continue
            tall = [r for (n, m), r in ratios.items() if n < m]
            wide = [r for (n, m), r in ratios.items() if n > m]
            square = [r for (n, m), r in ratios.items() if n == m]
            parts.append(
                f"{_label(mode)} is {what} than {_label(reverse)} in {sum(r < 1 for r in tall)} of "
                f"{len(tall)} measured cells with n < m, {sum(r < 1 for r in square)} of "
                f"{len(square)} with n = m and {sum(r < 1 for r in wide)} of {len(wide)} with "
                "n > m"
            )
        if parts:
            sentences.append("; ".join(parts))
    text = f"**{problem}** (n inputs, m outputs): " + ". By counts, ".join(sentences) + "."
    return text + _batching_sentence(results, problem)


def _batching_sentence(results: Results, problem: str) -> str:
    """What batching buys each mode at the largest (n, m) both were measured at."""
    parts = []
    for one, batched in analysis.BATCHING_PAIRS:
        ratios = analysis.grid_ratio(results, problem, one, batched)
        if ratios:
            n, m = max(ratios, key=lambda size: (size[0] * size[1], size))
            parts.append(f"{_label(one)} takes {ratios[n, m]:.3g}× {_label(batched)}'s time")
    if not parts:
        return ""
    return (
        f" What batching buys, at the largest cell (n = {n:g}, m = {m:g}): "
        + ", ".join(parts)
        + "."
    )


def _work_conclusion(results: Results, problems: list[str]) -> list[str]:
    lines = []
    many = [p for p in problems if analysis.family_of(results, p) == "many-inputs"]
    reverse_ratios = []
    for problem in many:
        _, r = analysis.series(results, problem, "reverse", "work", relative=True)
        if len(r):
            reverse_ratios.append((problem, float(r.min()), float(r.max())))
    slopes = [(p, _work_slopes(results, p)) for p in problems if _axis(results, p)]
    slopes = [(p, text) for p, text in slopes if text]
    if slopes:
        lines.append(
            "Log-log slope of element work ÷ f's against the swept count (forward mode "
            "carries one tangent lane per input, reverse mode one cotangent lane per output): "
            + "; ".join(f"**{p}** {text}" for p, text in slopes)
            + "."
        )
    if reverse_ratios:
        lines.append(
            "Element work of reverse mode stays within a constant multiple of f's, whatever n: "
            + ", ".join(
                f"{format_range(lo, hi, lambda v: f'{v:.2f}', '×')} ({p})"
                for p, lo, hi in reverse_ratios
            )
            + "."
        )
    return lines


def _checks(results: Results) -> list[str]:
    checked = [c for c in results.cells if c["status"] == "ok" and c.get("check")]
    if not checked:
        return []
    failed = [c for c in checked if not c["check"]["ok"]]
    exact = [c["check"]["error"] for c in checked if c["mode"] != "fd"]
    numeric = [c["check"]["error"] for c in checked if c["mode"] == "fd"]
    text = f"{len(checked) - len(failed)} of {len(checked)} derivative checks passed"
    largest = []
    if exact:
        largest.append(f"{max(exact):.1e} for the exact modes")
    if numeric:
        largest.append(f"{max(numeric):.1e} for finite differences")
    text += " (largest relative error " + ", ".join(largest) + ")." if largest else "."
    lines = [text]
    for c in failed:
        lines.append(
            f"- **failed**: {c['problem']} {_label(c['mode'])} at {_size(c)}: error "
            f"{c['check']['error']:.2e} against {c['check']['against']} "
            f"(tolerance {c['check']['tolerance']:.0e})"
        )
    return lines


def _size(cell: dict) -> str:
    return size_text(cell["size"])


def _conclusions(results: Results, problems: list[str]) -> list[str]:
    lines = ["## Conclusions", ""]
    lines += ["- " + line for line in _recommendations(results, problems)]
    largest = _largest_sizes_conclusion(results, problems)
    if largest:
        lines.append("- " + largest)
    for problem in problems:
        if analysis.modes_in(results, problem) and (
            analysis.family_of(results, problem) == "jacobian"
        ):
            lines.append("- " + _grid_conclusion(results, problem))
    lines += ["- " + line for line in _work_conclusion(results, problems)]
    lines += ["- " + line for line in second_order_conclusions(results, problems)]
    lines += ["- " + line for line in real_conclusions(results)]
    lines += ["- " + line for line in peer_conclusions(results)]
    lines += ["- " + line for line in _flag_conclusion(results)]
    checks = _checks(results)
    if checks:
        lines.append("- " + checks[0])
        lines += ["  " + line for line in checks[1:]]
    return lines + [""]


def _work_slopes(results: Results, problem: str) -> str:
    """The slopes of element work ÷ f's of ``problem``'s modes, as a phrase."""
    work_slopes = _slopes(results, problem, "work", relative=True)
    text = ", ".join(
        f"{_label(m)} {work_slopes[m]}"
        for m in ("forward1", "forward", "reverse1", "reverse", "fd")
        if m in work_slopes
    )
    one_lane, chunked = work_slopes.get("forward1"), work_slopes.get("forward")
    if one_lane and chunked and one_lane.slope - chunked.slope > 0.3:
        text += " (chunked counts less: a matrix product is counted by its largest operand)"
    return text


def _median_table(results: Results, problem: str) -> list[str]:
    axis = _axis(results, problem)
    modes = analysis.modes_in(results, problem)
    cells = {
        (c[axis], c["mode"]): c
        for c in results.cells
        if c["problem"] == problem and c["status"] == "ok" and c.get("time")
    }
    sizes = sorted({size for size, _ in cells})
    lines = [
        f"| {axis} | " + " | ".join(_label(m) for m in modes) + " |",
        "|---:|" + "---:|" * len(modes),
    ]
    for size in sizes:
        row = []
        for mode in modes:
            cell = cells.get((size, mode))
            if cell is None:
                row.append("–")
                continue
            t = cell["time"]
            spread = (
                f" ±{50 * t['iqr'] / t['median']:.0f}%"
                if t.get("iqr") is not None and t["median"]
                else ""
            )
            row.append(
                format_duration(t["median"]) + spread + (" †" if analysis.flagged(cell) else "")
            )
        lines.append(f"| {size:g} | " + " | ".join(row) + " |")
    return lines + [""]


def _grid_table(results: Results, problem: str) -> list[str]:
    """Every mode's median time at each (n, m) in one cell, then forward ÷ reverse,
    each forward mode against the reverse mode batched alike."""
    modes = analysis.modes_in(results, problem)
    times = {
        (c["n"], c["m"], c["mode"]): c
        for c in results.cells
        if c["problem"] == problem and c["status"] == "ok" and c.get("time")
    }
    if not times:
        return []
    grids = {
        (mode, reverse): analysis.grid_ratio(results, problem, mode, reverse)
        for mode, reverse in analysis.JACOBIAN_PAIRS
    }
    grids = {pair: ratios for pair, ratios in grids.items() if ratios}
    ns = sorted({n for n, _, _ in times})
    ms = sorted({m for _, m, _ in times})

    def entry(n, m) -> str:
        medians = []
        for mode in modes:
            cell = times.get((n, m, mode))
            medians.append(
                format_duration(cell["time"]["median"]) + (" †" if analysis.flagged(cell) else "")
                if cell
                else "–"
            )
        ratios = [f"{r[n, m]:.2g}" if (n, m) in r else "–" for r in grids.values()]
        return " / ".join(medians) + (f" ({' / '.join(ratios)})" if grids else "")

    lines = [
        "Each cell: the median times of "
        + " / ".join(_label(m) for m in modes)
        + (
            "; in brackets the time ratios "
            + " / ".join(f"{_label(f)} ÷ {_label(r)}" for f, r in grids)
            + " (below 1: forward is faster)"
            if grids
            else ""
        )
        + ".",
        "",
        "| m \\ n | " + " | ".join(f"{n:g}" for n in ns) + " |",
        "|---:|" + "---:|" * len(ns),
    ]
    for m in reversed(ms):
        lines.append(f"| {m:g} | " + " | ".join(entry(n, m) for n in ns) + " |")
    return lines + [""]


def _problem_section(results: Results, problem: str, figures: dict) -> list[str]:
    family = analysis.family_of(results, problem)
    description = analysis.description_of(results, problem)
    lines = [f"## {problem}: {description} ({family})" if description else f"## {problem}", ""]
    if _axis(results, problem):
        pictures = [figure_markdown(problem, figures[problem])] if problem in figures else []
        pictures += second_order_figure(results, problem, figures)
        if pictures:
            lines += [" ".join(pictures), ""]
        lines += _median_table(results, problem)
        lines += second_order_section(results, problem)
    elif family == "jacobian":
        stem = f"{problem}-crossover"
        if stem in figures:
            lines += [
                f"![{problem}: maps of forward ÷ reverse over n and m]({figures[stem].name})",
                "",
                "Each cell is one (n, m); its colour is log₁₀ of forward ÷ reverse, blue where "
                "forward mode is cheaper and red where reverse is; the dashed line is n = m; grey "
                "cells were not measured by both modes. Each map sets a forward mode against the "
                "reverse mode batched alike (one lane against one row a sweep, chunked lanes "
                "against chunked rows). Top: measured time; bottom: element work.",
                "",
            ]
        lines += _grid_table(results, problem)
    return lines


#: The ends of the reasons for skipping a cell over the time budget, each said once for
#: all the cells it skipped: what the group says, given the budget.
_BUDGET_REASONS = (
    (re.compile(r", so a cell would exceed the (\S+ s) budget$"), "Predicted over the {} budget"),
    (
        re.compile(r", over the (\S+ s) budget per cell, so larger sizes are skipped$"),
        "Over the {} budget per cell at a smaller size, so larger sizes are skipped",
    ),
)


def _not_measured(results: Results) -> list[str]:
    skipped = [c for c in results.cells if c["status"] == "skipped"]
    errors = [c for c in results.cells if c["status"] == "error"]
    lines = []
    if skipped:
        reasons = Counter()
        examples = {}
        for c in skipped:
            reason = c.get("reason", "")
            # "not installed (...)" and "(here 4·64)" vary by cell; the rule is the reason.
            kind = (
                reason.split(" (")[0] if "not installed" in reason or "(here " in reason else reason
            )
            reasons[kind] += 1
            examples.setdefault(kind, c)
        lines += [f"## Skipped cells ({len(skipped)})", ""]
        over_budget = {}
        for reason, count in reasons.most_common():
            c = examples[reason]
            text = f"{c['problem']} {_label(c['mode'])} at {_size(c)}: {reason}" + (
                f" ({count} cells)" if count > 1 else ""
            )
            for pattern, group in _BUDGET_REASONS:
                found = pattern.search(reason)
                if found:
                    shortened = text.replace(found.group(0), "", 1)
                    over_budget.setdefault(group.format(found.group(1)), []).append(shortened)
                    break
            else:
                lines.append("- " + text)
        for group, texts in over_budget.items():
            lines.append(f"- {group}: " + "; ".join(texts) + ".")
        lines.append("")
    if errors:
        lines += [f"## Cells that failed ({len(errors)})", ""]
        for c in errors:
            error = c.get("error") or {}
            lines.append(
                f"- {c['problem']} {_label(c['mode'])} at {_size(c)}: "
                f"{error.get('type')}: {error.get('message')}"
            )
        lines.append("")
    return lines


def _opening(results: Results, sources: list[str] | None) -> list[str]:
    """The title, what the report covers, and how many cells it read."""
    status = Counter(c["status"] for c in results.cells)
    runs = results.data.get("runs") or []
    return [
        "# adcompare benchmark report",
        "",
        "How the cost of derivatives grows with the number of inputs n and outputs m, "
        "for forward mode (dual numbers, one lane or chunked lanes), reverse mode (a tape), "
        "finite differences and plain f; what second derivatives (HVPs, Hessians) cost in each "
        "composition of the two modes"
        + (
            "; and how the ADBench and GradBench problems compare with the ratios other tools "
            "published"
            if real_measured(results)
            else ""
        )
        + ". Every number and sentence below is computed from the results file; regenerate it "
        "with `adcompare report`.",
        "",
        f"{len(results.cells)} cells: {status['ok']} measured, {status['skipped']} skipped, "
        f"{status['error']} failed"
        + (f"; {len(runs)} run(s), the first started {runs[0]['started']}" if runs else "")
        + (f"; from {', '.join(sources)}" if sources else "")
        + ".",
        "",
    ]


def _how_to_read() -> list[str]:
    """What each kind of measurement is and how the figures and tables show it."""
    return [
        "## How to read the measurements",
        "",
        "- Time: median seconds per call after a warm-up, over timed repeats; the garbage "
        "collector is off while timing and numpy's BLAS runs with the recorded number of "
        "threads.",
        "- Element work: the elements each op touches (its largest operand or result; for "
        "dual numbers lanes × output size), summed over all engines: deterministic, the "
        "same on every machine. A matrix product counts its largest operand, not its "
        "multiply-adds, so chunked forward mode through a matrix product (k lanes in one "
        "product) counts less work than it does; one-lane forward mode is counted fully.",
        "- Plain f's counts come from running the same code on an untracked tensor; finite "
        "differences' counts are 2n evaluations of f's.",
        "- A problem's figure: time and element work against n (or m), and each ÷ f's; the "
        "dashed (forward) and dash-dotted (reverse) lines are the theory, c·n·f and c·m·f. "
        "Its table: the median time per call, ± half the interquartile range as a "
        "percentage; † marks a time taken under load (see the conclusions), which the "
        "fitted slopes leave out.",
        "- " + SECOND_ORDER_LEGEND,
        "- Peak memory: tracemalloc in a separate untimed call. The reverse tape's bytes "
        "count the arrays it holds, including constants it shares rather than copies, so "
        "they can exceed the peak.",
        "",
    ]


def render(results: Results, figures: dict | None = None, sources: list[str] | None = None) -> str:
    """The report's Markdown for ``results``; ``figures`` maps stems to image paths.

    >>> print(render(Results()).splitlines()[0])
    # adcompare benchmark report
    """
    figures = figures or {}
    problems = analysis.problems_in(results)
    lines = _opening(results, sources)
    if not any(c["status"] == "ok" for c in results.cells):
        return "\n".join([*lines, "No cell was measured, so there is nothing to report.", ""])
    if "summary" in figures:
        lines += [
            f"![each problem's cost ratio against the swept count]({figures['summary'].name})",
            "",
        ]
    lines += _summary(results, problems)
    lines += _conclusions(results, problems)
    lines += _how_to_read()
    lines += machine_section(results)
    for problem in problems:
        # Fixed-size instances have no sweep to show: the ADBench section covers them.
        if analysis.modes_in(results, problem) and analysis.family_of(results, problem) != "fixed":
            lines += _problem_section(results, problem, figures)
    lines += peer_section(results)
    lines += real_section(results)
    lines += replay_section(results) + elimination_section(results, figures)
    lines += _not_measured(results)
    return "\n".join(lines)


def write_report(
    results: Results,
    out_dir: str | Path,
    *,
    formats: tuple[str, ...] = ("png",),
    sources: list[str] | None = None,
) -> Path:
    """Write the figures and ``report.md`` into ``out_dir``; returns the report's path.

    Everything is written into a temporary folder beside ``out_dir`` first and
    moved in at the end (``report.md`` last), so a report that fails part-way
    leaves nothing behind. Files in ``out_dir`` the report does not write
    are left alone.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(20, "it is a file, not a folder", str(out_dir))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".tmp"))
    try:
        figures = save_figures(results, staging, formats)
        (staging / "report.md").write_text(render(results, figures, sources), encoding="utf-8")
        if not out_dir.exists():
            staging.rename(out_dir)
        else:
            written = sorted(staging.iterdir(), key=lambda f: f.name == "report.md")
            for file in written:
                os.replace(file, out_dir / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir / "report.md"
