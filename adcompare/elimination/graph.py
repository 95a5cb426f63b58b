"""The linearized computational graph, and the eliminations that shrink it to the Jacobian.

Vertices are values (numbered in the order they were computed: the input
first, the output last), edges carry local partial derivatives as
:class:`~adcompare.elimination.blocks.Block`. Eliminating an intermediate
vertex ``j`` joins every predecessor ``i`` to every successor ``k`` with
``B_kj · B_ji``, added to the edge ``i → k`` where there is one
(Griewank and Walther, *Evaluating Derivatives*, 2nd ed., §9.2). Once no
intermediate is left, the edge from the input to the output is the
Jacobian, whatever the order; only the number of multiplications depends on it.

Edge elimination (§10.1) is the finer step: *front* elimination of ``i → j``
joins ``i`` to ``j``'s successors and removes the edge; *back* elimination of
``j → k`` joins ``j``'s predecessors to ``k`` and removes the edge. A vertex
left without predecessors (front) or successors (back) goes too. Eliminating
a vertex is front-eliminating each of its in-edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adcompare.elimination.blocks import Block, product, product_multiplications, total

__all__ = ["LinearGraph", "Step"]


@dataclass(frozen=True)
class Step:
    """What one elimination did: ``vertex`` (or edge) eliminated, its multiplications and
    additions, and the edges it created (fill-in)."""

    eliminated: int | tuple[int, int]
    multiplications: int
    additions: int
    fill: int


@dataclass
class LinearGraph:
    """Vertices ``0 .. len(sizes) - 1`` in computation order; ``edges[(i, k)]`` is ``∂v_k/∂v_i``.

    ``labels`` names each vertex (``x``, ``v3 = tanh``), ``input`` and
    ``output`` are the independent and dependent vertices; every other vertex
    still in the graph is an intermediate not yet eliminated. ``shapes``
    holds the input's and the output's shapes (``None``: flat).

    >>> import numpy as np
    >>> two, three = Block.diagonal_of(np.array([2.0])), Block.diagonal_of(np.array([3.0]))
    >>> g = LinearGraph.chain([two, three])
    >>> g.eliminate_vertex(1), g.edges[(0, 2)].values
    (Step(eliminated=1, multiplications=1, additions=0, fill=1), array([6.]))
    """

    sizes: list[int]
    labels: list[str]
    input: int
    output: int
    edges: dict[tuple[int, int], Block]
    preds: dict[int, set[int]] = field(default_factory=dict)
    succs: dict[int, set[int]] = field(default_factory=dict)
    shapes: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    def __post_init__(self):
        if not self.preds:
            self.preds = {v: set() for v in range(len(self.sizes))}
            self.succs = {v: set() for v in range(len(self.sizes))}
            for i, k in self.edges:
                self.succs[i].add(k)
                self.preds[k].add(i)

    @classmethod
    def chain(cls, blocks: list[Block]) -> LinearGraph:
        """The graph of a chain ``v0 → v1 → …`` with ``blocks[t]`` on the edge into ``v(t+1)``."""
        sizes = [blocks[0].shape[1], *(b.shape[0] for b in blocks)]
        labels = ["x", *(f"v{t + 1}" for t in range(len(blocks)))]
        edges = {(t, t + 1): b for t, b in enumerate(blocks)}
        return cls(sizes, labels, 0, len(blocks), edges)

    @property
    def intermediates(self) -> list[int]:
        """The vertices still to eliminate, in computation order."""
        ends = (self.input, self.output)
        return sorted(v for v in self.preds if v not in ends)

    def copy(self, values: bool = True) -> LinearGraph:
        """An independent copy (blocks are shared: they never change); with ``values=False``
        the copy keeps the structure only, and counts without computing."""
        edges = dict(self.edges) if values else {e: b.structure() for e, b in self.edges.items()}
        return LinearGraph(
            self.sizes,
            self.labels,
            self.input,
            self.output,
            edges,
            {v: set(p) for v, p in self.preds.items()},
            {v: set(s) for v, s in self.succs.items()},
            self.shapes,
        )

    def vertex_cost(self, j: int) -> tuple[int, int]:
        """``(multiplications, fill-in)`` that eliminating ``j`` would cost now."""
        mults = fill = 0
        for i in self.preds[j]:
            for k in self.succs[j]:
                mults += product_multiplications(self.edges[(j, k)], self.edges[(i, j)])
                fill += (i, k) not in self.edges
        return mults, fill

    def eliminate_vertex(self, j: int) -> Step:
        """Eliminate intermediate ``j``: front-eliminate each of its in-edges."""
        self._check_intermediate(j, "vertex")
        steps = [self.front_eliminate((i, j)) for i in sorted(self.preds[j])]
        if j in self.preds:  # no predecessor: it never mattered
            self._remove_vertex(j)
        return Step(j, *(sum(getattr(s, name) for s in steps) for name in _COUNTED))

    def front_eliminate(self, edge: tuple[int, int]) -> Step:
        """Front-eliminate ``i → j``: add ``B_kj · B_ji`` to ``i → k`` for each successor ``k``."""
        i, j = edge
        self._check_intermediate(j, "front")
        inner = self._pop_edge(edge)
        step = self._join([(i, k, self.edges[(j, k)], inner) for k in sorted(self.succs[j])], edge)
        if not self.preds[j]:
            self._remove_vertex(j)
        return step

    def back_eliminate(self, edge: tuple[int, int]) -> Step:
        """Back-eliminate ``j → k``: add ``B_kj · B_ji`` to ``i → k`` for each predecessor ``i``."""
        j, k = edge
        self._check_intermediate(j, "back")
        outer = self._pop_edge(edge)
        step = self._join([(i, k, outer, self.edges[(i, j)]) for i in sorted(self.preds[j])], edge)
        if not self.succs[j]:
            self._remove_vertex(j)
        return step

    def _join(self, products, eliminated) -> Step:
        mults = adds = fill = 0
        for i, k, outer, inner in products:
            block, used = product(outer, inner)
            mults += used
            if (i, k) in self.edges:
                block, added = total(self.edges[(i, k)], block)
                adds += added
            else:
                fill += 1
                self.succs[i].add(k)
                self.preds[k].add(i)
            self.edges[(i, k)] = block
        return Step(eliminated, mults, adds, fill)

    def _pop_edge(self, edge: tuple[int, int]) -> Block:
        if edge not in self.edges:
            raise ValueError(f"the graph has no edge {edge}; its edges are {sorted(self.edges)}")
        i, k = edge
        self.succs[i].discard(k)
        self.preds[k].discard(i)
        return self.edges.pop(edge)

    def _remove_vertex(self, j: int) -> None:
        for i in self.preds.pop(j):
            self.succs[i].discard(j)
            del self.edges[(i, j)]
        for k in self.succs.pop(j):
            self.preds[k].discard(j)
            del self.edges[(j, k)]

    def _check_intermediate(self, j: int, what: str) -> None:
        if j not in self.preds or j in (self.input, self.output):
            raise ValueError(
                f"{what} elimination needs an intermediate vertex not yet eliminated, and "
                f"{j} is not one; the intermediates left are {self.intermediates}"
            )


_COUNTED = ("multiplications", "additions", "fill")
