"""The linearized graph of ``f`` at ``x``, read from the reverse engine's tape.

``f`` runs once on a tensor. Each record the output depends on becomes a
vertex (its value), each of its inputs that carries a derivative an edge,
whose block is the record's local partial derivative with respect to that
input (:mod:`adcompare.engines.reverse.reference` shows how records, their
inputs and VJP rules fit together):

- an elementwise op whose input has the output's shape has a diagonal
  partial, read in one call of its VJP rule on a cotangent of ones
  (``ūᵀ ∂out/∂arg`` with ``ū = 1`` is the diagonal);
- any other partial is read a row at a time: the VJP rule mapped with
  :func:`~adcompare.transforms.vmap` over the rows of the identity (as
  ``jacrev`` maps its pullback), summed down to the input's shape.

Two edges between the same vertices (``x * x``) are one edge, their blocks
summed: the linearized graph has one partial per pair of values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.elimination.blocks import Block, total
from adcompare.elimination.graph import LinearGraph
from adcompare.engines.reverse import AccumulateGrad, enable_grad, lift, lower, node_of
from adcompare.engines.reverse.tape import saved_inputs
from adcompare.ops.registry import raw, shape_of, unbroadcast
from adcompare.transforms import vmap

__all__ = ["linearize"]


def linearize(f: Callable, x) -> LinearGraph:
    """The linearized computational graph of ``f`` at ``x`` (one real array in, one out).

    >>> import adcompare as ad
    >>> g = linearize(lambda x: ad.sin(x) * x, np.array([1.0, 2.0]))
    >>> g.labels, sorted(g.edges), g.edges[(0, 1)].kind
    (['x', 'v1 = sin', 'v2 = multiply'], [(0, 1), (0, 2), (1, 2)], 'diagonal')
    """
    (leaf,) = lift([np.asarray(x)])
    if leaf.dtype.kind == "c":
        raise TypeError(_COMPLEX)
    with enable_grad():
        value, root = lower(f(leaf), leaf.level)
    value = np.asarray(raw(value))
    if value.dtype.kind not in "fiub":
        raise TypeError(_COMPLEX if value.dtype.kind == "c" else _NOT_AN_ARRAY)
    start = node_of(leaf)
    records = [] if root is None or root is start else _records(root, start)
    index = {start: 0, **{node: v for v, node in enumerate(records, start=1)}}
    sizes = [leaf.size, *(int(np.prod(node.out_shape, dtype=np.int64)) for node in records)]
    labels = ["x", *(f"v{v} = {node.op.name}" for v, node in enumerate(records, start=1))]
    edges: dict[tuple[int, int], Block] = {}
    for k, node in enumerate(records, start=1):
        args, out = saved_inputs(node)
        for position, source in enumerate(node.next):
            if source is None:
                continue
            block = local_block(node, position, args, out)
            edge = (index[source], k)
            edges[edge] = total(edges[edge], block)[0] if edge in edges else block
    if root is start:  # f(x) = x: the output is the input, through the identity
        sizes, labels = [leaf.size, leaf.size], ["x", "v1 = x"]
        edges[(0, 1)] = Block.diagonal_of(np.ones(leaf.size))
    if root is None:  # nothing depends on x: the output is a vertex with no edge
        sizes, labels = [leaf.size, value.size], ["x", "v1 = constant"]
    shapes = (tuple(leaf.shape), tuple(value.shape))
    return LinearGraph(sizes, labels, 0, len(sizes) - 1, edges, shapes=shapes)


def local_block(node, position: int, args, out) -> Block:
    """The block ``∂out/∂args[position]`` of one tape record.

    >>> import adcompare as ad
    >>> from adcompare.engines.reverse import lift, node_of
    >>> from adcompare.engines.reverse.tape import saved_inputs
    >>> (x,) = lift([np.array([1.0, 2.0])])
    >>> node = node_of(ad.sum(x * 3.0))
    >>> local_block(node, 0, *saved_inputs(node)).values
    array([[1., 1.]])
    """
    rule = node.op.vjp_at(position)
    arg_shape = shape_of(args[position])
    if node.op.elementwise and tuple(arg_shape) == tuple(node.out_shape):
        ones = np.ones(node.out_shape)
        diagonal = unbroadcast(rule(out, *args, ones, **node.params), arg_shape)
        return Block.diagonal_of(np.asarray(raw(diagonal), dtype=np.float64))
    size = int(np.prod(node.out_shape, dtype=np.int64))
    rows = np.eye(size).reshape((size, *node.out_shape))

    def row(cotangent):
        return unbroadcast(rule(out, *args, cotangent, **node.params), arg_shape)

    matrix = np.asarray(raw(vmap(row)(rows)), dtype=np.float64)
    return Block.matrix_of(matrix.reshape(size, -1))


def _records(root, start) -> list:
    """The records ``root`` depends on, oldest first (a Wengert list), the leaf left out."""
    reached, stack = {root}, [root]
    while stack:
        for source in stack.pop().next:
            if source is None or source in reached:
                continue
            if type(source) is AccumulateGrad and source is not start:
                raise ValueError(_OTHER_LEAF)
            reached.add(source)
            stack.append(source)
    reached.discard(start)
    return sorted(reached, key=lambda node: node.seq)


_COMPLEX = (
    "elimination builds real Jacobians, and this value is complex; "
    "differentiate ad.real(...) and ad.imag(...) separately"
)
_NOT_AN_ARRAY = "elimination needs f to return one real array; return a single array"
_OTHER_LEAF = (
    "f reads a tensor that requires grad besides its input; elimination differentiates "
    "with respect to x alone, so pass that tensor's value as a plain array"
)
