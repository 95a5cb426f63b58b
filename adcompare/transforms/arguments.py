"""The arguments and outputs of a transformed function: flattening, aux data, checks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from adcompare.engines.reverse.interface import Tensor
from adcompare.ops.registry import Box, raw, shape_of
from adcompare.pytree import (
    LEAF,
    PyTreeDef,
    argnum_positions,
    is_differentiable_leaf,
    is_leaf,
    tree_flatten,
    tree_map,
    tree_unflatten,
)
from adcompare.runtime.dtypes import as_float


def replace_at(args: Sequence, positions: Sequence[int], values: Sequence) -> list:
    """``args`` as a list with ``values`` at ``positions``."""
    args = list(args)
    for p, v in zip(positions, values):
        args[p] = v
    return args


def dtype_of(value):
    """What decides a value's dtype after ``as_float``: its dtype, or its Python type."""
    return getattr(value, "dtype", type(value))


#: Arguments that are one leaf of their own, told by their type alone.
_PLAIN_LEAVES = (np.ndarray, float, np.float64)


class Flat:
    """The differentiated arguments of one call, flattened into their leaves.

    Only *active* leaves are differentiated: floating arrays and numbers
    (and any leaf that is a whole argument). Static leaves (``None``,
    strings, ints inside a container) pass through, and get ``None`` as
    their derivative. A position named twice in ``argnums`` is
    differentiated once and its result repeated, as JAX does.
    """

    def __init__(self, args: tuple, argnums, name: str):
        self.args = args
        if type(argnums) is int and 0 <= argnums < len(args):
            arg = args[argnums]
            if type(arg) in _PLAIN_LEAVES or isinstance(arg, Box):
                # One array, number or box at one position: what the loop below gives
                # for it, without its generality (this runs once per transform call).
                self.many = False
                self.requested = self.positions = (argnums,)
                self.leaves = [as_float(arg)]
                self.trees = {argnums: (LEAF, [arg], [0])}
                return
        self.many = isinstance(argnums, (tuple, list))
        self.requested = argnum_positions(argnums, len(args), name)
        self.positions = tuple(dict.fromkeys(self.requested))
        self.leaves: list = []
        self.trees: dict[int, tuple[PyTreeDef, list, list]] = {}
        for p in self.positions:
            arg = args[p]
            if arg is None or isinstance(arg, (str, bytes)):
                raise TypeError(
                    f"{name}: argument {p} is {arg!r}, which has no derivative; pass an array "
                    "or a container of arrays (a None inside a container is a static leaf), "
                    f"or leave position {p} out of argnums"
                )
            leaves, treedef = ([arg], LEAF) if is_leaf(arg) else tree_flatten(arg)
            whole = treedef is LEAF
            slots = []
            for k, leaf in enumerate(leaves):
                if not whole and isinstance(leaf, Tensor) and not leaf.requires_grad:
                    # A state_dict's tensors carry no derivative: take their values.
                    leaf = leaves[k] = np.asarray(leaf.data)
                if whole or is_differentiable_leaf(leaf):
                    slots.append(len(self.leaves))
                    self.leaves.append(as_float(leaf))
                else:
                    slots.append(None)
            self.trees[p] = (treedef, leaves, slots)

    @property
    def simple(self) -> bool:
        """Each position named once and each a single array: no flattening needed."""
        return len(self.positions) == len(self.requested) and all(
            treedef.kind is None for treedef, _, _ in self.trees.values()
        )

    def call(self, f: Callable, active: Sequence):
        """``f`` at the arguments, with ``active`` in place of the active leaves."""
        args = list(self.args)
        for p, (treedef, leaves, slots) in self.trees.items():
            if treedef is LEAF:
                args[p] = active[slots[0]]
            else:
                args[p] = tree_unflatten(
                    treedef, [leaf if s is None else active[s] for leaf, s in zip(leaves, slots)]
                )
        return f(*args)

    def function(self, f: Callable) -> Callable:
        """``f`` as a function of the active leaves alone."""

        def of_leaves(*active):
            return self.call(f, active)

        return of_leaves

    def build(self, per_leaf: Callable[[int], object]):
        """The arguments' structure with ``per_leaf(i)`` at active leaf ``i``, None at static ones.

        One tree for an integer ``argnums``, a tuple of trees (repeats
        included, each with arrays of its own) for a tuple.
        """
        trees = []
        done: set[int] = set()
        for p in self.requested:
            treedef, _, slots = self.trees[p]
            if treedef is LEAF and p not in done:
                done.add(p)
                trees.append(per_leaf(slots[0]))
                continue
            values = [None if s is None else per_leaf(s) for s in slots]
            if p in done:
                values = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
            done.add(p)
            trees.append(tree_unflatten(treedef, values))
        return tuple(trees) if self.many else trees[0]


