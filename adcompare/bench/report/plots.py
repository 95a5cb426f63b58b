"""Figures drawn from results: one per problem, written as PNG (and SVG on request).

A one-parameter problem gets four panels against its swept count (n, or m
for one-input problems), on log-log axes:

- time per call, one line per mode, the fitted slope in the legend;
- cost ratio, each mode's time ÷ plain f's;
- element work, with the theoretical lines c·n·f for forward mode and
  c·m·f for reverse mode (c fitted to the data);
- peak memory, and the reverse tape's bytes.

A Jacobian problem gets crossover maps over its (n, m) grid, coloured by
log₁₀(forward ÷ reverse), with the diagonal n = m marked.

Figures are :class:`matplotlib.figure.Figure` objects built without pyplot,
so nothing here touches a display or global state.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from adcompare.bench.harness.modes import mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.peers import PEER_MODES
from adcompare.bench.report import analysis
from adcompare.bench.report.elimination import elimination_figure, elimination_modes
from adcompare.bench.report.plot_style import AXIS_LABEL, mathtext, rc, style_log_axes
from adcompare.bench.report.second_order_plots import second_order_figure
from adcompare.bench.report.text import format_ratio

work = analysis.work

__all__ = [
    "COLORS",
    "PEER_COLORS",
    "crossover_figure",
    "figure_markdown",
    "figures",
    "line_style",
    "problem_figure",
    "save_figures",
    "summary_figure",
]

COLORS = {
    "f": "black",
    "forward1": "tab:orange",
    "forward": "tab:red",
    "reverse1": "tab:cyan",
    "reverse": "tab:blue",
    "reverse-reference": "tab:gray",
    "fd": "tab:green",
    "symbolic": "tab:purple",
}
#: Theory lines: near-black, dashed, over the coloured data.
THEORY_COLOR = "0.1"
MARKERS = {
    "f": "o",
    "forward1": "s",
    "forward": "D",
    "reverse1": "<",
    "reverse": "^",
    "reverse-reference": ">",
    "fd": "v",
    "symbolic": "P",
}
#: Peers: one colour per library, hollow markers, dashed lines (dotted when jitted);
#: the marker says what the mode computes, as adcompare's do.
PEER_COLORS = {"jax": "tab:cyan", "torch": "tab:pink", "autograd": "tab:brown"}
#: A peer added by an entry point.
OTHER_PEER_COLOR = "tab:olive"
PEER_MARKERS = {"grad": "^", "reverse": "^", "jacrev": "v", "jacfwd": "D", "jvp-loop": "s"}


def line_style(mode: str) -> dict:
    """Matplotlib line keywords for ``mode``: solid and filled for adcompare's modes,
    dashed (dotted if jitted) and hollow in the library's colour for a peer's.

    >>> line_style("torch:jacfwd")["color"], line_style("reverse")["linestyle"]
    ('tab:pink', '-')
    """
    peer = PEER_MODES.get(mode)
    if peer is None:
        return {"marker": MARKERS.get(mode, "o"), "color": COLORS.get(mode), "linestyle": "-"}
    transform = mode.split(":", 1)[1].split("+")[0]
    return {
        "marker": PEER_MARKERS.get(transform, "o"),
        "color": PEER_COLORS.get(peer.library, OTHER_PEER_COLOR),
        "linestyle": ":" if peer.jit else "--",
        "markerfacecolor": "none",
    }


def _label(mode: str) -> str:
    return mode_label(mode)


def _title(results: Results, problem: str) -> str:
    family = analysis.family_of(results, problem)
    known = analysis.description_of(results, problem)
    description = f": {mathtext(known)}" if known else ""
    return f"{problem}{description}  [{family}]"


def _plot_modes(ax, results, problem, metric, *, relative=False, slopes=False) -> None:
    for mode in analysis.modes_in(results, problem):
        if relative and mode == "f":
            continue
        x, y = analysis.series(results, problem, mode, metric, relative=relative)
        if len(x) == 0:
            continue
        label = _label(mode)
        if slopes:  # fitted as the report fits it: without times flagged as under load
            fit = analysis.fit_slope(
                *analysis.series(results, problem, mode, metric, unflagged=True)
            )
            label += f" (slope {fit})" if fit else ""
        ax.plot(x, y, label=label, linewidth=1.6, markersize=5, **line_style(mode))


def _theory_lines(ax, results, problem, axis: str) -> None:
    """c·n·f for forward mode and c·m·f for reverse, with c fitted to the data, each
    labelled with the count that is not on the axis (``m = 1`` for a gradient).
    """
    f_cells = {
        c[axis]: c
        for c in results.cells
        if c["problem"] == problem and c["mode"] == "f" and c["status"] == "ok" and work(c)
    }
    forward = (
        "forward1" if len(analysis.series(results, problem, "forward1", "work")[0]) else "forward"
    )
    # Each line is labelled with the count off the axis (m against n, n against m), so a
    # reader knows for which m "c·m·f" was drawn.
    other = "m" if axis == "n" else "n"
    values = sorted({c[other] for c in f_cells.values()}) or [None]
    fixed = f"{other} = " + (f"{values[0]}" if len(values) == 1 else f"{values[0]}–{values[-1]}")
    for (mode, count), dashes in zip(((forward, "n"), ("reverse", "m")), ("--", "-.")):
        x, y = analysis.series(results, problem, mode, "work")
        theory = {key: work(c) * c[count] for key, c in f_cells.items()}
        ratios = [yi / theory[xi] for xi, yi in zip(x, y) if xi in theory]
        if not ratios:
            continue
        constant = float(np.median(ratios))
        xs = sorted(theory)
        # Drawn over the data, dark and dashed, so a line the data follow stays visible.
        ax.plot(
            xs,
            [constant * theory[k] for k in xs],
            linestyle=dashes,
            color=THEORY_COLOR,
            linewidth=1.8,
            zorder=5,
            label=f"theory, {_label(mode)}: {constant:.2g}·{count}·f, {fixed}",
        )


def problem_figure(results: Results, problem: str) -> Figure:
    """The four panels of a one-parameter problem (see the module docstring)."""
    axis = analysis.AXIS[analysis.family_of(results, problem)]
    with_peers = any(mode in PEER_MODES for mode in analysis.modes_in(results, problem))
    with rc():
        # A fixed layout: constrained layout would draw every figure twice. With peers the
        # top row's many lines share one legend in a margin on the right.
        figure = Figure(figsize=(16.5 if with_peers else 13, 9.5))
        figure.subplots_adjust(
            left=0.055 if with_peers else 0.07,
            right=0.79 if with_peers else 0.985,
            bottom=0.065,
            top=0.915,
            hspace=0.3,
            wspace=0.2,
        )
        grid = figure.add_gridspec(2, 2)
        has_f = "f" in analysis.modes_in(results, problem)
        # Without plain f there is no cost ratio: the time panel takes the whole top row.
        time_ax = figure.add_subplot(grid[0, 0] if has_f else grid[0, :])
        ratio_ax = figure.add_subplot(grid[0, 1]) if has_f else None
        work_ax, memory_ax = figure.add_subplot(grid[1, 0]), figure.add_subplot(grid[1, 1])
        _plot_modes(time_ax, results, problem, "time", slopes=True)
        style_log_axes(time_ax, axis, "seconds per call (median)", f"Time against {axis}")
        if ratio_ax is not None:
            _plot_modes(ratio_ax, results, problem, "time", relative=True)
            ratio_ax.axhline(1.0, color="black", linewidth=1, alpha=0.5)
            style_log_axes(
                ratio_ax, axis, "time ÷ time of plain f", "Cost ratio: mode time ÷ f time"
            )
        _plot_modes(work_ax, results, problem, "work")
        _theory_lines(work_ax, results, problem, axis)
        style_log_axes(
            work_ax, axis, "elements touched by all ops", "Element work (deterministic counts)"
        )
        _memory_panel(memory_ax, results, problem, axis)
        if with_peers:
            figure.legend(
                *time_ax.get_legend_handles_labels(),
                loc="upper left",
                bbox_to_anchor=(0.8, 0.915),
                title="top row (peers dashed, hollow)",
            )
        shown = (work_ax, memory_ax) if with_peers else (time_ax, ratio_ax, work_ax, memory_ax)
        for ax in (ax for ax in shown if ax is not None):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best")
        figure.suptitle(_title(results, problem), fontsize=13)
    return figure


def _memory_panel(ax, results: Results, problem: str, axis: str) -> None:
    """Peak memory of every mode, and the reverse tape's bytes beside it."""
    _plot_modes(ax, results, problem, "memory")
    x, y = analysis.series(results, problem, "reverse", "tape")
    if len(x):
        ax.plot(
            x, y, linestyle=":", color=COLORS["reverse"], marker="^", label="reverse: tape bytes"
        )
    style_log_axes(ax, axis, "bytes", "Peak memory (tracemalloc) and tape size")
    _explain_tape_over_peak(ax, results, problem)


