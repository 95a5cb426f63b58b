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
keys have the same structure whatever their insertion order; an
``OrderedDict`` (a ``state_dict``) keeps its order.

>>> leaves, tree = tree_flatten({"w": [1.0, 2.0], "b": (3.0, None)})
>>> leaves
[3.0, None, [1.0, 2.0]]
>>> tree_unflatten(tree, [10.0, None, 20.0])
{'b': (10.0, None), 'w': 20.0}
"""

from __future__ import annotations

import inspect
import numbers
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from adcompare.ops import concatenate, getitem, reshape
from adcompare.ops.registry import Box

__all__ = [
    "LEAF",
    "PyTreeDef",
    "argnum_positions",
    "broadcast_prefix",
    "flat_call",
    "is_differentiable_leaf",
    "is_leaf",
    "join_leaves",
    "plain_views",
    "register_pytree_node",
    "sequence_like",
    "split_leaves",
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

register_pytree_node(
    OrderedDict,  # keeps its order, as in JAX: a state_dict's order means something
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, children: OrderedDict(zip(keys, children)),
)


def _is_number_literal(value) -> bool:
    """A plain number, or a (nested) list/tuple of plain numbers that numpy reads as one
    array: rectangular, so ``((1.0,), 2.0)`` is a tuple of two leaves, not an array."""
    return _literal_shape(value) is not None


def _literal_shape(value) -> tuple | None:
    """The shape numpy gives the number literal ``value``; ``None`` if it is not one."""
    kind = type(value)  # exact types first: isinstance against numbers.Number, an ABC, is slow
    if kind in _PLAIN_NUMBERS:
        return ()
    if kind is np.ndarray:
        return None
    if kind in (list, tuple):
        shapes = {_literal_shape(v) for v in value}
        if len(shapes) != 1 or None in shapes:  # empty, ragged, or holding a non-number
            return None
        return (len(value), *shapes.pop())
    return () if isinstance(value, (numbers.Number, np.number, np.bool_)) else None


_PLAIN_NUMBERS = (float, int, bool, complex)


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


def sequence_like(like, items) -> tuple | list:
    """``items`` as a sequence of ``like``'s type: a list, a tuple or a NamedTuple.

    >>> import numpy as np
    >>> sequence_like(np.linalg.slogdet(np.eye(2)), [1.0, 0.0])
    SlogdetResult(sign=1.0, logabsdet=0.0)
    >>> sequence_like([0], (1, 2))
    [1, 2]
    """
    kind = type(like)
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def plain_views(values, kind: type):
    """``values`` with each ``kind`` array in it (an ndarray subclass), nested in dicts,
    lists and tuples, viewed as a plain ndarray: what a subclass hands numpy to compute.

    >>> import numpy as np
    >>> class Marked(np.ndarray): ...
    >>> marked = np.zeros(2).view(Marked)
    >>> [type(v).__name__ for v in plain_views((marked, [marked]), Marked)[1]]
    ['ndarray']
    """
    if isinstance(values, kind):
        return values.view(np.ndarray)
    if isinstance(values, dict):
        return {k: plain_views(v, kind) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return sequence_like(values, [plain_views(v, kind) for v in values])
    return values


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


#: The structure of a single leaf.
LEAF = PyTreeDef(None)


def is_leaf(value) -> bool:
    """Whether ``value`` is a leaf (an array, a number, an array literal, None, ...).

    >>> is_leaf(np.ones(2)), is_leaf([1.0, 2.0]), is_leaf([np.ones(2)]), is_leaf({})
    (True, True, False, False)
    """
    return _node_of(value) is None


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
        return LEAF
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


def _leaf_names(tree, base: str) -> list[str]:
    """A name per leaf, from the path to it: ``params_W``, ``layers_0_bias``."""
    node = _node_of(tree)
    if node is None:
        return [base]
    children, aux = node[0](tree)
    children = list(children)
    if node[2] is dict:
        labels = [str(k) for k in aux]
    elif hasattr(node[2], "_fields"):
        labels = list(node[2]._fields)
    else:
        labels = [str(i) for i in range(len(children))]
    names = []
    for label, child in zip(labels, children):
        clean = "".join(c if c.isalnum() else "_" for c in label)
        names += _leaf_names(child, f"{base}_{clean}")
    return names


def argnum_positions(argnums, nargs: int, name: str) -> tuple[int, ...]:
    """The argument positions ``argnums`` names (an int, or a tuple or list of them).

    In order, repeats kept (as JAX keeps them), negative positions counted
    from the end. Every transform that takes ``argnums`` reads it here.

    >>> argnum_positions((0, -1, 0), 3, "grad")
    (0, 2, 0)
    >>> argnum_positions(2, 2, "grad")
    Traceback (most recent call last):
    ...
    ValueError: grad: argnums=2 does not name a positional argument of a function called with ...
    """
    nums = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    for a in nums:
        if not isinstance(a, (int, np.integer)) or not -nargs <= a < nargs:
            raise ValueError(
                f"{name}: argnums={argnums!r} does not name a positional argument of a "
                f"function called with {nargs} argument(s)"
            )
    return tuple(int(a) % nargs for a in nums)


def flat_call(f: Callable, args: tuple, argnums=None, names: Sequence[str] = ()):
    """``f`` as a function of the leaves of its arguments, for tools that take arrays.

    Returns ``(flat_f, leaves, flat_argnums)``: ``flat_f(*leaves)`` is
    ``f(*args)``, its parameters are named after the paths to the leaves
    (``params_W``), and ``flat_argnums`` names the floating leaves of the
    positions ``argnums`` named (``None`` stays ``None``). Arguments that are
    all single arrays come back unchanged.

    >>> flat_f, leaves, argnums = flat_call(lambda p: p["a"] * p["b"], ({"a": 2.0, "b": 3.0},), 0)
    >>> flat_f(*leaves), argnums, list(inspect.signature(flat_f).parameters)
    (6.0, (0, 1), ['p_a', 'p_b'])
    """
    if all(tree_structure(a).kind is None for a in args):
        return f, args, argnums
    if not names:
        try:
            names = list(inspect.signature(f).parameters)[: len(args)]
        except (TypeError, ValueError):
            names = []
    names = list(names) + [f"arg{i}" for i in range(len(names), len(args))]
    flats = [tree_flatten(a) for a in args]
    starts = np.cumsum([0] + [len(leaves) for leaves, _ in flats]).tolist()
    leaves = [leaf for flat_leaves, _ in flats for leaf in flat_leaves]
    if argnums is None:
        flat_argnums = None
    else:
        flat_argnums = tuple(
            i
            for p in dict.fromkeys(argnum_positions(argnums, len(args), "flat_call"))
            for i in range(starts[p], starts[p + 1])
            if starts[p + 1] - starts[p] == 1 or is_differentiable_leaf(leaves[i])
        )

    def flat_f(*flat_leaves):
        rebuilt = [
            tree_unflatten(treedef, flat_leaves[starts[p] : starts[p + 1]])
            for p, (_, treedef) in enumerate(flats)
        ]
        return f(*rebuilt)

    leaf_names = [n for a, name in zip(args, names) for n in _leaf_names(a, name)]
    flat_f.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in leaf_names]
    )
    flat_f.__name__ = getattr(f, "__name__", "f")
    return flat_f, tuple(leaves), flat_argnums


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


# --- several outputs as one array ------------------------------------------------------


def join_leaves(values: list):
    """One array holding the arrays ``values`` flattened (itself when there is one): how a
    function of several outputs becomes one op of one output.

    >>> print(join_leaves([np.ones((1, 2)), np.zeros(1)]))
    [1. 1. 0.]
    """
    if len(values) == 1:
        return values[0]
    return concatenate([reshape(v, (-1,)) for v in values])


def split_leaves(flat, shapes: list, lead: tuple = ()) -> list:
    """The arrays :func:`join_leaves` joined, of ``shapes``, from ``flat`` (with leading
    axes ``lead``).

    >>> [a.shape for a in split_leaves(np.arange(3.0), [(1, 2), (1,)])]
    [(1, 2), (1,)]
    """
    if len(shapes) == 1:
        return [flat]
    parts, offset = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        index = (slice(None),) * len(lead) + (slice(offset, offset + size),)
        parts.append(reshape(getitem(flat, index), lead + tuple(shape)))
        offset += size
    return parts
