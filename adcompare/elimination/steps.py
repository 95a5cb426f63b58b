"""An elimination written out step by step, as ``adcompare explain --eliminate`` prints it."""

from __future__ import annotations

from collections.abc import Sequence

from adcompare.elimination.graph import LinearGraph
from adcompare.elimination.orders import MAX_EXACT, ORDERS, chooser, eliminate
from adcompare.elimination.picture import edge_text

__all__ = ["describe"]

#: What each named order does, in one line.
RULES = {
    "forward": "intermediates in the order they were computed (forward mode)",
    "reverse": "intermediates in the opposite order (reverse mode)",
    "markowitz": "the vertex cheapest to eliminate now; a tie goes to the one computed first",
    "reverse-markowitz": "the vertex cheapest to eliminate now; a tie goes to the one "
    "computed last",
    "min-fill": "the vertex whose elimination adds fewest new edges; then the cheaper",
    "optimal": "an order of fewest multiplications, found by exact search",
}


def _vertex(graph: LinearGraph, v: int) -> str:
    name, _, op = graph.labels[v].partition(" = ")
    return f"{name} ({op})" if op else name


def _names(graph: LinearGraph, vertices) -> str:
    return ", ".join(graph.labels[v].split(" = ")[0] for v in sorted(vertices)) or "–"


def describe(graph: LinearGraph, order: str | Sequence = "markowitz") -> str:
    """The graph's edges, each step of the elimination in ``order``, and every order's total.

    >>> import numpy as np, adcompare as ad
    >>> from adcompare.elimination import linearize
    >>> print(describe(linearize(lambda x: ad.sin(x) * x, np.ones(2)), "reverse"))
    The linearized graph: 3 vertices, 3 edges
      x → v1 (sin): diag 2
      x → v2 (multiply): diag 2
      v1 (sin) → v2 (multiply): diag 2
    <BLANKLINE>
    Vertex elimination, reverse: intermediates in the opposite order (reverse mode)
    step  eliminate  from  to  multiplications  additions  new edges
    ----  ---------  ----  --  ---------------  ---------  ---------
    1     v1 = sin   x     v2                2          2          0
    <BLANKLINE>
    reverse: 2 multiplications, 2 additions
    every order: forward 2, reverse 2, markowitz 2, reverse-markowitz 2, min-fill 2, optimal 2
    """
    lines = [f"The linearized graph: {len(graph.sizes)} vertices, {len(graph.edges)} edges"]
    for (i, k), block in sorted(graph.edges.items(), key=lambda item: (item[0][1], item[0][0])):
        lines.append(f"  {_vertex(graph, i)} → {_vertex(graph, k)}: {edge_text(block)}")
    name = order if isinstance(order, str) else "your order"
    lines += ["", f"Vertex elimination, {name}: {RULES.get(name, 'the vertices as given')}"]
    rows = [("step", "eliminate", "from", "to", "multiplications", "additions", "new edges")]
    work, pick = graph.copy(values=False), chooser(graph, order)
    while work.intermediates:
        vertex = pick(work)
        preds, succs = set(work.preds[vertex]), set(work.succs[vertex])
        step = work.eliminate_vertex(vertex)
        rows.append(
            (
                str(len(rows)),
                graph.labels[vertex],
                _names(graph, preds),
                _names(graph, succs),
                f"{step.multiplications:,}",
                f"{step.additions:,}",
                str(step.fill),
            )
        )
    lines += _table(rows)
    done = eliminate(graph, order)
    totals = ", ".join(f"{o} {eliminate(graph, o).multiplications:,}" for o in _within_reach(graph))
    lines += [
        "",
        f"{name}: {done.multiplications:,} multiplications, {done.additions:,} additions",
        f"every order: {totals}",
    ]
    return "\n".join(lines)


def _within_reach(graph: LinearGraph) -> list[str]:
    small = len(graph.intermediates) <= MAX_EXACT
    return [o for o in ORDERS if o != "optimal" or small]


def _table(rows) -> list[str]:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    numeric = {4, 5, 6}

    def line(row):
        cells = [
            cell.rjust(width) if c in numeric and row is not rows[0] else cell.ljust(width)
            for c, (cell, width) in enumerate(zip(row, widths))
        ]
        return "  ".join(cells).rstrip()

    return [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in rows[1:])]