def _explain_tape_over_peak(ax, results: Results, problem: str) -> None:
    """Say in the panel why the tape's bytes can exceed the peak, where they do."""
    tape = dict(zip(*analysis.series(results, problem, "reverse", "tape")))
    peak = dict(zip(*analysis.series(results, problem, "reverse", "memory")))
    if not any(tape[x] > peak[x] for x in tape if x in peak):
        return
    ax.text(
        0.98,
        0.03,
        "tape bytes > peak: the tape counts each array once per record that keeps it,\n"
        "and arrays it shares with f (the inputs, constants) that cost no new memory",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
        color="0.2",
        bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.7", "pad": 3},
        zorder=6,
    )


def _summary_problems(results: Results) -> tuple[str, list[str]]:
    """The summary's axis and problems: the many-inputs problems against n, or where none
    was measured (a user's function swept over m), the one-input ones against m."""
    for family, axis in (("many-inputs", "n"), ("one-input", "m")):
        problems = [
            p
            for p in analysis.problems_in(results)
            if analysis.family_of(results, p) == family
            and len(analysis.series(results, p, "reverse", relative=True)[0])
        ]
        if problems:
            return axis, problems
    return "n", []


#: The summary figure's problems differ by marker fill as well as colour, so they read in grey.
PROBLEM_FILLS = ("full", "none", "left", "top", "right", "bottom")


