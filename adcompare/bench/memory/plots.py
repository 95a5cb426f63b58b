"""The memory study's figure, one per loop problem, three panels:

- peak memory (tracemalloc) against T on log-log axes, one line per mode,
  with each mode's theory line dashed (forward O(1), full tape O(T),
  blocks and revolve with √T snapshots O(√T), revolve with S snapshots
  O(S)) and the memory budget; the peers (:mod:`~adcompare.bench.memory.peers`),
  if measured, dotted with hollow markers, their memory read by their own
  tools;
- time per gradient against T;
- the memory–time plane at the largest T the modes share: one point per
  mode, the Pareto front joined.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from adcompare.bench.memory import analysis
from adcompare.bench.memory.modes import MEMORY_MODES
from adcompare.bench.memory.peers import ALL_MEMORY_MODES, PEER_MEMORY_MODES
from adcompare.bench.report.plot_style import rc
from adcompare.revolve import schedule

__all__ = ["MEMORY_COLORS", "memory_figure", "save_memory_figures", "schedule_figure"]

MEMORY_COLORS = {
    "f": "black",
    "forward": "tab:red",
    "reverse": "tab:blue",
    "block": "tab:green",
    "revolve:4": "tab:purple",
    "revolve:16": "tab:pink",
    "revolve:64": "tab:brown",
    "revolve:sqrt": "tab:olive",
    "torch:tape": "tab:orange",
    "torch:checkpoint": "tab:orange",
    "jax:scan": "tab:cyan",
    "jax:scan+remat": "tab:cyan",
    "jax:blocks": "tab:cyan",
}
MARKERS = {
    "f": "o",
    "forward": "D",
    "reverse": "^",
    "block": "s",
    # Each revolve budget its own marker, so the four stay apart in grey too.
    "revolve:4": "v",
    "revolve:16": "<",
    "revolve:64": ">",
    "revolve:sqrt": "P",
    "torch:tape": "^",
    "torch:checkpoint": "s",
    "jax:scan": "^",
    "jax:scan+remat": "o",
    "jax:blocks": "s",
}


def _style(mode: str) -> dict:
    style = {"color": MEMORY_COLORS.get(mode), "marker": MARKERS.get(mode, "v")}
    if mode in PEER_MEMORY_MODES:
        style.update(linestyle=":", markerfacecolor="white")
    return style


def memory_figure(cells: list[dict], problem: str, budget: float) -> Figure:
    """The three panels for ``problem`` (see the module docstring)."""
    with rc():
        figure = Figure(figsize=(16, 6.4), layout="constrained")
        memory_ax, time_ax, plane_ax = figure.subplots(1, 3)
        modes = [m for m in ALL_MEMORY_MODES if analysis.ok_cells(cells, problem, m)]
        for mode in modes:
            line = analysis.ok_cells(cells, problem, mode)
            steps = np.array([c["steps"] for c in line])
            label = ALL_MEMORY_MODES[mode].label
            traced = [c for c in line if c["memory"].get("peak_bytes")]
            if traced:
                memory_ax.plot(
                    [c["steps"] for c in traced],
                    [c["memory"]["peak_bytes"] for c in traced],
                    label=label,
                    **_style(mode),
                )
                fit = analysis.fit_memory(line, mode)
                if fit is not None and mode in MEMORY_MODES and MEMORY_MODES[mode].derivative:
                    grid = np.geomspace(steps.min(), max(steps.max(), 1e5), 50)
                    memory_ax.plot(
                        grid,
                        analysis.theory_curve(fit, grid),
                        linestyle="--",
                        linewidth=0.8,
                        color=MEMORY_COLORS.get(mode),
                    )
            time_ax.plot(steps, [c["time"]["median"] for c in line], label=label, **_style(mode))
        memory_ax.axhline(budget, color="grey", linestyle=":", linewidth=1.2)
        memory_ax.text(
            0.98,
            budget,
            f"budget {budget / 2**30:.3g} GiB",
            transform=memory_ax.get_yaxis_transform(),
            ha="right",
            va="bottom",
            color="grey",
        )
        for ax, ylabel, title in (
            (memory_ax, "peak memory (bytes)", _memory_title(modes)),
            (time_ax, "seconds per gradient", "time"),
        ):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("T, number of steps")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{problem}: {title}")
            ax.grid(True, which="major", alpha=0.3)
            ax.minorticks_off()
        handles, labels = memory_ax.get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=9)
        _plane(plane_ax, cells, problem)
    return figure


def _memory_title(modes: list[str]) -> str:
    if any(mode in PEER_MEMORY_MODES for mode in modes):
        return "memory: tracemalloc, theory dashed;\npeers dotted, by their own tools"
    return "memory (tracemalloc): theory dashed"


def _plane(ax, cells: list[dict], problem: str) -> None:
    steps = analysis.largest_common_steps(cells, problem)
    points = [
        (c["mode"], c["memory"]["peak_bytes"], c["time"]["median"])
        for c in cells
        if c["problem"] == problem
        and c["status"] == "ok"
        and c["steps"] == steps
        and c["memory"].get("peak_bytes")
        and ALL_MEMORY_MODES[c["mode"]].derivative
    ]
    if not points:  # plain f only: no gradient to place
        ax.set_title(f"{problem}: no gradient measured, no memory–time plane")
        ax.set_axis_off()
        return
    for mode, memory, seconds in points:
        color = MEMORY_COLORS.get(mode)
        face = "white" if mode in PEER_MEMORY_MODES else color
        ax.scatter(memory, seconds, s=60, marker=MARKERS.get(mode, "v"), c=face, edgecolors=color)
        ax.annotate(mode, (memory, seconds), textcoords="offset points", xytext=(6, 4))
    front = analysis.pareto_front(points)
    ax.plot([p[1] for p in front], [p[2] for p in front], color="grey", linewidth=1, zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("peak memory (bytes)")
    ax.set_ylabel("seconds per gradient")
    ax.set_title(f"{problem}: memory against time at T = {steps:,} (grey: Pareto front)")
    ax.grid(True, which="both", alpha=0.3)


def save_memory_figures(cells: list[dict], out: Path, budget: float) -> list[Path]:
    """One PNG per problem in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for problem in dict.fromkeys(c["problem"] for c in cells):
        path = out / f"memory-{problem}.png"
        memory_figure(cells, problem, budget).savefig(path, dpi=100)
        paths.append(path)
    return paths


