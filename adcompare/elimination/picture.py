"""The linearized graph drawn once per order, each intermediate numbered by when it goes.

Vertices sit in layers, top to bottom, one below their deepest predecessor;
each edge is labelled with its block's structure (``diag 4``, ``1×4``,
``scalar``). An intermediate's red number is its step in the order, the
figure right of it what that step multiplies; the panel's title gives the
order's total. Drawn with matplotlib's object interface (no pyplot, no display).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adcompare.elimination.graph import LinearGraph
from adcompare.elimination.orders import eliminate

__all__ = ["draw_order", "draw_orders", "edge_text"]

COLORS = {"input": "#cfe2f3", "intermediate": "#fff2cc", "output": "#d9ead3"}


def edge_text(block) -> str:
    """How an edge's block is written on the picture.

    >>> import numpy as np
    >>> from adcompare.elimination.blocks import Block
    >>> edge_text(Block.diagonal_of(np.ones(4))), edge_text(Block.matrix_of(np.ones((1, 4))))
    ('diag 4', '1×4')
    """
    if block.kind == "scalar":
        return "scalar"
    if block.kind == "diagonal":
        return f"diag {block.shape[0]}"
    rows, cols = block.shape
    return f"{rows}×{cols}" + (" sparse" if block.kind == "sparse" else "")


def _positions(graph: LinearGraph) -> dict[int, tuple[float, float]]:
    layer = {}
    for v in sorted(graph.preds):  # computation order: predecessors come first
        layer[v] = 1 + max((layer[p] for p in graph.preds[v]), default=-1)
    rows: dict[int, list[int]] = {}
    for v, depth in layer.items():
        rows.setdefault(depth, []).append(v)
    positions = {}
    for depth, members in rows.items():
        for slot, v in enumerate(members):
            positions[v] = (slot - (len(members) - 1) / 2, -depth)
    return positions


def _number(ax, x: float, y: float, label: str, step: int, cost: int) -> None:
    """The step's number left of a vertex's box, what it multiplies right of it."""
    width = 0.045 * len(label)  # the box grows with its label
    ax.text(
        x - width - 0.16,
        y + 0.12,
        str(step),
        ha="center",
        va="center",
        fontsize=9,
        color="white",
        weight="bold",
        bbox={"boxstyle": "circle", "facecolor": "#c0392b", "edgecolor": "none"},
    )
    ax.text(x + width + 0.16, y, f"{cost:,}×", ha="left", va="center", fontsize=8, color="#c0392b")


def draw_order(ax, graph: LinearGraph, order, title: str = "") -> None:
    """Draw ``graph`` on the matplotlib axes ``ax``, numbered by the steps of ``order``."""
    done = eliminate(graph, order)
    step = {v: i for i, v in enumerate(done.order, start=1)}
    cost = {s.eliminated: s.multiplications for s in done.steps}
    where = _positions(graph)
    for (i, k), block in sorted(graph.edges.items()):
        (x0, y0), (x1, y1) = where[i], where[k]
        # an edge that skips layers bends to the left, clear of the vertices it passes
        rad = 0.0 if abs(y1 - y0) <= 1 and x0 == x1 else 0.25
        ax.annotate(
            "",
            xy=(x1, y1 + 0.22),
            xytext=(x0, y0 - 0.22),
            arrowprops={
                "arrowstyle": "-|>",
                "color": "0.4",
                "shrinkA": 0,
                "shrinkB": 0,
                "connectionstyle": f"arc3,rad={rad}",
            },
        )
        label_x = (x0 + x1) / 2 + rad * (y1 - y0) / 2 + (0.05 if rad == 0 else -0.05)
        ax.text(
            label_x,
            (y0 + y1) / 2 - rad * (x1 - x0) / 2,
            edge_text(block),
            fontsize=7,
            color="0.3",
            ha="left" if rad == 0 else "right",
        )
    for v, (x, y) in where.items():
        kind = "input" if v == graph.input else "output" if v == graph.output else "intermediate"
        label = graph.labels[v].split(" = ")[-1]
        ax.text(
            x,
            y,
            f"{label}\n{graph.sizes[v]}",
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": COLORS[kind], "edgecolor": "0.3"},
        )
        if v in step:
            _number(ax, x, y, label, step[v], cost[v])
    name = order if isinstance(order, str) else "your order"
    ax.set_title(f"{title or name}\n{done.multiplications:,} multiplications", fontsize=10)
    xs = [x for x, _ in where.values()]
    ax.set_xlim(min(xs) - 1.4, max(xs) + 0.9)
    ax.set_ylim(min(y for _, y in where.values()) - 0.6, 0.6)
    ax.axis("off")


def draw_orders(
    graph: LinearGraph,
    orders: Sequence = ("forward", "reverse", "markowitz"),
    path: str | Path | None = None,
    titles: Sequence[str] | None = None,
    dpi: int = 110,
):
    """A figure with one panel per order: the graph, each intermediate numbered by its step.

    ``path`` writes it as a PNG too. Returns the matplotlib ``Figure``.

    >>> import numpy as np, adcompare as ad
    >>> from adcompare.elimination import linearize
    >>> figure = draw_orders(linearize(lambda x: ad.sin(x) * x, np.ones(3)))
    >>> len(figure.axes)
    3
    """
    from matplotlib.figure import Figure

    layers = max(y for _, y in _positions(graph).values()) - min(
        y for _, y in _positions(graph).values()
    )
    figure = Figure(figsize=(3.0 * len(orders), 0.8 * (layers + 2)), layout="constrained")
    axes = figure.subplots(1, len(orders), squeeze=False)[0]
    for index, (ax, order) in enumerate(zip(axes, orders)):
        draw_order(ax, graph, order, titles[index] if titles else "")
    if path is not None:
        figure.savefig(path, format="png", dpi=dpi)
    return figure