def summary_figure(results: Results) -> Figure | None:
    """Every many-inputs problem's cost ratio against n (else every one-input problem's
    against m): reverse ÷ f (solid) and forward ÷ f (dashed, chunked lanes; dotted, one
    lane), one colour and marker fill per problem. Where the slopes show it, the title
    says the project's headline: reverse stays flat while forward grows like n."""
    axis, problems = _summary_problems(results)
    if not problems:
        return None
    with rc():
        figure = Figure(figsize=(9, 5.2))
        figure.subplots_adjust(left=0.1, right=0.72, bottom=0.12, top=0.88)
        ax = figure.subplots()
        palette = colormaps["tab10"]
        for i, problem in enumerate(problems):
            for mode, dashes in (("reverse", "-"), ("forward", "--"), ("forward1", ":")):
                x, y = analysis.series(results, problem, mode, relative=True)
                if len(x):
                    ax.plot(
                        x,
                        y,
                        linestyle=dashes,
                        marker=MARKERS[mode],
                        color=palette(i),
                        fillstyle=PROBLEM_FILLS[i % len(PROBLEM_FILLS)],
                        linewidth=1.8,
                        markersize=6,
                        label=f"{problem}, {_label(mode)}",
                    )
        ax.axhline(1.0, color="black", linewidth=1, alpha=0.5)
        style_log_axes(ax, axis, "time ÷ time of plain f", "")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8.5)
        figure.suptitle(_summary_title(results, problems, axis), fontsize=12)
    return figure


