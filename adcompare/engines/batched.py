"""``vmap``: run a function written for one example on a whole batch at once.

A mapped argument becomes a :class:`Batched` box: a value whose leading
axis is the batch, and whose ``shape`` is that of one example. Each op on a
box runs its record's batching rule (``OpDef.batch``), which knows how the
batch axis passes through; the engine itself knows no op. Batched values
may hold ``Dual`` or ``Tensor`` values and be held by them, so ``vmap``
composes with every transform: ``vmap(grad(loss))`` gives per-example
gradients in one pass, ``grad(vmap(f))`` and ``jacfwd(vmap(f))`` the
derivatives of a batched function.

As in JAX (and torch.func), the function sees one example: ``x.shape`` is
the shape of one row. Python control flow on a batched value (``if x >
0``) is refused, since each example could take another branch; use
``adcompare.where``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.ops import broadcast_to, transpose
from adcompare.ops.batching import rule_of
from adcompare.ops.registry import Box, OpDef, new_level, raw, shape_of
from adcompare.pytree import broadcast_prefix, tree_flatten, tree_unflatten
from adcompare.runtime.batch_arrays import BatchArray, install_box, mark, unmark
from adcompare.runtime.boxes import unbox

__all__ = ["Batched", "vmap"]


_VALUE = operator.attrgetter("value")


class Batched(ArrayBox):
    """A batch of values, batch axis first, that ops treat as one example each.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> b = Batched(np.arange(6.0).reshape(3, 2), ad.ops.registry.new_level())
    >>> b.shape, ad.sum(b).value
    ((2,), array([1., 5., 9.]))
    """

    __slots__ = ("value",)

    def __init__(self, value, level: int):
        self.value = value
        self.level = level

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one example."""
        return shape_of(self.value)[1:]

    def raw_value(self):
        # What a rule reads (``np.sign(raw(x))``) keeps its batch axis marked.
        inner = raw(self.value)
        levels = inner.levels if isinstance(inner, BatchArray) else ()
        return mark(inner, (self.level, *levels))

    def _carries_derivative(self) -> bool:
        return isinstance(self.value, ArrayBox) and self.value._carries_derivative()

    def _refuse(self, what: str):
        raise TypeError(
            f"vmap: {what} of a batched value needs one answer per example; use "
            "adcompare.where for branches, or return the value and use it outside vmap"
        )

    def __bool__(self) -> bool:
        self._refuse("the truth value")

    def __float__(self) -> float:
        self._refuse("float()")

    def item(self) -> float:
        """Refused: a batched value has one number per example."""
        self._refuse(".item()")

    def __array__(self, dtype=None, copy=None):
        self._refuse("converting to a numpy array")

    def __repr__(self) -> str:
        return f"Batched({self.value!r})"

    # Masks read from a batched value (``x > 0``) are batched values too.
    def astype(self, dtype, copy: bool = True) -> Batched:
        """The batch converted to ``dtype`` (for masks and shares that rules build)."""
        return Batched(self.value.astype(dtype, copy=copy), self.level)

    def __and__(self, other):
        return np.logical_and(raw(self), raw(other))

    def __or__(self, other):
        return np.logical_or(raw(self), raw(other))

    def __invert__(self):
        return np.logical_not(raw(self))

    __rand__, __ror__ = __and__, __or__

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        values, batched = [], []
        for a, value in zip(args, unbox(op, "Batched", Batched, args, level, _VALUE)):
            if isinstance(a, Batched) and a.level == level:
                values.append(value)
                batched.append(True)
            else:
                value, read_from_batch = unmark(value, level)
                values.append(value)
                batched.append(read_from_batch)
        rule = rule_of(op)
        if rule is None:
            raise TypeError(
                f"vmap: the op {op.name} has no batching rule; give its record one "
                "(OpDef.batch), or loop over the batch in Python"
            )
        return Batched(rule(tuple(values), tuple(batched), **params), level)


install_box(Batched)


def _axes_per_argument(in_axes, nargs: int) -> list:
    if in_axes is None or isinstance(in_axes, (int, np.integer)):
        return [in_axes] * nargs
    if isinstance(in_axes, (tuple, list)) and len(in_axes) == nargs:
        return list(in_axes)
    raise ValueError(
        f"vmap: in_axes={in_axes!r} must be an int, None, or a tuple with one entry per "
        f"argument ({nargs} here)"
    )


def _move_axis(value, source: int, destination: int):
    """``np.moveaxis`` with the op set's transpose, so boxes keep their derivatives."""
    n = len(shape_of(value))
    order = [i for i in range(n) if i != source]
    order.insert(destination, source)
    return value if order == list(range(n)) else transpose(value, tuple(order))


