"""The second-order figure of a many-inputs problem: HVPs and Hessians against n.

Four log-log panels, one line per composition (outer mode first):

- time per call: one HVP (solid), the full Hessian (dashed), one reverse
  gradient (black) for scale;
- element work (deterministic counts), the same lines;
- HVP ÷ gradient: time (solid) and element work (dotted);
- Hessian ÷ one HVP of the same composition: time (solid) and element
  work (dotted), as in the panel beside it, with the line n (a Hessian is
  n HVPs).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from adcompare.bench.harness.results import Results
from adcompare.bench.report import analysis
from adcompare.bench.report import second_order_analysis as second
from adcompare.bench.report.plot_style import mathtext, rc, style_log_axes

__all__ = ["COMPOSITION_COLORS", "second_order_figure"]

COMPOSITION_COLORS = {
    "fwd-over-rev": "tab:blue",
    "rev-over-rev": "tab:purple",
    "fwd-over-fwd": "tab:red",
    "rev-over-fwd": "tab:green",
}
MARKERS = {"fwd-over-rev": "^", "rev-over-rev": "v", "fwd-over-fwd": "D", "rev-over-fwd": "s"}


def _line(ax, x, y, composition: str, label: str, linestyle: str = "-") -> None:
    if len(x):
        ax.plot(
            x,
            y,
            linestyle=linestyle,
            marker=MARKERS.get(composition, "o"),
            color=COMPOSITION_COLORS.get(composition),
            label=label,
            linewidth=1.6,
            markersize=5,
        )


def _absolute(ax, results: Results, problem: str, metric: str) -> None:
    x, y = analysis.series(results, problem, second.GRADIENT, metric)
    if len(x):
        ax.plot(x, y, color="black", marker="o", linewidth=1.6, markersize=5, label="gradient")
    for composition in second.compositions(results, problem):
        x, y = analysis.series(results, problem, f"hvp:{composition}", metric)
        _line(ax, x, y, composition, f"HVP, {composition}")
    for composition in second.compositions(results, problem, "hessian"):
        x, y = analysis.series(results, problem, f"hessian:{composition}", metric)
        _line(ax, x, y, composition, f"Hessian, {composition}", "--")


def second_order_figure(results: Results, problem: str) -> Figure:
    """The four second-order panels of a many-inputs ``problem`` (module docstring)."""
    with rc():
        figure = Figure(figsize=(15, 9.5))
        figure.subplots_adjust(
            left=0.06, right=0.845, bottom=0.065, top=0.915, hspace=0.3, wspace=0.2
        )
        (time_ax, work_ax), (ratio_ax, hessian_ax) = figure.subplots(2, 2)
        _absolute(time_ax, results, problem, "time")
        style_log_axes(time_ax, "n", "seconds per call (median)", "Time: HVP, Hessian, gradient")
        _absolute(work_ax, results, problem, "work")
        style_log_axes(
            work_ax, "n", "elements touched by all ops", "Element work (deterministic counts)"
        )
        for composition in second.compositions(results, problem):
            x, y = second.hvp_ratio(results, problem, composition, "time")
            _line(ratio_ax, x, y, composition, f"{composition}, time")
            x, y = second.hvp_ratio(results, problem, composition, "work")
            _line(ratio_ax, x, y, composition, f"{composition}, element work", ":")
        ratio_ax.axhline(1.0, color="black", linewidth=1, alpha=0.5)
        style_log_axes(
            ratio_ax, "n", "HVP ÷ one reverse gradient", "One HVP ÷ one gradient, by composition"
        )
        sizes = set()
        for composition in second.compositions(results, problem, "hessian"):
            x, y = second.hessian_per_hvp(results, problem, composition, "time")
            _line(hessian_ax, x, y, composition, f"{composition}, time")
            sizes.update(x)
            x, y = second.hessian_per_hvp(results, problem, composition, "work")
            _line(hessian_ax, x, y, composition, f"{composition}, element work", ":")
        if sizes:
            ns = sorted(sizes)
            hessian_ax.plot(ns, ns, color="black", linestyle="--", alpha=0.6, label="n HVPs")
        style_log_axes(
            hessian_ax, "n", "Hessian ÷ one HVP", "Full Hessian ÷ one HVP of the same composition"
        )
        # The two top panels draw the same lines: one legend beside them keeps
        # nine entries from covering the data (the largest n sits top right).
        handles, labels = time_ax.get_legend_handles_labels()
        if handles:
            figure.legend(handles, labels, loc="center left", bbox_to_anchor=(0.852, 0.74))
        for ax in (ratio_ax, hessian_ax):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best")
        known = analysis.description_of(results, problem)
        title = f"{problem}: second derivatives" + (f" of {mathtext(known)}" if known else "")
        figure.suptitle(title, fontsize=13)
    return figure
