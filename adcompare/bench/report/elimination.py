"""The report's elimination part: each order's multiplications, and its time beside the engines'.

The ``eliminate:O`` modes (:mod:`adcompare.elimination`) count their own
multiplications, so a cell's ``counts["multiplications"]`` is exact and the
same on every machine. A Jacobian problem swept over ``(n, m)`` is read on
its diagonal ``n = m``. One figure per problem: the multiplications of each
order against n (left), and the median time of each order beside
``jacfwd``'s and ``jacrev``'s (right).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from adcompare.bench.harness.modes import mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.report.plot_style import style_log_axes
from adcompare.durations import format_duration

__all__ = ["elimination_figure", "elimination_modes", "elimination_section", "on_diagonal"]

PREFIX = "eliminate:"
#: Dashed, in the colours the report's other figures give these modes.
ENGINE_STYLE = {
    "forward1": {"linestyle": ":", "color": "tab:orange"},
    "forward": {"linestyle": "--", "color": "tab:red"},
    "reverse1": {"linestyle": ":", "color": "tab:cyan"},
    "reverse": {"linestyle": "--", "color": "tab:blue"},
}


def on_diagonal(results: Results, problem: str, mode: str, metric: str) -> dict[int, float]:
    """``{n: value}`` of ``mode``'s cells of ``problem`` with ``n = m`` where both are swept:
    ``metric`` is ``"multiplications"`` (the count) or ``"time"`` (the median).

    >>> on_diagonal(Results(), "hourglass", "eliminate:forward", "time")
    {}
    """
    found = {}
    for cell in results.cells:
        if cell["problem"] != problem or cell["mode"] != mode or cell["status"] != "ok":
            continue
        if "m" in cell.get("size", {}) and cell["n"] != cell["m"]:
            continue
        if metric == "time":
            value = (cell.get("time") or {}).get("median")
        else:
            value = (cell.get("counts") or {}).get(metric)
        if value is not None:
            found[cell["n"]] = value
    return dict(sorted(found.items()))


def elimination_modes(results: Results, problem: str) -> list[str]:
    """The ``eliminate:`` modes measured on ``problem``, in the order first met.

    >>> elimination_modes(Results(), "hourglass")
    []
    """
    modes = [c["mode"] for c in results.cells if c["problem"] == problem]
    return [m for m in dict.fromkeys(modes) if m.startswith(PREFIX)]


def elimination_figure(results: Results, problem: str) -> Figure:
    """Multiplications of each order against n, and times beside jacfwd's and jacrev's."""
    figure = Figure(figsize=(11, 4.2), layout="constrained")
    counts_ax, time_ax = figure.subplots(1, 2)
    for mode in elimination_modes(results, problem):
        label = mode.removeprefix(PREFIX)
        for ax, metric in ((counts_ax, "multiplications"), (time_ax, "time")):
            series = on_diagonal(results, problem, mode, metric)
            if series:
                ax.plot(list(series), list(series.values()), marker="o", label=label)
    for mode in ENGINE_STYLE:
        series = on_diagonal(results, problem, mode, "time")
        if series:
            time_ax.plot(
                list(series), list(series.values()), label=mode_label(mode), **ENGINE_STYLE[mode]
            )
    style_log_axes(counts_ax, "n", "multiplications", f"{problem}: each order's multiplications")
    style_log_axes(time_ax, "n", "median time (s)", f"{problem}: elimination against the engines")
    for ax in (counts_ax, time_ax):
        ax.legend(fontsize=8)
    return figure


def _table(results: Results, problem: str, modes: list[str]) -> list[str]:
    engines = [m for m in ENGINE_STYLE if on_diagonal(results, problem, m, "time")]
    counts = {m: on_diagonal(results, problem, m, "multiplications") for m in modes}
    times = {m: on_diagonal(results, problem, m, "time") for m in [*modes, *engines]}
    sizes = sorted({n for series in times.values() for n in series})
    header = [m.removeprefix(PREFIX) for m in modes] + [mode_label(m) for m in engines]
    lines = ["| n | " + " | ".join(header) + " |", "|---:|" + "---:|" * len(header)]
    for n in sizes:
        row = []
        for mode in modes:
            count, time = counts[mode].get(n), times[mode].get(n)
            row.append(
                "–"
                if time is None
                else f"{count:,} ({format_duration(time)})"
                if count is not None
                else format_duration(time)
            )
        row += [format_duration(times[m][n]) if n in times[m] else "–" for m in engines]
        lines.append(f"| {n:g} | " + " | ".join(row) + " |")
    return lines


def elimination_section(results: Results, figures: dict) -> list[str]:
    """The report's lines on every problem measured by an elimination order.

    >>> elimination_section(Results(), {})
    []
    """
    problems = list(dict.fromkeys(c["problem"] for c in results.cells))
    lines = []
    for problem in problems:
        modes = elimination_modes(results, problem)
        if not modes:
            continue
        stem = f"{problem}-elimination"
        lines += [f"## {problem}: elimination orders", ""]
        if stem in figures:
            lines += [f"![{problem}: elimination orders]({figures[stem].name})", ""]
        lines += [
            "Each order's multiplications (exact, counted by the elimination) and in brackets "
            "its median time: recording f, reading the local partials and eliminating; the "
            "engines' median times beside them. Where both n and m are swept, n = m.",
            "",
            *_table(results, problem, modes),
            "",
        ]
    return lines
