"""Figures of the sparse sweep: colours against n, time against n, patterns by colour.

They read the results of :func:`~adcompare.bench.sparse.sweep.run_sparse_sweep`
and compute nothing but what they draw.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from adcompare.bench.report.plot_style import rc

__all__ = ["colours_figure", "spy_figure", "time_figure"]

STRATEGY_STYLE = {
    "forward": ("tab:blue", "^", "-"),
    "reverse": ("tab:red", "v", "--"),
    "bidirectional": ("tab:green", "D", "-"),
    "star": ("tab:blue", "^", "-"),
    "acyclic": ("tab:red", "v", "--"),
    "symmetric star": ("tab:purple", "s", "-"),
}
MODE_STYLE = {
    "dense-forward": ("black", "^", "-"),
    "dense-reverse": ("dimgray", "v", "-"),
    "sparse-forward": ("tab:blue", "^", "-"),
    "sparse-reverse": ("tab:red", "v", "-"),
    "bidirectional": ("tab:green", "D", "-"),
    "symmetric-star": ("tab:purple", "s", "-"),
}


def _problems(results: dict) -> list[str]:
    return list(dict.fromkeys(row["problem"] for row in results["colours"]))


def _grid(count: int):
    columns = 2 if count == 4 else min(count, 3)
    rows = -(-count // columns)
    figure = Figure(figsize=(5.2 * columns, 4.3 * rows))
    axes = np.atleast_1d(figure.subplots(rows, columns)).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return figure, axes


def colours_figure(results: dict) -> Figure:
    """Colours (passes) against n per strategy, one panel per problem; dense needs n."""
    problems = _problems(results)
    with rc():
        figure, axes = _grid(len(problems))
        for ax, problem in zip(axes, problems):
            rows = [r for r in results["colours"] if r["problem"] == problem]
            ns = [r["n"] for r in rows]
            for strategy in rows[0]["counts"]:
                color, marker, linestyle = STRATEGY_STYLE[strategy]
                default = [r["counts"][strategy]["largest-first"] for r in rows]
                best = [min(r["counts"][strategy].values()) for r in rows]
                ax.plot(
                    ns, default, color=color, marker=marker, linestyle=linestyle, label=strategy
                )
                if best != default:
                    ax.plot(ns, best, color=color, linestyle=":", label=f"{strategy}, best order")
            ax.plot(ns, ns, color="black", linestyle="--", alpha=0.5, label="dense: n")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.set_xlabel("n, number of inputs")
            ax.set_ylabel("colours = JVPs + VJPs")
            ax.set_title(problem)
            ax.grid(True, alpha=0.3)
            ax.minorticks_off()
            ax.legend(loc="upper left", fontsize=8)
        figure.suptitle(
            "Colours against n (largest-first ordering; dotted: the best of five orderings, "
            "tried up to n = 1024)"
        )
        figure.tight_layout()
    return figure


def time_figure(results: dict) -> Figure:
    """Seconds per Jacobian (or Hessian) against n; dashed: with pattern and colouring."""
    problems = _problems(results)
    with rc():
        figure, axes = _grid(len(problems))
        for ax, problem in zip(axes, problems):
            cells = [c for c in results["cells"] if c["problem"] == problem and "time" in c]
            for mode, (color, marker, _) in MODE_STYLE.items():
                for suffix, linestyle in (("", "-"), ("+prep", "--")):
                    chosen = [c for c in cells if c["mode"] == mode + suffix]
                    if not chosen:
                        continue
                    ax.plot(
                        [c["n"] for c in chosen],
                        [c["time"] for c in chosen],
                        color=color,
                        marker=marker,
                        linestyle=linestyle,
                        label=mode + suffix,
                        markersize=4,
                    )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("n, number of inputs")
            ax.set_ylabel("seconds per call")
            ax.set_title(problem)
            ax.grid(True, alpha=0.3)
            ax.minorticks_off()
        figure.suptitle("Time against n: dense jacfwd / jacrev beside sparse (dashed: + prepare)")
        figure.tight_layout()
        handles, labels = axes[0].get_legend_handles_labels()
        spare = [ax for ax in axes if not ax.get_visible()]
        if spare:  # the legend takes the empty panel's place
            box = spare[0].get_position()
            figure.legend(handles, labels, loc="center", bbox_to_anchor=box, fontsize=9, ncol=2)
        else:
            axes[0].legend(handles, labels, fontsize=7, ncol=2)
    return figure


def spy_figure(results: dict) -> Figure:
    """Each example pattern with its entries coloured by the colour they are read from."""
    examples = results["patterns"]
    with rc():
        figure, axes = _grid(len(examples))
        palette = colormaps["tab20"].colors
        for ax, (title, example) in zip(axes, examples.items()):
            m, n = example["shape"]
            image = np.full((m, n), -1)
            image[example["rows"], example["cols"]] = example["colours"]
            count = int(max(example["colours"], default=0)) + 1
            cmap = ListedColormap(["white", *[palette[i % len(palette)] for i in range(count)]])
            ax.imshow(image + 1, cmap=cmap, vmin=0, vmax=count, interpolation="nearest")
            ax.set_title(f"{title}\n{example['caption']}", fontsize=10)
            ax.set_xlabel("column (input)")
            ax.set_ylabel("row (output)")
        figure.suptitle("Patterns, each non-zero coloured by the seed it is read from")
        figure.tight_layout()
    return figure
