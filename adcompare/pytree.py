"""Pytrees: nested tuples, lists, dicts and NamedTuples of arrays, as JAX has them.

Every transform takes and returns pytrees: a gradient is shaped like the
parameters it belongs to. A tree is flattened into its *leaves* and a
:class:`PyTreeDef` that rebuilds it; user classes become nodes through
:func:`register_pytree_node`, with JAX's signature.

Two choices differ from JAX, and both keep numpy's habits:

- A list or tuple that holds only plain numbers (``[1.0, 2.0]``,
  ``[[1, 2], [3, 4]]``) is an *array literal*, one leaf, as ``np.asarray``
  reads it; JAX would see a list of scalars.
- ``None`` is a leaf (JAX makes it an empty node). Leaves that are not
  floating arrays (``None``, strings, Python ints and bools, integer arrays)
  are *static*: transforms pass them through and give ``None`` as their
  derivative.

Dict keys are sorted when flattened, as in JAX, so two dicts with the same
keys have the same structure whatever their insertion order.

>>> leaves, tree = tree_flatten({"w": [1.0, 2.0], "b": (3.0, None)})
>>> leaves
[3.0, None, [1.0, 2.0]]
>>> tree_unflatten(tree, [10.0, None, 20.0])
{'b': (10.0, None), 'w': 20.0}
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcompare.ops.registry import Box

__all__ = [
    "PyTreeDef",
    "broadcast_prefix",
    "is_differentiable_leaf",
    "register_pytree_node",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]

_NODES: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Any, Any]],
    unflatten_func: Callable[[Any, Any], Any],
) -> None:
    """Make instances of ``nodetype`` tree nodes (JAX's signature).

    ``flatten_func(node)`` returns ``(children, aux_data)``, children an
    iterable of subtrees and ``aux_data`` anything hashable that the
    rebuilding needs; ``unflatten_func(aux_data, children)`` rebuilds it.

    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> import adcompare as ad
    >>> g = ad.grad(lambda p: p.a * p.b)(Pair(2.0, 3.0))
    >>> print(g.a, g.b)
    3.0 2.0
    """
    if nodetype in _NODES:
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is registered already")
    _NODES[nodetype] = (flatten_func, unflatten_func)


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # keys of mixed types keep their insertion order
        return list(d)


register_pytree_node(tuple, lambda t: (t, None), lambda _, children: tuple(children))
register_pytree_node(list, lambda t: (t, None), lambda _, children: list(children))
register_pytree_node(
    dict,
    lambda d: ([d[k] for k in _sorted_keys(d)], tuple(_sorted_keys(d))),
    lambda keys, children: dict(zip(keys, children)),
)


def _is_number_literal(value) -> bool:
    """A plain number, or a (nested) list/tuple of plain numbers: numpy reads it as one array."""
    if isinstance(value, (numbers.Number, np.number, np.bool_)):
        return True
    if type(value) in (list, tuple) and value:
        return all(_is_number_literal(v) for v in value)
    return False


def _node_of(value):
    """``(flatten, unflatten, node type)`` if ``value`` is a tree node, else ``None``."""
    kind = type(value)
    if kind in (list, tuple) and _is_number_literal(value):
        return None
    found = _NODES.get(kind)
    if found is not None:
        return (*found, kind)
    if isinstance(value, tuple) and hasattr(kind, "_fields"):  # a NamedTuple
        return (lambda t: (tuple(t), None), lambda _, children: kind(*children), kind)
    return None


@dataclass(frozen=True)
class PyTreeDef:
    """The structure of a tree: node types and auxiliary data, leaves left out.

    >>> tree_structure((1.0, {"a": 2.0}))
    PyTreeDef((*, {'a': *}))
    """

    kind: type | None  # None: a leaf
    aux: Any = None
    children: tuple[PyTreeDef, ...] = ()

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this structure has."""
        if self.kind is None:
            return 1
        return sum(child.num_leaves for child in self.children)

    def __repr__(self) -> str:
        return f"PyTreeDef({self._text()})"

    def _text(self) -> str:
        if self.kind is None:
            return "*"
        inner = [child._text() for child in self.children]
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, inner)) + "}"
        if self.kind is list:
            return "[" + ", ".join(inner) + "]"
        if self.kind is tuple:
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        return f"{self.kind.__name__}(" + ", ".join(inner) + ")"


_LEAF = PyTreeDef(None)


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    """The leaves of ``tree`` (left to right) and its structure.

    >>> leaves, tree = tree_flatten([np.ones(2), (3.0, "static")])
    >>> len(leaves), tree
    (3, PyTreeDef([*, (*, *)]))
    """
    leaves: list = []
    return leaves, _flatten_into(tree, leaves, is_leaf)


