"""A PNG of a tensor's graph drawn with matplotlib: no Graphviz needed.

The layout is a small Sugiyama-style layered drawing: every record gets a
layer one below its deepest input (leaves sit just above their first
user), edges that skip layers are routed through invisible waypoints,
nodes in a layer are ordered to reduce crossings by barycenter sweeps,
and then placed as close to their neighbours as their widths allow. Inputs
are at the top and the output at the bottom, as in :func:`to_dot`.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from adcompare.engines.reverse import Tensor, node_of
from adcompare.graph.dot import COLORS, leaf_label, leaf_names, op_label, shape_text
from adcompare.graph.records import graph_of, stats

__all__ = ["draw"]

FONT_SIZE = 9  # points
CHAR_WIDTH = 0.074  # inches per character at FONT_SIZE, a little generous
LINE_HEIGHT = 0.17  # inches per text line
PAD = 0.14  # inches around the text in a box
GAP = 0.35  # inches between neighbouring boxes
DUMMY_WIDTH = 0.12  # inches a waypoint of a long edge takes up in its layer
LAYER_GAP = 0.55  # inches between the boxes of consecutive layers
HEADER = 0.7  # inches above the top layer, for the title and the counts
FOOTER = 0.55  # inches below the bottom layer, for the legend
MIN_WIDTH = 5.0  # inches: room for the legend however narrow the graph
WEIGHTS = {"op": 50.0, "output": 50.0, "dummy": 5.0, "leaf": 1.0}  # who gives way in a layer


@dataclass(eq=False)
class _Vertex:
    key: object
    lines: list[str] = field(default_factory=list)
    kind: str = "dummy"  # leaf, op, output, dummy
    saved: bool = False
    freed: bool = False
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    preds: list = field(default_factory=list)
    succs: list = field(default_factory=list)
    ports: list = field(default_factory=list)  # where each edge enters its succ, -0.5..0.5

    @property
    def width(self) -> float:
        if self.kind == "dummy":
            return DUMMY_WIDTH
        return max(len(line) for line in self.lines) * CHAR_WIDTH + 2 * PAD

    @property
    def height(self) -> float:
        if self.kind == "dummy":
            return 0.0
        return len(self.lines) * LINE_HEIGHT + 2 * PAD


def _build(tensor: Tensor, names) -> tuple[list[_Vertex], list[tuple]]:
    """Vertices (leaves, ops, output) and edges ``(src, dst, port, n_ports)``."""
    graph = graph_of(tensor)
    names = leaf_names(names)
    vertex = {}
    for leaf in graph.leaves:
        vertex[id(leaf)] = _Vertex(leaf, leaf_label(leaf, names), "leaf")
    for node in graph.nodes:
        lines = op_label(node)
        if node.saved_bytes:
            lines = [*lines, f"saved {node.saved_bytes} bytes"]
        vertex[id(node)] = _Vertex(node, lines, "op", saved=bool(node.saved_bytes))
        vertex[id(node)].freed = node.freed
    output = _Vertex(tensor, ["output", shape_text(tensor.shape)], "output")
    edges = []
    for src, dst, pos in graph.edges:
        # Arrows enter left to right in argument order; constants get no arrow.
        drawn = [i for i, n in enumerate(dst.next) if n is not None]
        edges.append((vertex[id(src)], vertex[id(dst)], drawn.index(pos), len(drawn)))
    if graph.nodes or graph.leaves:
        edges.append((vertex[id(node_of(tensor))], output, 0, 1))
    return [*vertex.values(), output], edges


def _assign_layers(vertices, edges) -> None:
    """Layer every vertex: as early or as late as it can go, whichever is tidier.

    As early as possible (one below its deepest input) keeps parallel
    branches side by side; as late as possible (one above its first user)
    keeps side computations next to where they are used. Leaves always sit
    just above their first user. The layering with fewer layers skipped by
    edges (fewer waypoints to route) wins; a tie goes to the early one.
    """
    inputs = {id(v): [src for src, dst, *_ in edges if dst is v] for v in vertices}
    users = {id(v): [dst for src, dst, *_ in edges if src is v] for v in vertices}
    early = {}
    for v in vertices:  # ops come in execution order, so inputs are done first
        early[id(v)] = 1 + max((early[id(u)] for u in inputs[id(v)]), default=-1)
    late = {}
    for v in reversed(vertices):  # the output is last, users are done first
        late[id(v)] = min((late[id(u)] - 1 for u in users[id(v)]), default=0)

    def settle(layer):
        layer = dict(layer)
        for v in vertices:  # a leaf sits just above its first user
            if v.kind == "leaf" and users[id(v)]:
                layer[id(v)] = min(layer[id(u)] for u in users[id(v)]) - 1
        low = min(layer.values())
        return {k: n - low for k, n in layer.items()}

    def skipped(layer):
        return sum(layer[id(dst)] - layer[id(src)] - 1 for src, dst, *_ in edges)

    early, late = settle(early), settle(late)
    chosen = early if skipped(early) <= skipped(late) else late
    for v in vertices:
        v.layer = chosen[id(v)]


def _split_long_edges(vertices, edges):
    """Route each edge through one waypoint per layer it skips."""
    segments = []  # (src, dst, port) between consecutive layers
    paths = []  # per edge: the vertices it passes through
    for src, dst, pos, n in edges:
        chain = [src]
        for layer in range(src.layer + 1, dst.layer):
            waypoint = _Vertex(("waypoint", len(vertices)), layer=layer)
            vertices.append(waypoint)
            chain.append(waypoint)
        chain.append(dst)
        paths.append((chain, pos, n))
        port = (pos + 0.5) / n - 0.5 if n > 1 else 0.0
        for a, b in itertools.pairwise(chain):
            a.succs.append(b)
            a.ports.append(port if b is dst else 0.0)
            b.preds.append(a)
            segments.append((a, b, a.ports[-1]))
    return segments, paths


def _crossings(layers, segments) -> int:
    index = {id(v): i for layer in layers for i, v in enumerate(layer)}
    by_layer: dict[int, list] = {}
    for a, b, port in segments:
        by_layer.setdefault(a.layer, []).append((index[id(a)], index[id(b)] + 0.4 * port))
    total = 0
    for pairs in by_layer.values():
        for i, (a1, b1) in enumerate(pairs):
            for a2, b2 in pairs[i + 1 :]:
                total += (a1 - a2) * (b1 - b2) < 0
    return total


def _order(vertices, segments) -> list[list[_Vertex]]:
    """Order each layer to reduce edge crossings (barycenter heuristic)."""
    depth = max(v.layer for v in vertices) + 1
    layers: list[list[_Vertex]] = [[] for _ in range(depth)]
    for v in vertices:
        layers[v.layer].append(v)

    def sweep(layer_indices, downwards: bool):
        for li in layer_indices:
            position = {id(v): i for layer in layers for i, v in enumerate(layer)}
            current = layers[li]

            def key(item, position=position):
                i, v = item
                if downwards:
                    near = [position[id(u)] for u in v.preds]
                else:  # an input sits left or right as it enters its op's box
                    near = [position[id(u)] + 0.4 * p for u, p in zip(v.succs, v.ports)]
                return sum(near) / len(near) if near else float(i)

            layers[li] = [v for _, v in sorted(enumerate(current), key=key)]

    best = [list(layer) for layer in layers]
    best_count = _crossings(layers, segments)
    for _ in range(8):
        sweep(range(1, depth), downwards=True)
        sweep(range(depth - 2, -1, -1), downwards=False)
        count = _crossings(layers, segments)
        if count < best_count:
            best, best_count = [list(layer) for layer in layers], count
    return best


def _fit(desired: list[float], widths: list[float], weights: list[float]) -> list[float]:
    """Positions closest (weighted least squares) to ``desired`` keeping order and spacing.

    With offsets s_i (half widths plus gaps, accumulated), x_i = y_i + s_i
    where y must be non-decreasing: isotonic regression by pooling adjacent
    violators. Heavy vertices (ops) move less than light ones (leaves).
    """
    offsets = [0.0]
    for left, right in itertools.pairwise(widths):
        offsets.append(offsets[-1] + left / 2 + GAP + right / 2)
    blocks: list[list[float]] = []  # [mean, weight, count]
    for d, s, w in zip(desired, offsets, weights):
        blocks.append([d - s, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    ys = [m for m, _, n in blocks for _ in range(n)]
    return [y + s for y, s in zip(ys, offsets)]


def _desired_x(v: _Vertex) -> float:
    """Where a vertex would like to be: over the ports it feeds, under its inputs.

    Leaves follow their users and do not pull on them, so a chain of ops
    with a parameter fed in at each step stays straight.
    """
    if v.kind == "leaf":  # over the port it enters
        below = [u.x + p * u.width * 0.6 for u, p in zip(v.succs, v.ports)]
    else:
        below = [u.x for u in v.succs]
    above = [u.x for u in v.preds if u.kind != "leaf" or v.kind == "dummy"]
    if v.kind == "leaf" or not (above or below):
        near = below or above
    elif above:
        near = above + below
    else:
        near = below
    return sum(near) / len(near) if near else v.x


def _place(layers) -> None:
    for layer in layers:
        widths = [v.width for v in layer]
        xs = _fit([0.0] * len(layer), widths, [1.0] * len(layer))
        shift = (xs[0] + xs[-1]) / 2
        for v, x in zip(layer, xs):
            v.x = x - shift
    order = list(range(1, len(layers))) + list(range(len(layers) - 2, -1, -1))
    for _ in range(16):
        for li in order:
            layer = layers[li]
            desired = []
            for v in layer:
                desired.append(_desired_x(v))
            weights = [WEIGHTS[v.kind] for v in layer]
            for v, x in zip(layer, _fit(desired, [v.width for v in layer], weights)):
                v.x = x


def draw(tensor: Tensor, path, names=None, title: str | None = None, dpi: int = 120):
    """Render the graph that computed ``tensor`` as a PNG at ``path``; returns the path.

    Leaves are blue, op records grey (orange-edged while they hold values
    for the backward pass, with the bytes they hold), the output green.
    Arrows run from each input to the op that uses it, and enter the op's
    box left to right in argument order. ``names`` maps names to leaf
    tensors, as in :func:`to_dot`. Readable up to about 50 records.
    """
    # A bare Figure renders with Agg and leaves pyplot's backend alone.
    from matplotlib.figure import Figure

    vertices, edges = _build(tensor, names)
    _assign_layers(vertices, edges)
    segments, paths = _split_long_edges(vertices, edges)
    layers = _order(vertices, segments)
    _place(layers)
    frame = _Frame.around(vertices, layers)

    fig = Figure(figsize=(frame.width, frame.top - frame.bottom), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(frame.left, frame.right)
    ax.set_ylim(frame.bottom, frame.top)
    ax.set_axis_off()
    _draw_edges(ax, paths)
    _draw_boxes(ax, [v for v in vertices if v.kind != "dummy"])
    _draw_heading(ax, frame, title or "computational graph", stats(tensor))
    _draw_legend(ax)
    path = os.fspath(path)
    fig.savefig(path, format="png", dpi=dpi)
    return path


@dataclass(frozen=True)
class _Frame:
    """The drawing's extent in inches, with room for the heading and the legend."""

    left: float
    right: float
    bottom: float
    top: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def center(self) -> float:
        return (self.left + self.right) / 2

    @classmethod
    def around(cls, vertices, layers) -> _Frame:
        """Stack the layers top down (setting each vertex's ``y``) and frame the result."""
        heights = [max((v.height for v in layer), default=0.0) for layer in layers]
        ys, y = [], 0.0
        for height, layer in zip(heights, layers):
            ys.append(y - height / 2)
            for v in layer:
                v.y = ys[-1]
            y -= height + LAYER_GAP
        left = min(v.x - v.width / 2 for v in vertices) - 0.3
        right = max(v.x + v.width / 2 for v in vertices) + 0.3
        half = max(right - left, MIN_WIDTH) / 2
        center = (left + right) / 2
        top = ys[0] + heights[0] / 2 + HEADER
        bottom = ys[-1] - heights[-1] / 2 - FOOTER
        return cls(center - half, center + half, bottom, top)


