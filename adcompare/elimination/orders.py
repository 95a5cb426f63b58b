"""Elimination orders, and the elimination that follows one to the Jacobian.

=====================  ==============================================================
``forward``            intermediates in the order they were computed: forward mode
``reverse``            the opposite order: reverse mode
``markowitz``          next, the vertex whose elimination costs fewest multiplications
                       now (for scalar edges: in-degree × out-degree, Markowitz's
                       degree); a tie goes to the vertex computed first
``reverse-markowitz``  the same cost, a tie going to the vertex computed last
``min-fill``           next, the vertex whose elimination creates fewest new edges; a
                       tie goes to the cheaper, then to the one computed first
``optimal``            the order of fewest multiplications, found by exact search over
                       the sets of eliminated vertices (at most :data:`MAX_EXACT`
                       intermediates: the search visits up to 2ⁿ sets)
=====================  ==============================================================

A user's own order is a sequence of vertex numbers or labels
(:attr:`LinearGraph.labels`) naming each intermediate once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from adcompare.elimination.graph import LinearGraph, Step

__all__ = ["MAX_EXACT", "ORDERS", "Elimination", "eliminate", "optimal_order"]

#: The most intermediates the exact search takes on.
MAX_EXACT = 20


@dataclass(frozen=True)
class Elimination:
    """The outcome of eliminating every intermediate of a graph in one order.

    ``order`` lists the vertices in the order eliminated, ``steps`` what each
    cost; ``jacobian`` is the output's Jacobian as an ``m × n`` matrix
    (``None`` when only the structure was eliminated).
    """

    order: tuple[int, ...]
    steps: tuple[Step, ...]
    jacobian: np.ndarray | None

    @property
    def multiplications(self) -> int:
        """The multiplications of every step."""
        return sum(step.multiplications for step in self.steps)

    @property
    def additions(self) -> int:
        """The additions of every step."""
        return sum(step.additions for step in self.steps)


def _cheapest(graph: LinearGraph, last_first: bool) -> int:
    sign = -1 if last_first else 1
    return min(graph.intermediates, key=lambda v: (graph.vertex_cost(v)[0], sign * v))


def _fewest_fill(graph: LinearGraph) -> int:
    def key(v):
        mults, fill = graph.vertex_cost(v)
        return fill, mults, v

    return min(graph.intermediates, key=key)


#: The named orders: each picks the next vertex from the graph as it is now.
ORDERS: dict[str, Callable[[LinearGraph], int] | None] = {
    "forward": lambda graph: graph.intermediates[0],
    "reverse": lambda graph: graph.intermediates[-1],
    "markowitz": lambda graph: _cheapest(graph, last_first=False),
    "reverse-markowitz": lambda graph: _cheapest(graph, last_first=True),
    "min-fill": _fewest_fill,
    "optimal": None,
}


def eliminate(graph: LinearGraph, order: str | Sequence = "markowitz") -> Elimination:
    """Eliminate every intermediate of ``graph`` (a copy: the graph is kept) in ``order``.

    >>> from adcompare.elimination.blocks import Block
    >>> d, scalar = Block.diagonal_of(np.ones(3)), Block.diagonal_of(np.ones(1))
    >>> wide, narrow = Block.matrix_of(np.ones((3, 1))), Block.matrix_of(np.ones((1, 3)))
    >>> g = LinearGraph.chain([d, narrow, scalar, wide, d])  # 3 → 3 → 1 → 1 → 3 → 3
    >>> [eliminate(g, o).multiplications for o in ("forward", "reverse", "markowitz")]
    [24, 24, 18]
    >>> eliminate(g, ["v4", 3, 2, 1]).jacobian.tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    work = graph.copy(values=_has_values(graph))
    pick = chooser(graph, order)
    steps = []
    while work.intermediates:
        steps.append(work.eliminate_vertex(pick(work)))
    return Elimination(tuple(s.eliminated for s in steps), tuple(steps), _jacobian(work))


def chooser(graph: LinearGraph, order) -> Callable[[LinearGraph], int]:
    """What picks the next vertex of ``order`` (a name or a sequence) from the graph as it is."""
    if isinstance(order, str):
        if order not in ORDERS:
            raise ValueError(
                f"unknown elimination order {order!r}; the orders are {', '.join(ORDERS)}, "
                "or a sequence of vertices naming every intermediate once"
            )
        if order != "optimal":
            return ORDERS[order]
        order = optimal_order(graph)[0]
    vertices = iter(_as_vertices(graph, order))
    return lambda _graph: next(vertices)


