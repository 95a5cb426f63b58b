"""The records of a tensor's graph, and the statistics of what they hold.

A tensor's ``grad_fn`` is the last record of the tape that computed it; its
``next`` links lead to the records of its inputs (``AccumulateGrad`` for a
leaf, ``None`` for a constant). Walking those links from the output gives
the whole graph; sorting the op records by ``seq`` gives the order in which
they ran.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from adcompare.engines.reverse import AccumulateGrad, Node, Tensor, node_of
from adcompare.ops.registry import raw, shape_of

__all__ = ["Graph", "GraphStats", "SavedValue", "graph_of", "stats"]


@dataclass(frozen=True)
class SavedValue:
    """One array kept alive for the backward pass, and the records that keep it."""

    value: object
    holders: tuple[Node, ...]

    @property
    def nbytes(self) -> int:
        """Its size in bytes."""
        return _nbytes(self.value)

    @property
    def shape(self) -> tuple[int, ...]:
        """Its shape."""
        return shape_of(self.value)


@dataclass(frozen=True)
class Graph:
    """The records reachable from one tensor.

    ``nodes`` are the op records in execution order (``seq``); ``leaves``
    are the leaf tensors' ``AccumulateGrad`` records in order of first use;
    ``edges`` are ``(input_record, node, position)`` triples, one per input
    that carries a derivative (constants have no record and no edge).
    """

    output: Tensor
    nodes: tuple[Node, ...]
    leaves: tuple[AccumulateGrad, ...]
    edges: tuple[tuple[object, Node, int], ...]

    @property
    def constants(self) -> int:
        """How many op inputs are constants (no record, no derivative)."""
        return sum(n is None for node in self.nodes for n in node.next)

    def saved(self) -> list[SavedValue]:
        """The distinct arrays the records keep for the backward pass.

        An array kept by several records (a leaf's data used twice, an
        output kept by its own record and by the next one) is listed once,
        with every record that holds it.
        """
        by_id: dict[int, tuple[object, list[Node]]] = {}
        for node in self.nodes:
            for value in node.saved_values:
                plain = raw(value)
                entry = by_id.setdefault(id(plain), (plain, []))
                if node not in entry[1]:
                    entry[1].append(node)
        return [SavedValue(value, tuple(holders)) for value, holders in by_id.values()]


def _nbytes(value) -> int:
    value = raw(value)
    return int(getattr(value, "nbytes", np.asarray(value).nbytes))


def graph_of(tensor: Tensor) -> Graph:
    """The graph that computed ``tensor``: its records, leaves and edges.

    >>> import adcompare as ad
    >>> x = ad.Tensor(2.0, requires_grad=True)
    >>> g = graph_of(ad.sin(x) * x)
    >>> [n.name for n in g.nodes], len(g.leaves), len(g.edges)
    (['SinBackward', 'MulBackward'], 1, 3)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"expected an adcompare.Tensor, got {type(tensor).__name__}; the graph is "
            "recorded only for tensors created with requires_grad=True"
        )
    if not tensor.requires_grad:
        return Graph(tensor, (), (), ())
    root = node_of(tensor)
    seen = {root}
    stack = [root]
    while stack:
        record = stack.pop()
        for nxt in record.next:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    nodes = sorted((r for r in seen if isinstance(r, Node)), key=lambda n: n.seq)
    leaves: list[AccumulateGrad] = [root] if isinstance(root, AccumulateGrad) else []
    edges = []
    for node in nodes:
        for position, nxt in enumerate(node.next):
            if nxt is None:
                continue
            edges.append((nxt, node, position))
            if isinstance(nxt, AccumulateGrad) and nxt not in leaves:
                leaves.append(nxt)
    return Graph(tensor, tuple(nodes), tuple(leaves), tuple(edges))


@dataclass(frozen=True)
class GraphStats:
    """What a graph is made of and what it holds for the backward pass.

    ``nodes`` counts op records (``grad_fn`` objects), ``leaves`` the leaf
    tensors that require grad, ``edges`` the links from a record to the
    records of its inputs, ``constants`` the op inputs that need no
    gradient. ``saved_bytes`` is adcompare's one definition of the bytes
    saved for backward: each record's :attr:`~adcompare.reverse.Node.saved_bytes`
    (the values its VJP reads, each counted once per record), summed over the
    records. An array two records keep counts for each, so this is exactly
    what :func:`adcompare.count` reports as ``tape_bytes``, what ``explain``
    and ``demo`` print and what the picture's node labels add up to; it can
    exceed the memory the graph holds. ``saved_values`` counts the distinct
    arrays behind those bytes (what ``to_dot`` draws in orange). Both are
    zero once a backward sweep without ``retain_graph`` has freed the graph.
    """

    nodes: int
    leaves: int
    edges: int
    constants: int
    ops: dict[str, int] = field(default_factory=dict)
    saved_values: int = 0
    saved_bytes: int = 0
    freed: int = 0
    output_shape: tuple[int, ...] = ()

    def as_dict(self) -> dict:
        """The statistics as plain JSON-ready values."""
        return {
            "nodes": self.nodes,
            "leaves": self.leaves,
            "edges": self.edges,
            "constants": self.constants,
            "ops": dict(self.ops),
            "saved_values": self.saved_values,
            "saved_bytes": self.saved_bytes,
            "freed": self.freed,
            "output_shape": list(self.output_shape),
        }

    def __str__(self) -> str:
        lines = [
            f"graph of a tensor of shape {self.output_shape}: {self.nodes} op record(s), "
            f"{self.leaves} leaf tensor(s), {self.edges} edge(s), {self.constants} constant "
            "input(s)"
        ]
        if self.ops:
            lines.append("ops: " + ", ".join(f"{name} ×{n}" for name, n in self.ops.items()))
        if self.saved_values:
            lines.append(
                f"saved for backward: {self.saved_bytes} bytes, the values each record keeps "
                f"({self.saved_values} distinct array(s))"
            )
        elif self.freed:
            lines.append(
                f"saved for backward: nothing ({self.freed} record(s) freed by backward; "
                "pass retain_graph=True to keep them)"
            )
        else:
            lines.append("saved for backward: nothing")
        return "\n".join(lines)


def stats(tensor: Tensor) -> GraphStats:
    """Count the records, edges, leaves, ops and saved bytes of ``tensor``'s graph.

    >>> import adcompare as ad
    >>> x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> loss = ad.sum(ad.sin(x) * x)
    >>> s = stats(loss)
    >>> s.nodes, s.leaves, s.edges, s.ops
    (3, 1, 4, {'sin': 1, 'multiply': 1, 'sum': 1})
    >>> s.saved_bytes           # sin keeps x (24 bytes); multiply keeps sin(x) and x (48)
    72
    >>> loss.backward()
    >>> stats(loss).saved_bytes, stats(loss).freed
    (0, 3)
    """
    graph = graph_of(tensor)
    saved = graph.saved()
    ops = Counter(node.op.name for node in graph.nodes)
    return GraphStats(
        nodes=len(graph.nodes),
        leaves=len(graph.leaves),
        edges=len(graph.edges),
        constants=graph.constants,
        ops=dict(ops),
        saved_values=len(saved),
        saved_bytes=sum(node.saved_bytes for node in graph.nodes),
        freed=sum(node.freed for node in graph.nodes),
        output_shape=tuple(tensor.shape),
    )