def _relative_slopes(results: Results, problems: list[str], mode: str) -> list[float]:
    slopes = []
    for problem in problems:
        fit = analysis.fit_slope(
            *analysis.series(results, problem, mode, relative=True, unflagged=True)
        )
        if fit:
            slopes.append(fit.slope)
    return slopes


def _summary_title(results: Results, problems: list[str], axis: str) -> str:
    """The summary figure's title: it says a mode stays flat or grows like n only where
    every problem's fitted slope of its time ÷ f's shows it."""
    gradients = all(c["m"] == 1 for c in results.cells if c["problem"] in problems and c.get("m"))
    parts = []
    for mode, line in (("reverse", "solid"), ("forward", "dashed"), ("forward1", "dotted")):
        slopes = _relative_slopes(results, problems, mode)
        words = ""
        if slopes and all(abs(s) <= 0.3 for s in slopes):
            words = " stays flat"
        elif slopes and all(s >= 0.7 for s in slopes):
            words = f" grows like {axis}"
        parts.append(f"{_label(mode)} ({line}){words}")
    return (
        f"Cost of the {'gradient' if gradients else 'derivative'} ÷ cost of f, against {axis}\n"
        + "; ".join(parts)
    )


def _edges(values: list[float]) -> np.ndarray:
    logs = np.log(values)
    if len(values) == 1:
        return np.exp([logs[0] - 0.5, logs[0] + 0.5])
    middles = (logs[1:] + logs[:-1]) / 2
    first, last = 2 * logs[0] - middles[0], 2 * logs[-1] - middles[-1]
    return np.exp(np.concatenate([[first], middles, [last]]))


def _map(figure, ax, ratios: dict, title: str) -> None:
    ns = sorted({n for n, _ in ratios})
    ms = sorted({m for _, m in ratios})
    grid = np.full((len(ms), len(ns)), np.nan)
    for (n, m), value in ratios.items():
        grid[ms.index(m), ns.index(n)] = math.log10(value)
    limit = max(0.5, float(np.nanmax(np.abs(grid))))
    mesh = ax.pcolormesh(
        _edges(ns),
        _edges(ms),
        np.ma.masked_invalid(grid),
        cmap=colormaps["coolwarm"].with_extremes(bad="lightgray"),
        norm=TwoSlopeNorm(0.0, -limit, limit),
    )
    for n in ns:
        for m in ms:
            if (n, m) not in ratios:
                ax.text(
                    n, m, "not\nmeasured", ha="center", va="center", fontsize=8, color="dimgray"
                )
    for (n, m), value in ratios.items():
        ax.text(
            n,
            m,
            format_ratio(value),
            ha="center",
            va="center",
            fontsize=10,
            bbox={"facecolor": "white", "alpha": 0.6, "edgecolor": "none", "pad": 1.5},
        )
    lo, hi = min(ns[0], ms[0]) / 2, max(ns[-1], ms[-1]) * 2
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1.5, linestyle="--", label="n = m")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.minorticks_off()
    ax.set_xlim(_edges(ns)[0], _edges(ns)[-1])
    ax.set_ylim(_edges(ms)[0], _edges(ms)[-1])
    ax.set_xlabel(AXIS_LABEL["n"])
    ax.set_ylabel(AXIS_LABEL["m"])
    ax.set_title(title)
    ax.legend(loc="upper left")
    colorbar = figure.colorbar(mesh, ax=ax)
    colorbar.set_label("log₁₀(forward ÷ reverse)\n← forward cheaper · reverse cheaper →")


