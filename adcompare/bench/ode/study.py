"""Measure odeint's three methods on the ODE problems; one figure and one page of them.

Each problem of the study ``ode`` is swept at its own sizes (the number of
parameters n for ``ode-params``, of outputs m for ``ode-trajectory``) by the
harness (:func:`~adcompare.bench.harness.sweep.run_sweep`), so each cell has
its time, its counts (element work: deterministic) and its ``error``
against the tight-tolerance reference. The figure puts time and element
work against the swept size, one line per method; the page tabulates them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from adcompare.bench.harness.results import Results, load_results
from adcompare.bench.harness.sweep import SweepConfig, run_sweep
from adcompare.bench.problems import problems_of
from adcompare.bench.problems.ode import MODE_NAMES, PREPARERS
from adcompare.bench.report.analysis import work
from adcompare.bench.report.plot_style import AXIS_LABEL, rc, style_log_axes

__all__ = ["ode_figure", "ode_markdown", "run_ode_study", "write_ode_report"]

#: How each method is drawn.
STYLE = {
    "ode:tape": ("black", "o", "-"),
    "ode:forward": ("tab:blue", "^", "-"),
    "ode:adjoint": ("tab:red", "v", "--"),
}
#: What the figure's caption says it shows.
CAPTION = (
    "The full derivative by odeint's three methods against the swept size: CPU time above "
    "(medians of the timing thread's CPU time, steadier than wall time on a shared "
    "machine), element work divided by one plain solve's below "
    "(deterministic). Left, one loss over n weights: the adjoint's work ratio stays flat "
    "as n grows (one backward solve), forward sensitivities' grows in proportion to n, and "
    "their time passes the adjoint's once that arithmetic outweighs the per-op overhead. "
    "Right, the whole trajectory (m outputs) over 4 rates: forward sensitivities' work "
    "ratio stays flat in m, the adjoint's grows at least in proportion to m (one backward "
    "solve per output row, each over the whole interval), and so does its time."
)


def run_ode_study(
    path: Path, *, quick: bool = False, log: Callable[[str], None] | None = None
) -> Results:
    """Measure every ``ode`` problem by the three modes into ``path`` (saved as each cell
    ends); ``quick``: each problem's two smallest sizes, one repeat."""
    results = Results(path=path)
    for problem in problems_of("ode"):
        sizes = list(problem.sizes[:2] if quick else problem.sizes)
        if log:
            log(f"{problem.name}: {', '.join(map(str, sizes))}")
        config = SweepConfig(
            problems=[problem.name],
            modes=["f", *MODE_NAMES],
            sizes=sizes,
            repeats=1 if quick else 3,
            budget=600.0,
            memory=False,
        )
        run_sweep(config, results)
    return results


def _rows(cells: list, problem: str, mode: str, axis: str) -> list[tuple]:
    """``(size, CPU time, element work, error, work ÷ f's)`` of one method, by size."""
    plain = {
        c[axis]: work(c)
        for c in cells
        if c["problem"] == problem and c["mode"] == "f" and c["status"] == "ok"
    }
    rows = []
    for c in cells:
        if c["problem"] != problem or c["mode"] != mode or c["status"] != "ok":
            continue
        elements = work(c)
        error = (c.get("counts") or {}).get("error")
        ratio = elements / plain.get(c[axis], float("nan"))
        rows.append((c[axis], c["time"]["cpu_median"], elements, error, ratio))
    return sorted(rows)


def _axis(problem: str) -> str:
    return "n" if problem == "ode-params" else "m"


def ode_figure(cells: list) -> Figure:
    """Time (top) and element work over plain f's (bottom) against the swept size, a column
    a problem."""
    problems = list(dict.fromkeys(c["problem"] for c in cells))
    with rc():
        figure = Figure(figsize=(5.4 * len(problems), 8.2), layout="constrained")
        axes = figure.subplots(2, len(problems), squeeze=False)
        for column, problem in enumerate(problems):
            axis = _axis(problem)
            panels = (("CPU time (s)", 1), ("element work ÷ f's", 4))
            for row, (label, index) in enumerate(panels):
                ax = axes[row, column]
                for mode in MODE_NAMES:
                    rows = _rows(cells, problem, mode, axis)
                    colour, marker, line = STYLE[mode]
                    ax.plot(
                        [r[0] for r in rows],
                        [r[index] for r in rows],
                        color=colour,
                        marker=marker,
                        linestyle=line,
                        label=PREPARERS[mode][0].removeprefix("odeint, "),
                    )
                style_log_axes(ax, axis, label, f"{problem}: {label}")
                ax.legend()
    return figure


def ode_markdown(cells: list, figure_name: str) -> str:
    """The page: the figure with its caption, and a table a problem."""
    lines = ["# odeint: tape, forward sensitivities and adjoint", ""]
    lines += [f"![{CAPTION}]({figure_name})", "", CAPTION, ""]
    for problem in dict.fromkeys(c["problem"] for c in cells):
        axis = _axis(problem)
        lines += [f"## {problem}", "", f"| {AXIS_LABEL[axis]} | method | CPU time "]
        lines[-1] += "| element work | ÷ f's | error vs rtol = 1e-12 |"
        lines += ["|---:|---|---:|---:|---:|---:|"]
        for mode in MODE_NAMES:
            for size, seconds, elements, error, ratio in _rows(cells, problem, mode, axis):
                lines.append(
                    f"| {size} | {mode.removeprefix('ode:')} | {seconds * 1e3:.1f} ms | "
                    f"{elements:,} | {ratio:.1f} | {error:.1e} |"
                )
        lines.append("")
    return "\n".join(lines)


def write_ode_report(results_path: Path, out: Path) -> Path:
    """Read ``results_path`` and write ``ode.png`` and ``ode.md`` into ``out``."""
    cells = load_results(results_path).cells
    ode_figure(cells).savefig(out / "ode.png", dpi=110)
    page = out / "ode.md"
    page.write_text(ode_markdown(cells, "ode.png"), encoding="utf-8")
    return page
