"""Graphviz DOT text for a tensor's graph, in the style of torchviz.

Leaf tensors are blue boxes, op records grey boxes named as PyTorch names
them (``MulBackward``), the output a green box, and each array saved for
the backward pass an orange ellipse joined to the records that keep it.
Edges run from inputs to the ops that use them, so the picture reads from
the inputs at the top to the output at the bottom. Nothing here needs the
Graphviz program; render the text with ``dot -Tpng`` where it is installed.
"""

from __future__ import annotations

import numpy as np

from adcompare.engines.reverse import AccumulateGrad, Node, Tensor, node_of
from adcompare.graph.records import Graph, graph_of
from adcompare.ops.registry import raw, shape_of

__all__ = ["leaf_names", "shape_text", "to_dot"]

COLORS = {
    "leaf": "#add8e6",  # Graphviz's lightblue
    "op": "#d3d3d3",  # lightgrey
    "output": "#caff70",  # darkolivegreen1
    "saved": "#ffa500",  # orange
}


def shape_text(shape) -> str:
    """A shape as people write it: ``scalar``, ``3``, ``4×8``.

    >>> shape_text(()), shape_text((3,)), shape_text((4, 8))
    ('scalar', '(3,)', '(4, 8)')
    """
    shape = tuple(shape)
    return "scalar" if not shape else str(shape)


def leaf_names(names) -> dict[int, str]:
    """``{id(tensor): name}`` from a ``{name: tensor}`` mapping (or ``None``)."""
    if not names:
        return {}
    return {id(t): str(name) for name, t in dict(names).items()}


def value_text(value) -> str:
    """A one-element value as a short number, larger ones by their shape."""
    plain = np.asarray(raw(value))
    if plain.size == 1:
        return f"{plain.item():.4g}"
    return shape_text(plain.shape)


def leaf_label(leaf: AccumulateGrad, names: dict[int, str]) -> list[str]:
    """The lines of a leaf's label: its name (or ``leaf``) and shape or value."""
    tensor = leaf.variable
    name = names.get(id(tensor), "leaf")
    if tensor.size == 1:
        return [f"{name} = {value_text(tensor.data)}"]
    return [name, shape_text(tensor.shape)]


def op_label(node: Node) -> list[str]:
    """The lines of an op record's label: PyTorch's name, the op and its output shape."""
    lines = [node.name, f"{node.op.name} → {shape_text(node.out_shape)}"]
    if node.freed:
        lines.append("freed")
    return lines


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(lines: list[str]) -> str:
    return _quote("\n".join(lines)).replace("\n", "\\n")


def _ids(graph: Graph) -> dict[int, str]:
    ids = {id(leaf): f"leaf{i}" for i, leaf in enumerate(graph.leaves)}
    ids.update({id(node): f"op{node.seq}" for node in graph.nodes})
    return ids


def to_dot(tensor: Tensor, names=None, show_saved: bool = True) -> str:
    """DOT text of the graph that computed ``tensor``.

    ``names`` maps names to leaf tensors (torchviz's ``params``) to label
    them; ``show_saved`` adds a node for each array kept for backward.

    >>> import adcompare as ad
    >>> x = ad.Tensor(2.0, requires_grad=True)
    >>> print(to_dot(x * x, names={"x": x}))
    digraph adcompare {
        graph [rankdir=TB, fontname="Helvetica"];
        node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=10];
        "leaf0" [label="x = 2", fillcolor="#add8e6"];
        "op..." [label="MulBackward\\nmultiply → scalar", fillcolor="#d3d3d3"];
        "saved0" [label="saved x\\n8 bytes", fillcolor="#ffa500", shape=ellipse, style=filled];
        "output" [label="output\\nscalar", fillcolor="#caff70"];
        "leaf0" -> "op...";
        "leaf0" -> "op...";
        "saved0" -> "op..." [dir=none, style=dashed];
        "op..." -> "output";
    }
    """
    graph = graph_of(tensor)
    names = leaf_names(names)
    ids = _ids(graph)
    lines = [
        "digraph adcompare {",
        '    graph [rankdir=TB, fontname="Helvetica"];',
        '    node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=10];',
    ]
    for leaf in graph.leaves:
        label = _label(leaf_label(leaf, names))
        lines.append(f'    "{ids[id(leaf)]}" [label={label}, fillcolor="{COLORS["leaf"]}"];')
    for node in graph.nodes:
        label = _label(op_label(node))
        lines.append(f'    "{ids[id(node)]}" [label={label}, fillcolor="{COLORS["op"]}"];')
    saved = graph.saved() if show_saved else []
    leaf_data = {id(raw(leaf.variable.data)): leaf for leaf in graph.leaves}
    for i, item in enumerate(saved):
        leaf = leaf_data.get(id(item.value))
        what = names.get(id(leaf.variable), "leaf") if leaf is not None else value_text(item.value)
        label = _label([f"saved {what}", f"{item.nbytes} bytes"])
        lines.append(
            f'    "saved{i}" [label={label}, fillcolor="{COLORS["saved"]}", shape=ellipse, '
            "style=filled];"
        )
    output_label = _label(["output", shape_text(shape_of(tensor))])
    lines.append(f'    "output" [label={output_label}, fillcolor="{COLORS["output"]}"];')
    for source, node, _ in graph.edges:
        lines.append(f'    "{ids[id(source)]}" -> "{ids[id(node)]}";')
    for i, item in enumerate(saved):
        for holder in item.holders:
            lines.append(f'    "saved{i}" -> "{ids[id(holder)]}" [dir=none, style=dashed];')
    if graph.nodes or graph.leaves:
        lines.append(f'    "{ids[id(node_of(tensor))]}" -> "output";')
    lines.append("}")
    return "\n".join(lines)
