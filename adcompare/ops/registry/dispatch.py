"""The path every op call takes: to the engine of the highest-level box, or to numpy."""

from __future__ import annotations

import itertools

import numpy as np

from adcompare.ops.registry.records import COMPLEX_RULES, Box, ComplexNotSupportedError, OpDef
from adcompare.ops.registry.values import shape_of
from adcompare.runtime import buffers, cost
from adcompare.runtime.batch_arrays import BatchArray, rebox
from adcompare.runtime.hooks import RECORDING_HOOKS

_LEVELS = itertools.count(1)


def new_level() -> int:
    """A fresh nesting level, higher than every level handed out before.

    A transform called inside another gets a higher level, so its boxes wrap
    the outer transform's boxes: that is what keeps nested perturbations
    apart.
    """
    return next(_LEVELS)


def apply(op: OpDef, args: tuple, params: dict):
    """Run ``op`` on ``args``: the engine of the highest-level box handles it."""
    top = None
    for a in args:
        if isinstance(a, Box) and (top is None or a._level > top._level):
            top = a
    if top is None:
        return apply_plain(op, args, params)
    return top._apply(op, top._level, args, params)


def apply_plain(op: OpDef, args: tuple, params: dict):
    """Run ``op`` on arguments that hold no box: its numpy value, counted.

    An engine whose arguments' values are plain calls this directly, skipping
    ``apply``'s search for the highest box.
    """
    if RECORDING_HOOKS:
        recorded = RECORDING_HOOKS[-1](op, args, params)
        if recorded is not None:
            return recorded
    into = op.hints.into
    try:
        out = None if into is None else buffers.run_into(into, args, params)
        if out is None:
            out = op.value(*args, **params)
    except (TypeError, ValueError) as error:
        if op.complex not in COMPLEX_RULES and any(np.iscomplexobj(a) for a in args):
            raise complex_error(op) from None
        if isinstance(error, TypeError):
            raise
        shapes = ", ".join(str(shape_of(a)) for a in args)
        raise ValueError(f"{op.name}: {error} (argument shapes {shapes})") from None
    if op.complex not in COMPLEX_RULES and np.result_type(out).kind == "c":
        # numpy computed a complex value (maximum, sign, round) that the rules do not hold for.
        raise complex_error(op)
    if cost._ACTIVE:
        cost.record_numpy(op, args, out)
    if type(out) is not np.ndarray and isinstance(out, BatchArray):
        return rebox(out)  # computed from a value read inside vmap
    return out


def complex_error(op: OpDef) -> ComplexNotSupportedError:
    """The error for complex input to an op whose rules do not hold for it."""
    reason = op.complex or "declares no complex support (see OpDef.complex)"
    return ComplexNotSupportedError(f"{op.name} {reason}: it takes no complex input")


def mixed_levels_error(op: OpDef, engine: str, other: Box) -> TypeError:
    """The error for two engines' boxes meeting at one nesting level."""
    return TypeError(
        f"{op.name}: cannot combine a {engine} and a {type(other).__name__} at the same "
        "nesting level; nest them (Dual(Tensor(...), ...)) or use the transforms"
    )
