"""``vmap``: run a function written for one example on a whole batch at once.

Each mapped argument enters ``f`` as a batch of the batched engine (its
mapped axis moved first), and each output leaves with its batch axis where
``out_axes`` puts it; how each op passes the batch axis through is the
engine's business (:mod:`adcompare.engines.batched`), reached through its
interface. Batched values may hold ``Dual`` or ``Tensor`` values and be held
by them, so ``vmap`` composes with every transform: ``vmap(grad(loss))``
gives per-example gradients in one pass, ``grad(vmap(f))`` and
``jacfwd(vmap(f))`` the derivatives of a batched function.

As in JAX (and torch.func), the function sees one example: ``x.shape`` is
the shape of one row. Python control flow on a batched value (``if x >
0``) is refused, since each example could take another branch; use
``adcompare.where``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from adcompare.engines.batched.interface import lift, lower
from adcompare.ops import broadcast_to, transpose
from adcompare.ops.registry import Box, new_level, raw, shape_of
from adcompare.pytree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["vmap"]


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
            value = _batch_first(leaf, axis, position)
            examples = shape_of(value)[0]
            if size is not None and examples != size:
                raise ValueError(
                    f"vmap: argument {position} has {examples} examples along axis {axis}, "
                    f"but an earlier argument has {size}; map axes of one size"
                )
            size = examples
            mapped.append(lift(value, level))
        mapped_args.append(tree_unflatten(treedef, mapped))
    if size is None:
        raise ValueError("vmap: no argument is mapped (every in_axes entry is None)")
    return mapped_args, size


def _batch_first(leaf, axis: int, position: int):
    """One argument leaf with its mapped axis moved first."""
    value = leaf if isinstance(leaf, Box) else np.asarray(leaf)
    kind = np.result_type(raw(value))
    if not np.issubdtype(kind, np.inexact):
        raise TypeError(
            f"vmap: argument {position} maps an array of {kind}; vmap maps "
            "floating arrays (pass integer labels one-hot, or with in_axes None)"
        )
    axis = _checked_axis(axis, len(shape_of(value)), f"argument {position}'s in")
    return _move_axis(value, axis, 0)


def _unmapped(leaf, axis, level: int, size: int):
    """One output leaf with its batch axis at ``axis`` (broadcast if it is not batched)."""
    value, batched = lower(leaf, level)
    if axis is None or leaf is None or isinstance(leaf, str):
        if batched:
            raise ValueError(
                "vmap: out_axes None needs an output that is the same for every "
                "example, but this one depends on a mapped argument"
            )
        return leaf
    if not batched:
        leaf = leaf if isinstance(leaf, Box) else np.asarray(leaf)
        value = broadcast_to(leaf, (size,) + shape_of(leaf))
    axis = _checked_axis(axis, len(shape_of(value)), "the out")
    return _move_axis(value, 0, axis)