def crossover_figure(results: Results, problem: str) -> Figure:
    """Crossover maps of a Jacobian problem: forward ÷ reverse over the (n, m) grid.

    One map per pair of modes batched alike
    (:data:`~adcompare.bench.report.analysis.JACOBIAN_PAIRS`), for time and for element work.
    """
    with rc():
        panels = [
            (metric, mode, reverse)
            for metric in ("time", "work")
            for mode, reverse in analysis.JACOBIAN_PAIRS
            if analysis.grid_ratio(results, problem, mode, reverse, metric)
        ]
        rows = max(1, math.ceil(len(panels) / 2))
        height = 5.2 * rows
        figure = Figure(figsize=(13, height))
        # Margins in inches: room for the title above and the axis labels below.
        figure.subplots_adjust(
            left=0.06, right=0.97, bottom=0.65 / height, top=1 - 0.95 / height, hspace=0.35
        )
        axes = np.atleast_1d(figure.subplots(rows, 2 if len(panels) > 1 else 1)).ravel()
        for ax, (metric, mode, reverse) in zip(axes, panels):
            ratios = analysis.grid_ratio(results, problem, mode, reverse, metric)
            what = "time" if metric == "time" else "element work"
            _map(figure, ax, ratios, f"{what}: {_label(mode)} ÷ {_label(reverse)}")
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        figure.suptitle(_title(results, problem), fontsize=13)
    return figure


def figures(results: Results) -> dict[str, Figure]:
    """Every figure the results support, keyed by a file stem.

    >>> figures(Results())
    {}
    """
    out = {}
    summary = summary_figure(results)
    if summary is not None:
        out["summary"] = summary
    for problem in analysis.problems_in(results):
        family = analysis.family_of(results, problem)
        if not analysis.modes_in(results, problem):
            continue
        if family in analysis.AXIS:
            out[problem] = problem_figure(results, problem)
            if analysis.modes_in(results, problem, order=2):
                out[f"{problem}-second-order"] = second_order_figure(results, problem)
        elif family == "jacobian" and any(
            analysis.grid_ratio(results, problem, mode, reverse)
            for mode, reverse in analysis.JACOBIAN_PAIRS
        ):
            out[f"{problem}-crossover"] = crossover_figure(results, problem)
        if elimination_modes(results, problem):
            out[f"{problem}-elimination"] = elimination_figure(results, problem)
    return out


def figure_markdown(problem: str, path: Path) -> str:
    """The Markdown image of ``problem``'s figure at ``path``, its alt text saying what
    the figure shows.

    >>> figure_markdown("mlp", Path("mlp.png"))[:40]
    "![mlp: each mode's time per call, its ti"
    """
    what = (
        "each mode's time per call, its time ÷ plain f's, its element work and its peak "
        "memory, against the swept count on log-log axes"
    )
    return f"![{problem}: {what}]({path.name})"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: Longest file stem written; longer (or unsafe) names are cut and given a hash.
MAX_STEM = 80


def file_stem(stem: str) -> str:
    """A file name for the figure ``stem``: letters, digits, ``_ . -`` only, no
    leading dot, at most :data:`MAX_STEM` characters plus a hash when it had
    to change (so different names never share a file).

    Problem names come from results files, which people share, so a name
    never decides where a file goes.

    >>> file_stem("rosenbrock-second-order")
    'rosenbrock-second-order'
    >>> file_stem("../../etc/x")
    '_.._etc_x-...'
    """
    safe = _UNSAFE.sub("_", stem).lstrip(".")[:MAX_STEM]
    if safe == stem and safe:
        return safe
    digest = hashlib.sha256(stem.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe or 'figure'}-{digest}"


def save_figures(
    results: Results, out_dir: str | Path, formats: tuple[str, ...] = ("png",), dpi: int = 80
) -> dict[str, Path]:
    """Write every figure into ``out_dir``; returns ``{stem: path of the PNG}``.

    File names are made safe by :func:`file_stem`, and each path is checked
    to lie inside ``out_dir`` before anything is written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    inside = out_dir.resolve()
    written = {}
    for stem, figure in figures(results).items():
        for fmt in formats:
            path = out_dir / f"{file_stem(stem)}.{fmt}"
            if path.resolve().parent != inside:
                raise ValueError(f"refusing to write the figure {stem!r} outside {out_dir}")
            with rc():
                figure.savefig(path, dpi=dpi)
            written.setdefault(stem, path)
    return written