def _as_vertices(graph: LinearGraph, order: Sequence) -> list[int]:
    vertices = [graph.labels.index(v) if isinstance(v, str) else int(v) for v in order]
    if sorted(vertices) != graph.intermediates:
        raise ValueError(
            f"an elimination order names every intermediate once; this graph's are "
            f"{graph.intermediates} ({', '.join(graph.labels[v] for v in graph.intermediates)}), "
            f"and the order given names {vertices}"
        )
    return vertices


def _has_values(graph: LinearGraph) -> bool:
    return all(block.values is not None for block in graph.edges.values())


def _jacobian(graph: LinearGraph) -> np.ndarray | None:
    shape = (graph.sizes[graph.output], graph.sizes[graph.input])
    block = graph.edges.get((graph.input, graph.output))
    if block is None:
        return np.zeros(shape) if _has_values(graph) else None
    return None if block.values is None else block.dense()


def optimal_order(graph: LinearGraph) -> tuple[list[int], int]:
    """``(order, multiplications)``: a vertex elimination order of fewest multiplications.

    Exact: after eliminating a set of vertices the graph is the same whatever
    the order they went in, so the search is a shortest path over those sets
    (A*, from the empty set to the set of all intermediates, each step
    weighted by what it multiplies, the estimate of the rest one
    multiplication per intermediate still joined to both sides). The first
    full set taken from the queue is reached by a cheapest order. A set
    reached more dearly than before, or whose estimate exceeds the best
    heuristic order, is not followed. Structures' products are counted once
    per pair of structures.

    >>> from adcompare.elimination.blocks import Block
    >>> d, scalar = Block.diagonal_of(np.ones(3)), Block.diagonal_of(np.ones(1))
    >>> wide, narrow = Block.matrix_of(np.ones((3, 1))), Block.matrix_of(np.ones((1, 3)))
    >>> optimal_order(LinearGraph.chain([d, narrow, scalar, wide, d]))
    ([1, 2, 4, 3], 18)
    """
    intermediates = graph.intermediates
    if len(intermediates) > MAX_EXACT:
        raise ValueError(
            f"the exact search takes graphs of at most {MAX_EXACT} intermediates (this one has "
            f"{len(intermediates)}): its cost doubles with each; use order='markowitz' instead"
        )
    start = graph.copy(values=False)
    bound = min(eliminate(start, name).multiplications for name in _HEURISTICS)
    cheapest = {frozenset(): 0}
    rest = _still_to_pay if _each_costs_one(start) else (lambda _graph: 0)
    queue = [(rest(start), 0, (), start)]
    while queue:
        _, spent, order, state = heapq.heappop(queue)
        done = frozenset(order)
        if spent > cheapest[done]:
            continue  # reached more cheaply since it was queued
        if not state.intermediates:
            return list(order), spent
        for vertex in state.intermediates:
            after = state.copy()
            total = spent + after.eliminate_vertex(vertex).multiplications
            key = done | {vertex}
            estimate = total + rest(after)
            if estimate <= bound and total < cheapest.get(key, total + 1):
                cheapest[key] = total
                heapq.heappush(queue, (estimate, total, (*order, vertex), after))
    raise AssertionError("the search bound by a heuristic order always reaches an order")


def _each_costs_one(graph: LinearGraph) -> bool:
    """Whether every intermediate joined to the input and the output will cost at least
    one multiplication when it goes: true when every intermediate is one number and
    no edge is structurally zero (then no product and no sum ever makes one zero)."""
    scalars = all(graph.sizes[v] == 1 for v in graph.intermediates)
    return scalars and all(block.nnz > 0 for block in graph.edges.values())


def _still_to_pay(graph: LinearGraph) -> int:
    """A lower bound on what eliminating the rest costs, where :func:`_each_costs_one`
    holds: one multiplication per intermediate on a path from the input to the output
    (eliminating a vertex joins its predecessors to its successors, so such paths stay)."""
    ahead = _reach(graph, graph.input, graph.succs)
    behind = _reach(graph, graph.output, graph.preds)
    return len(ahead & behind) - 2 * (graph.output in ahead)


def _reach(graph: LinearGraph, start: int, step: dict) -> set:
    seen, todo = {start}, [start]
    while todo:
        for w in step[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


#: The heuristic orders whose best count bounds the exact search.
_HEURISTICS = ("forward", "reverse", "markowitz", "reverse-markowitz", "min-fill")