def _flatten_into(tree, leaves: list, is_leaf) -> PyTreeDef:
    node = None if is_leaf is not None and is_leaf(tree) else _node_of(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    flatten, _, kind = node
    children, aux = flatten(tree)
    return PyTreeDef(kind, aux, tuple(_flatten_into(c, leaves, is_leaf) for c in children))


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    """Rebuild a tree of structure ``treedef`` from ``leaves``.

    >>> tree_unflatten(tree_structure({"a": 1, "b": 2}), [5, 6])
    {'a': 5, 'b': 6}
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: {len(leaves)} leaves for a structure with "
            f"{treedef.num_leaves}: {treedef}"
        )
    return _build(treedef, iter(leaves))


def _build(treedef: PyTreeDef, leaves):
    if treedef.kind is None:
        return next(leaves)
    children = [_build(child, leaves) for child in treedef.children]
    if treedef.kind in _NODES:
        return _NODES[treedef.kind][1](treedef.aux, children)
    return treedef.kind(*children)  # a NamedTuple


def tree_leaves(tree) -> list:
    """The leaves of ``tree``, left to right.

    >>> tree_leaves({"b": 2.0, "a": [1.0, None]})
    [1.0, None, 2.0]
    """
    return tree_flatten(tree)[0]


def tree_structure(tree) -> PyTreeDef:
    """The structure of ``tree``, without its leaves."""
    return tree_flatten(tree)[1]


def tree_map(f: Callable, tree, *rest) -> Any:
    """``f`` applied leaf by leaf; ``rest`` are trees of the same structure.

    >>> tree_map(lambda a, b: a + b, {"x": 1.0, "y": np.ones(2)}, {"x": 10.0, "y": np.ones(2)})
    {'x': 11.0, 'y': array([2., 2.])}
    >>> tree_map(lambda a: 2 * a, {"x": 1.0, "y": (np.ones(2), 3.0)})
    {'x': 2.0, 'y': (array([2., 2.]), 6.0)}
    """
    leaves, treedef = tree_flatten(tree)
    others = []
    for other in rest:
        other_leaves, other_def = tree_flatten(other)
        if other_def != treedef:
            raise ValueError(f"tree_map: the trees differ in structure: {treedef} and {other_def}")
        others.append(other_leaves)
    return tree_unflatten(treedef, [f(*parts) for parts in zip(leaves, *others)])


def broadcast_prefix(prefix, tree, what: str = "prefix") -> list:
    """One entry of ``prefix`` per leaf of ``tree``: ``prefix`` is a tree prefix of it.

    Where ``prefix`` has a leaf (an int or ``None``), that value holds for the
    whole subtree of ``tree`` below it, as JAX's ``in_axes`` do.

    >>> broadcast_prefix({"a": 0, "b": None}, {"a": [np.ones(2), 2.0], "b": np.ones(3)})
    [0, 0, None]
    >>> broadcast_prefix(1, (np.ones(2), np.ones(3)))
    [1, 1]
    """
    if prefix is None or isinstance(prefix, (int, np.integer)):
        return [prefix] * tree_structure(tree).num_leaves
    node = _node_of(tree)
    kind = type(prefix)
    if node is None or node[2] is not kind:
        raise ValueError(
            f"{what} {prefix!r} does not match the structure {tree_structure(tree)} of the "
            "value it describes; give an int or None, or a tree of that shape"
        )
    flatten = node[0]
    prefix_children, prefix_aux = flatten(prefix)
    children, aux = flatten(tree)
    if prefix_aux != aux or len(list(prefix_children)) != len(list(children)):
        raise ValueError(f"{what} {prefix!r} does not match the structure {tree_structure(tree)}")
    return [
        entry
        for p, child in zip(prefix_children, children)
        for entry in broadcast_prefix(p, child, what)
    ]


def is_differentiable_leaf(leaf) -> bool:
    """Whether a leaf carries a derivative: a floating array or number, or a box.

    ``None``, strings, Python ints and bools and integer arrays are static.

    >>> [is_differentiable_leaf(v) for v in (1.0, np.ones(2), 3, None, "s", [1, 2])]
    [True, True, False, False, False, True]
    """
    if isinstance(leaf, Box):
        return True
    if isinstance(leaf, (bool, np.bool_, str, bytes)) or leaf is None:
        return False
    if isinstance(leaf, int):
        return False
    if isinstance(leaf, (float, complex, np.inexact)):
        return True
    if isinstance(leaf, np.ndarray):
        return np.issubdtype(leaf.dtype, np.inexact)
    return type(leaf) in (list, tuple)  # an array literal: numpy promotes its ints