def no_none(out, name: str) -> None:
    """Refuse a function that returned ``None``."""
    if out is None:
        raise TypeError(
            f"{name}: the function returned None; did it forget a `return`? Return the "
            "value to differentiate (an output that does not depend on the inputs is fine)"
        )


def split_aux(out, has_aux: bool, name: str):
    """``(output, aux)``: the function's output, and its auxiliary data if ``has_aux``."""
    no_none(out, name)
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"{name}: with has_aux=True the function must return a pair (output, aux), "
            f"but it returned a {type(out).__name__}"
        )
    no_none(out[0], name)
    return out[0], out[1]


def check_scalar_output(out, name: str) -> None:
    """Refuse an output that is a container or a boolean, where one number is needed."""
    if not is_leaf(out):
        raise TypeError(
            f"{name} needs a function with a scalar output, but this one returned a "
            f"{type(out).__name__}; use adcompare.jacobian (or jacrev / jacfwd) for several "
            f"outputs, or {name}(f, has_aux=True) with f returning (loss, aux) to "
            "differentiate the first and carry the rest along"
        )
    if np.asarray(raw(out)).dtype == np.bool_:
        raise TypeError(
            f"{name} needs a real-valued output, but this one is a boolean (a comparison, "
            "or a test such as np.allclose), which has no derivative; differentiate the "
            "number it tests instead"
        )


def is_static_output(leaf) -> bool:
    """Whether an output leaf is static (``None``, a string): it has no derivative."""
    return leaf is None or isinstance(leaf, (str, bytes))


def strip(aux, level: int):
    """Auxiliary data with this transform's boxes replaced by their values."""
    if aux is None:
        return None
    return tree_map(
        lambda v: as_output(v.raw_value()) if isinstance(v, Box) and v.level == level else v,
        aux,
    )


def as_output(value):
    """A plain result as a numpy array (boxes of outer transforms pass through)."""
    return value if isinstance(value, Box) else np.asarray(value)


def nest(out_def: PyTreeDef, blocks: list, flat: Flat):
    """The output's structure over the input's: ``blocks[j][i]`` for output j, input leaf i."""
    return tree_unflatten(
        out_def, [None if block is None else flat.build(block.__getitem__) for block in blocks]
    )


def check_real_scalar(value) -> None:
    """Refuse an output that is not one real number: a gradient needs a real scalar.

    The gradient of a complex output is not defined (``f(x) = x * 1j`` has no
    direction of steepest ascent); a real cotangent would pair with its real
    part only and silently drop the imaginary one, so it is refused, as JAX
    refuses it.
    """
    if math.prod(shape_of(value)) != 1:
        raise ValueError(
            f"grad needs a function with a scalar output, but this one returned shape "
            f"{shape_of(value)}; use adcompare.jacobian (or jacrev / jacfwd) for array "
            "outputs, or reduce the output (e.g. with sum) first"
        )
    dtype = np.result_type(raw(value))
    if dtype.kind == "c":
        raise TypeError(
            f"grad needs a real-valued output, but this one is complex ({dtype}); "
            "differentiate a real function of it (ad.real(f(x)), ad.imag(f(x)) or "
            "ad.abs(f(x)) ** 2), take its complex Jacobian with jacfwd, or pull a "
            "cotangent of your choice back with adcompare.vjp"
        )
