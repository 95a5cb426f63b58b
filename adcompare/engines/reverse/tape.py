"""The tape's records: one ``Node`` per recorded op application, and the leaves' accumulators.

A record holds the op, references to its inputs' records, and only the
values read by the VJP rules of the inputs that need a gradient
(``Hints.vjp_reads``). Records are numbered in execution order, so the
records reachable from an output, sorted by number, are a Wengert list.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.ops import OpDef
from adcompare.ops.registry import raw, shape_of

_SEQUENCE = itertools.count()
_ONE_NEEDED = (True,)

FREED_GRAPH = (
    "backward through a graph that was already freed: the values saved for the "
    "backward pass were released by an earlier backward call. Pass retain_graph=True "
    "to the earlier backward call if you need to backward through the graph again, "
    "or run the forward computation again."
)


class Placeholder:
    """Stands in for a value the tape did not keep: only its shape is known."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Node:
    """One record on the tape: an op application and what its VJP needs.

    ``next_functions`` lists the records of the inputs (``None`` for inputs
    that need no gradient), as in PyTorch; ``saved_bytes`` is what this
    record keeps alive for the backward pass. A value it did not keep is a
    placeholder that knows only its shape. Records are made by :func:`new_node`.
    """

    __slots__ = (
        "__weakref__",
        "freed",
        "in_shapes",
        "level",
        "next",
        "op",
        "out_shape",
        "params",
        "retained",
        "saved_args",
        "saved_out",
        "seq",
        "versions",
    )

    @property
    def name(self) -> str:
        """PyTorch-style name, e.g. ``MulBackward``."""
        return f"{self.op.label}Backward"

    @property
    def next_functions(self) -> tuple:
        """The input records as ``(node, 0)`` pairs, PyTorch's layout."""
        return tuple((n, 0) for n in self.next)

    @property
    def saved_values(self) -> tuple:
        """The plain values this record keeps for its VJP (empty once freed)."""
        if self.freed:
            return ()
        values = [*(self.saved_args or ()), self.saved_out]
        return tuple(v for v in values if v is not None and not isinstance(v, Placeholder))

    @property
    def saved_bytes(self) -> int:
        """Bytes of the arrays this record keeps alive, each array counted once."""
        return _nbytes(self.saved_values)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def new_node(op: OpDef, params, next_nodes, args, out, versions, level) -> Node:
    """A record of ``op`` applied to ``args`` (their ``next_nodes`` records) giving ``out``.

    A function rather than ``Node.__init__``: this runs once per recorded op, and
    calling a class (``type.__call__``, then ``__init__`` looked up and called) costs
    more than calling a function.
    """
    self = _allocate(Node)
    # Keep only what the rules of the inputs that need a gradient read; the
    # others become placeholders that know their shape. ``versions`` lists the
    # Tensor arguments' (version counter, version now, position): only the
    # kept ones are checked. ``in_shapes`` is None when the kept values say.
    if op.keeps_all_read:  # what kept() returns then, without building its key
        keep_args, keep_out = op.keeps
    elif len(next_nodes) == 1:  # recorded, so its one argument needs a gradient
        keep_args, keep_out = op.kept(_ONE_NEEDED)
    elif len(next_nodes) == 2:
        keep_args, keep_out = op.kept((next_nodes[0] is not None, next_nodes[1] is not None))
    else:
        keep_args, keep_out = op.kept(tuple([n is not None for n in next_nodes]))
    if keep_args is True:
        self.saved_args = args
        self.in_shapes = None
        self.versions = versions
    elif keep_args is False:
        self.saved_args = None
        shapes = []  # a loop, not a comprehension and shape_of per argument: once per op
        for a in args:
            shapes.append(a.shape if type(a) is ndarray else shape_of(a))
        self.in_shapes = tuple(shapes)
        self.versions = []
    else:
        self.saved_args = tuple(
            [a if keep else placeholder(shape_of(a)) for a, keep in zip(args, keep_args)]
        )
        self.in_shapes = None
        self.versions = [v for v in versions if keep_args[v[2]]]
    self.saved_out = out if keep_out else None
    self.out_shape = out.shape if type(out) is ndarray else shape_of(out)
    self.op = op
    self.params = params
    self.next = next_nodes
    self.seq = next(_SEQUENCE)
    self.level = level
    self.retained = None
    self.freed = False
    return self


_allocate = object.__new__


class AccumulateGrad:
    """The record of a leaf tensor: gradients arriving here go to ``.grad``."""

    __slots__ = ("__weakref__", "variable")
    seq = -1
    next = ()
    next_functions = ()
    name = "AccumulateGrad"
    freed = False

    def __init__(self, variable):
        self.variable = variable

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def _nbytes(values) -> int:
    seen = set()
    total = 0
    for v in values:
        v = raw(v)
        if id(v) in seen:
            continue
        seen.add(id(v))
        total += int(getattr(v, "nbytes", np.asarray(v).nbytes))
    return total


@functools.lru_cache(maxsize=1024)
def placeholder(shape: tuple) -> Placeholder:
    """The placeholder for a value of this shape (read-only, so shared)."""
    return Placeholder(shape)


@functools.lru_cache(maxsize=1024)
def placeholders(shapes: tuple) -> tuple:
    """Placeholders for values of these shapes."""
    return tuple(placeholder(shape) for shape in shapes)


def saved_inputs(node: Node) -> tuple:
    """``(args, out)`` for a record's VJP rules: the values it kept, placeholders for the rest."""
    args = node.saved_args if node.saved_args is not None else placeholders(node.in_shapes)
    out = node.saved_out if node.saved_out is not None else placeholder(node.out_shape)
    return args, out


def node_level(node) -> int:
    """The nesting level of a record's values."""
    return node.variable.level if isinstance(node, AccumulateGrad) else node.level
