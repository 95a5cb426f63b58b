"""The report's ADBench/GradBench part: derivative time ÷ objective time beside published ratios.

For each instance at its published size, each mode's time for the full
derivative (a gradient, or BA's Jacobian) ÷ plain f's time, then the ratios
of :mod:`~adcompare.bench.report.published`. Why reverse mode lands where it does
is worded from the counts: op applications and tape records against f's.
"""

from __future__ import annotations

from adcompare.bench.harness.modes import MODES
from adcompare.bench.harness.results import Results
from adcompare.bench.problems import PROBLEMS
from adcompare.bench.problems.real import REAL_PROBLEMS
from adcompare.bench.report import analysis
from adcompare.bench.report.published import SOURCES, PublishedRatio, published_for
from adcompare.bench.report.text import format_ratio
from adcompare.durations import format_duration

__all__ = ["derivative_ratios", "real_conclusions", "real_measured", "real_section"]

#: The modes whose ratios are reported, in this order.
RATIO_MODES = (
    "reverse",
    "reverse1",
    "reverse-replay",
    "forward",
    "forward-replay",
    "forward1",
    "fd",
)


def _cells(results: Results, problem: str) -> dict[str, dict]:
    return {c["mode"]: c for c in results.cells if c["problem"] == problem}


def derivative_ratios(results: Results, problem: str) -> dict[str, float]:
    """``{mode: derivative time ÷ objective time}`` for the modes measured with f.

    >>> derivative_ratios(Results(), "adbench-gmm-1k")
    {}
    """
    cells = _cells(results, problem)
    plain = cells.get("f")
    if not plain or plain["status"] != "ok":
        return {}
    return {
        mode: cells[mode]["time"]["median"] / plain["time"]["median"]
        for mode in RATIO_MODES
        if mode in cells and cells[mode]["status"] == "ok"
    }


def _published_text(entry: PublishedRatio) -> str:
    return ("~" if entry.approximate else "") + f"{entry.ratio:g}"


def _placement(ratio: float, published: list[PublishedRatio]) -> str:
    cheaper = [p for p in published if p.ratio > ratio]
    dearer = [p for p in published if p.ratio <= ratio]
    parts = []
    if dearer:
        parts.append("slower than " + ", ".join(f"{p.tool} ({_published_text(p)})" for p in dearer))
    if cheaper:
        parts.append(
            "faster than " + ", ".join(f"{p.tool} ({_published_text(p)})" for p in cheaper)
        )
    return "; ".join(parts)


def _ops(cell: dict) -> int:
    return sum(((cell.get("counts") or {}).get("ops") or {}).values())


def _why(results: Results, problem: str) -> str | None:
    cells = _cells(results, problem)
    plain, reverse = cells.get("f"), cells.get("reverse")
    if not (plain and reverse and plain["status"] == reverse["status"] == "ok"):
        return None
    f_ops, reverse_ops = _ops(plain), _ops(reverse)
    if not f_ops or not reverse_ops:
        return None
    time_ratio = reverse["time"]["median"] / plain["time"]["median"]
    op_ratio = reverse_ops / f_ops
    records = reverse["counts"].get("tape_records", 0)
    sweeps = reverse["counts"].get("sweeps", 0)
    elements = analysis.work(plain) / f_ops
    return (
        f"Why: the objective applies {f_ops} ops, touching {elements:.0f} elements each on "
        f"average; reverse mode records {records} tape records and runs {sweeps} backward "
        f"sweep{'s' if sweeps != 1 else ''}, {reverse_ops} op applications in all: "
        f"{op_ratio:.1f}× the objective's, each {time_ratio / op_ratio:.2g}× as dear on "
        "average. "
        + (
            "Every op is a separate numpy call through Python dispatch, so the time ratio "
            "follows the ratio of op applications."
            if 0.5 <= time_ratio / op_ratio <= 2
            else "An op of the derivative costs "
            + ("more" if time_ratio > op_ratio else "less")
            + " than one of the objective's, so the time ratio is not the ratio of op "
            "applications alone."
        )
        + _cheapest_mode(results, problem)
    )


def _cheapest_mode(results: Results, problem: str) -> str:
    ratios = derivative_ratios(results, problem)
    cheapest = min(ratios, key=ratios.get)
    if cheapest == "reverse":
        return ""
    return (
        f" The cheapest mode here is {MODES[cheapest].label} ({format_ratio(ratios[cheapest])} "
        f"against reverse's {format_ratio(ratios['reverse'])})."
    )