def _draw_edges(ax, paths) -> None:
    """Each edge as a line through its waypoints, with an arrow into its port."""
    from matplotlib.patches import FancyArrowPatch

    for chain, pos, n in paths:
        src, dst = chain[0], chain[-1]
        points = [(src.x, src.y - src.height / 2)]
        points += [(v.x, v.y) for v in chain[1:-1]]
        end_x = dst.x + (dst.width * 0.6 * ((pos + 0.5) / n - 0.5) if n > 1 else 0.0)
        points.append((end_x, dst.y + dst.height / 2))
        if len(points) > 2:
            xs, ys = zip(*points[:-1])
            ax.plot(xs, ys, color="0.35", linewidth=1.0, zorder=1)
        ax.add_patch(
            FancyArrowPatch(
                points[-2],
                points[-1],
                arrowstyle="-|>",
                mutation_scale=11,
                color="0.35",
                linewidth=1.0,
                shrinkA=0,
                shrinkB=0,
                zorder=1,
            )
        )


def _draw_boxes(ax, vertices) -> None:
    """Each leaf, op record and the output as a rounded box with its label."""
    from matplotlib.patches import FancyBboxPatch

    for v in vertices:
        box = FancyBboxPatch(
            (v.x - v.width / 2, v.y - v.height / 2),
            v.width,
            v.height,
            boxstyle="round,pad=0,rounding_size=0.08",
            facecolor=COLORS[v.kind],
            edgecolor=COLORS["saved"] if v.saved else "0.3",
            linewidth=2.2 if v.saved else 1.0,
            linestyle="--" if v.freed else "-",
            zorder=2,
        )
        ax.add_patch(box)
        ax.text(
            v.x,
            v.y,
            "\n".join(v.lines),
            ha="center",
            va="center",
            fontsize=FONT_SIZE,
            linespacing=1.25,
            zorder=3,
            fontweight="normal",
        )