def schedule_figure(steps: int, snapshots: int) -> Figure:
    """A checkpointing schedule drawn as it runs: time goes down, the loop's steps across.

    Thin lines are untaped advances, thick red bars the taped reversal of one
    step, blue dots the stored states (a snapshot lives from its dot to its
    free); the reversal walks back from the last step to the first.
    """
    plan = schedule(steps, snapshots)
    with rc():
        figure = Figure(figsize=(7, 6.5), layout="constrained")
        ax = figure.subplots()
        row, held = 0, {}
        for action in plan.actions:
            kind = action[0]
            if kind == "advance":
                ax.plot([action[1], action[2]], [row, row], color="black", linewidth=1.2)
                ax.plot([action[2]], [row], marker=">", color="black", markersize=4)
            elif kind == "reverse":
                ax.plot([action[1] + 1, action[1]], [row, row], color="tab:red", linewidth=4.5)
            elif kind == "snapshot":
                held[action[1]] = row
                ax.plot([action[1]], [row], "o", color="tab:blue", markersize=7)
                continue
            elif kind == "free":
                start = held.pop(action[1])
                ax.plot(
                    [action[1], action[1]], [start, row], color="tab:blue", alpha=0.3, linewidth=6
                )
                continue
            else:
                continue
            row += 1
        for style, label in (
            ({"color": "black", "linewidth": 1.2}, "advance: steps run untaped"),
            ({"color": "tab:red", "linewidth": 4.5}, "reverse one step: taped and swept"),
            ({"color": "tab:blue", "alpha": 0.3, "linewidth": 6}, "a stored state (snapshot)"),
        ):
            ax.plot([], [], label=label, **style)
        ax.legend(loc="lower right", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(-0.5, steps + 0.5)
        ax.set_xticks(range(0, steps + 1, max(1, steps // 10)))
        ax.set_xlabel("state x_i (step i goes from x_i to x_i+1)")
        ax.set_ylabel("time: advances and reversals in order")
        ax.set_title(
            f"revolve: {steps} steps with {snapshots} snapshots: "
            f"{plan.advances} advances, {plan.reversals} reversals"
        )
        ax.grid(True, axis="x", alpha=0.3)
    return figure