def _comparison(results: Results, problem: str) -> str | None:
    ratios = derivative_ratios(results, problem)
    if "reverse" not in ratios:
        return None
    published = published_for(problem)
    text = f"adcompare's reverse mode takes {format_ratio(ratios['reverse'])} the objective's time"
    if published:
        fastest = published[0]
        text += (
            f", {format_ratio(ratios['reverse'] / fastest.ratio)} the fastest published ratio "
            f"({fastest.tool}, {_published_text(fastest)}): "
            + _placement(ratios["reverse"], published)
        )
    return text + "."


def real_conclusions(results: Results) -> list[str]:
    """Conclusion lines (without bullets) on the ADBench/GradBench instances."""
    lines = []
    for real in REAL_PROBLEMS:
        ratios = derivative_ratios(results, real.name)
        if not ratios:
            continue
        comparison = _comparison(results, real.name)
        if comparison:  # the table in the ADBench section gives every mode's ratio
            lines.append(f"**{real.name}**: {comparison}")
            continue
        measured = ", ".join(f"{MODES[m].label} {format_ratio(r)}" for m, r in ratios.items())
        lines.append(f"**{real.name}**, derivative ÷ objective time: {measured}.")
    lines += _not_measured(results)
    return lines


def real_measured(results: Results) -> bool:
    """Whether ``results`` hold a cell of any ADBench or GradBench instance: only then does
    the report speak of them, the ones not measured included.

    >>> real_measured(Results())
    False
    """
    return any(_cells(results, real.name) for real in REAL_PROBLEMS)


def _not_measured(results: Results) -> list[str]:
    if not real_measured(results):
        return []
    lines = []
    for real in REAL_PROBLEMS:
        if derivative_ratios(results, real.name):
            continue
        cells = _cells(results, real.name)
        if not cells:
            how = (
                "it is opt-in: add it with `--problems " + real.name + "`, or run `--full`"
                if real.opt_in
                else "it was not among the problems measured"
            )
            lines.append(f"{real.name} was not measured in this run: {how}.")
        else:
            reasons = {c.get("reason") or c["status"] for c in cells.values()}
            lines.append(f"{real.name} has no ratio in this run: " + "; ".join(reasons) + ".")
    return lines


def _table(results: Results, names: list[str]) -> list[str]:
    """One table for every instance: a row per instance, a column per adcompare mode
    (its median time and its ratio to the objective's) and one for the published
    ratios, so each number appears once."""
    modes = [
        mode
        for mode in RATIO_MODES
        if any(mode in derivative_ratios(results, name) for name in names)
    ]
    lines = [
        "| instance | objective | "
        + " | ".join(f"adcompare {MODES[mode].label}" for mode in modes)
        + " | published (tool, source) |",
        "|---|---:|" + "---:|" * len(modes) + "---|",
    ]
    for name in names:
        cells, ratios = _cells(results, name), derivative_ratios(results, name)
        row = [format_duration(cells["f"]["time"]["median"])]
        for mode in modes:
            row.append(
                f"{format_duration(cells[mode]['time']['median'])} ({format_ratio(ratios[mode])})"
                if mode in ratios
                else "–"
            )
        by_source: dict[str, list[str]] = {}
        for entry in published_for(name):
            by_source.setdefault(entry.source, []).append(f"{entry.tool} {_published_text(entry)}×")
        published = "; ".join(f"{source}: {', '.join(t)}" for source, t in by_source.items())
        lines.append(f"| {name} | " + " | ".join(row) + f" | {published or '–'} |")
    return lines + [""]


def real_section(results: Results) -> list[str]:
    """The section on the ADBench/GradBench instances, or nothing if none was measured."""
    measured = [r.name for r in REAL_PROBLEMS if derivative_ratios(results, r.name)]
    if not real_measured(results):
        return []
    lines = [
        "## ADBench and GradBench: derivative time ÷ objective time",
        "",
        "Each instance at its published size: the median time of its full derivative (the "
        "gradient; for bundle adjustment the Jacobian) by each mode and, in brackets, that "
        "time ÷ the objective's, beside the ratios other tools published for the same "
        "instance. The objective timed is the hand-written plain-numpy form "
        "(`adcompare.adbench.plain`, equal to the op-set objective to 1e-12), since the "
        "published ratios divide by each tool's fastest primal.",
        "",
    ]
    lines += _table(results, measured)
    for name in measured:
        why = _why(results, name)
        lines.append(f"- {name}: {PROBLEMS[name].description}." + (f" {why}" if why else ""))
    lines.append("")
    cited = {p.source for name in measured for p in published_for(name)}
    if cited:
        lines.append(
            "Sources of the published ratios: "
            + "; ".join(f"{key}: {SOURCES[key]}" for key in SOURCES if key in cited)
            + "."
        )
    return lines + [""]