def _checked_axis(axis, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap: {what} axis {axis} is out of range for a value of rank {ndim - 1} "
            f"per example ({ndim} with the batch axis)"
        )
    return int(axis) % ndim


def vmap(f: Callable, in_axes=0, out_axes=0) -> Callable:
    """``f`` mapped over a batch axis: ``f`` is written for one example.

    ``in_axes`` gives, per argument, the axis to map over (``None``: the
    argument is shared by every example); an int or ``None`` applies to
    every argument, and an entry may be a tree prefix of its argument (a
    dict of axes for a dict of arrays). ``out_axes`` says where the batch
    axis goes in each output (an int, or a tree prefix of the output). As in
    JAX, an output that does not depend on a mapped argument is broadcast
    along the batch. Mapped arrays must be floating: to map integer labels,
    pass them one-hot.

    >>> import numpy as np
    >>> import adcompare as ad
    >>> xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> print(ad.vmap(lambda x, w: ad.sum(x * w), in_axes=(0, None))(xs, np.array([1.0, 10.0])))
    [21. 43. 65.]
    >>> print(ad.vmap(ad.grad(lambda x: ad.sum(x**3)))(xs))  # one gradient per row
    [[  3.  12.]
     [ 27.  48.]
     [ 75. 108.]]
    """

    @functools.wraps(f)
    def batched_f(*args):
        level = new_level()
        mapped_args, size = _map_arguments(args, in_axes, level)
        out = f(*mapped_args)
        if out is None:
            raise TypeError("vmap: the function returned None; did it forget a `return`?")
        out_leaves, out_def = tree_flatten(out)
        axes = broadcast_prefix(out_axes, out, "vmap: out_axes")
        results = [_unmapped(leaf, axis, level, size) for leaf, axis in zip(out_leaves, axes)]
        return tree_unflatten(out_def, results)

    return batched_f


def _map_arguments(args: tuple, in_axes, level: int) -> tuple[list, int]:
    """The arguments with their mapped leaves as batches at ``level``, and the batch size."""
    size = None
    mapped_args = []
    for position, (arg, axes) in enumerate(zip(args, _axes_per_argument(in_axes, len(args)))):
        leaves, treedef = tree_flatten(arg)
        leaf_axes = broadcast_prefix(axes, arg, f"vmap: in_axes entry {position}")
        mapped = []
        for leaf, axis in zip(leaves, leaf_axes):
            if axis is None:
                mapped.append(leaf)
                continue
            batch = _mapped(leaf, axis, position, level)
            examples = shape_of(batch.value)[0]
            if size is not None and examples != size:
                raise ValueError(
                    f"vmap: argument {position} has {examples} examples along axis {axis}, "
                    f"but an earlier argument has {size}; map axes of one size"
                )
            size = examples
            mapped.append(batch)
        mapped_args.append(tree_unflatten(treedef, mapped))
    if size is None:
        raise ValueError("vmap: no argument is mapped (every in_axes entry is None)")
    return mapped_args, size


def _mapped(leaf, axis: int, position: int, level: int) -> Batched:
    """One argument leaf as a batch, its mapped axis moved first."""
    value = leaf if isinstance(leaf, Box) else np.asarray(leaf)
    kind = np.result_type(raw(value))
    if not np.issubdtype(kind, np.inexact):
        raise TypeError(
            f"vmap: argument {position} maps an array of {kind}; vmap maps "
            "floating arrays (pass integer labels one-hot, or with in_axes None)"
        )
    axis = _checked_axis(axis, len(shape_of(value)), f"argument {position}'s in")
    return Batched(_move_axis(value, axis, 0), level)


def _unmapped(leaf, axis, level: int, size: int):
    """One output leaf with its batch axis at ``axis`` (broadcast if it is not batched)."""
    batched = isinstance(leaf, Batched) and leaf.level == level
    if isinstance(leaf, BatchArray):
        leaf = Batched(unmark(leaf, level)[0], level)
        batched = True
    if axis is None or leaf is None or isinstance(leaf, str):
        if batched:
            raise ValueError(
                "vmap: out_axes None needs an output that is the same for every "
                "example, but this one depends on a mapped argument"
            )
        return leaf
    if batched:
        value = leaf.value
    else:
        leaf = leaf if isinstance(leaf, Box) else np.asarray(leaf)
        value = broadcast_to(leaf, (size,) + shape_of(leaf))
    axis = _checked_axis(axis, len(shape_of(value)), "the out")
    return _move_axis(value, 0, axis)