def _draw_heading(ax, frame: _Frame, title: str, summary) -> None:
    """The title, and a line counting records, leaves, edges and the bytes saved."""
    saved = (
        f"{summary.saved_bytes} bytes saved for backward"
        if summary.saved_bytes
        else ("graph freed by backward" if summary.freed else "nothing saved for backward")
    )
    ax.text(
        frame.center, frame.top - 0.25, title, ha="center", va="center", fontsize=11, weight="bold"
    )
    ax.text(
        frame.center,
        frame.top - 0.52,
        f"{summary.nodes} op records · {summary.leaves} leaves · {summary.edges} edges · {saved}",
        ha="center",
        va="center",
        fontsize=FONT_SIZE,
        color="0.25",
    )


def _draw_legend(ax) -> None:
    """What the colours and the orange edge mean, along the bottom."""
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=COLORS["leaf"], edgecolor="0.3", label="leaf tensor"),
        Patch(facecolor=COLORS["op"], edgecolor="0.3", label="op record (grad_fn)"),
        Patch(
            facecolor="white", edgecolor=COLORS["saved"], linewidth=2.2, label="holds saved values"
        ),
        Patch(facecolor=COLORS["output"], edgecolor="0.3", label="output"),
    ]
    ax.legend(
        handles=handles,
        loc="lower center",
        ncol=4,
        fontsize=FONT_SIZE - 1,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
        handlelength=1.2,
        columnspacing=1.0,
    )
