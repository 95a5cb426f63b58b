"""Choosing forward or reverse mode for a Jacobian, and ``jacobian(mode=...)``."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from adcompare.ops.registry import shape_of
from adcompare.pytree import tree_flatten, tree_leaves
from adcompare.transforms.arguments import (
    Flat,
    dtype_of,
    is_static_output,
    nest,
    no_none,
    split_aux,
)
from adcompare.transforms.forward_mode import jacfwd
from adcompare.transforms.modes import registered, registered_modes
from adcompare.transforms.reverse_mode import jacrev


@dataclass(frozen=True)
class ModeChoice:
    """Which mode ``jacobian(mode="auto")`` used, and why."""

    mode: str
    n_inputs: int
    n_outputs: int
    reason: str

    def __str__(self) -> str:
        return f"{self.mode}: {self.reason}"


def choose_mode(n_inputs: int, n_outputs: int) -> ModeChoice:
    """Pick forward or reverse mode for a Jacobian of ``n_outputs × n_inputs``.

    Both modes batch alike: forward mode carries ``n_inputs`` tangent lanes
    (``jacfwd``'s chunks), reverse mode one recorded pass and ``n_outputs``
    cotangent lanes (``jacrev``'s chunks, by the same rule), each lane about
    one evaluation's work. The fewer lanes win; on a tie forward mode wins,
    since it keeps no tape.

    >>> choice = choose_mode(1000, 1)
    >>> choice.mode
    'reverse'
    >>> print(choice.reason)
    1 output(s) < 1000 input(s): reverse carries 1 cotangent lane(s) over a tape, forward
    1000 tangent lane(s)
    """
    if n_inputs <= n_outputs:
        return ModeChoice(
            "forward",
            n_inputs,
            n_outputs,
            f"{n_inputs} input(s) <= {n_outputs} output(s): forward carries {n_inputs} "
            f"tangent lane(s), reverse {n_outputs} cotangent lane(s) and a tape",
        )
    return ModeChoice(
        "reverse",
        n_inputs,
        n_outputs,
        f"{n_outputs} output(s) < {n_inputs} input(s): reverse carries {n_outputs} "
        f"cotangent lane(s) over a tape, forward {n_inputs} tangent lane(s)",
    )


def jacobian(
    f: Callable,
    argnums=0,
    mode: str = "auto",
    chunk_size: int | None = None,
    has_aux: bool = False,
) -> Callable:
    """The Jacobian of ``f`` by ``mode``: ``"auto"``, ``"forward"``, ``"reverse"``, ...

    With ``"auto"`` the first call at given input shapes evaluates ``f`` once
    to count its outputs (remembered per shape) and picks the cheaper mode;
    the returned function's ``last_choice`` says which and why. Pytrees nest
    the output's structure over the input's, as in :func:`jacrev`.

    >>> import adcompare as ad
    >>> jac = ad.jacobian(lambda x: ad.sum(x * x))
    >>> print(jac([1.0, 2.0, 3.0]), jac.last_choice.mode)
    [2. 4. 6.] reverse
    """
    if mode == "forward":
        return jacfwd(f, argnums, chunk_size, has_aux)
    if mode == "reverse":
        return jacrev(f, argnums, chunk_size, has_aux)
    if mode in registered_modes("jacobian"):
        if has_aux:
            raise ValueError(
                f"jacobian: has_aux is not supported with mode={mode!r}; use mode='forward' "
                "or 'reverse', or return the output alone"
            )
        return _extra_jacobian(f, argnums, mode)
    if mode != "auto":
        known = ", ".join(
            repr(m) for m in ["auto", "forward", "reverse", *registered_modes("jacobian")]
        )
        raise ValueError(f"jacobian: unknown mode {mode!r}; use one of {known}")
    forward, reverse = (
        jacfwd(f, argnums, chunk_size, has_aux),
        jacrev(f, argnums, chunk_size, has_aux),
    )
    # Per argument signature (structure, shapes and dtypes): the choice and its transform.
    chosen: dict[tuple, tuple[ModeChoice, Callable]] = {}

    @functools.wraps(f)
    def auto_jacobian(*args):
        signature = _signature(args)
        known = chosen.get(signature)
        if known is None:
            flat = Flat(args, argnums, "jacobian")
            out = split_aux(flat.call(f, flat.leaves), has_aux, "jacobian")[0]
            n_outputs = sum(
                math.prod(shape_of(o)) for o in tree_leaves(out) if not is_static_output(o)
            )
            n_inputs = sum(math.prod(shape_of(leaf)) for leaf in flat.leaves)
            choice = choose_mode(n_inputs, n_outputs)
            known = chosen[signature] = (choice, forward if choice.mode == "forward" else reverse)
        auto_jacobian.last_choice = known[0]
        return known[1](*args)

    auto_jacobian.last_choice = None
    return auto_jacobian


def _signature(args: tuple) -> tuple:
    """What ``jacobian(mode="auto")`` remembers its choice by: structure, shapes, dtypes."""
    if all([type(a) is np.ndarray for a in args]):  # plain arrays: no tree to flatten
        return tuple([(a.shape, a.dtype) for a in args])
    leaves, treedef = tree_flatten(args)
    return (treedef, tuple([(shape_of(a), dtype_of(a)) for a in leaves]))


def _extra_jacobian(f: Callable, argnums, mode: str) -> Callable:
    """A registered mode's Jacobian, through the active leaves when the arguments are trees."""
    extra = registered(mode, "jacobian")

    @functools.wraps(f)
    def jacobian_by_mode(*args):
        flat = Flat(args, argnums, "jacobian")
        out = flat.call(f, flat.leaves)
        no_none(out, "jacobian")
        out_leaves, out_def = tree_flatten(out)
        if flat.simple and out_def.kind is None:
            return extra(f, argnums)(*args)
        every_leaf = tuple(range(len(flat.leaves)))
        blocks = []
        for j, leaf in enumerate(out_leaves):
            if is_static_output(leaf):
                blocks.append(None)
                continue

            def output_leaf(*active, j=j):
                return tree_leaves(flat.call(f, active))[j]

            blocks.append(extra(output_leaf, every_leaf)(*flat.leaves))
        return nest(out_def, blocks, flat)

    return jacobian_by_mode
