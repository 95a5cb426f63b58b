"""The path every op call takes: to the engine of the highest-level box, or to numpy."""

from __future__ import annotations

import itertools

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.ops.registry.records import ComplexNotSupportedError, OpDef
from adcompare.ops.registry.values import shape_of
from adcompare.runtime import buffers, cost
from adcompare.runtime.batch_arrays import BatchArray, rebox
from adcompare.runtime.boxes import Box
from adcompare.runtime.buffers import POOLED_FROM_BYTES
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
        if isinstance(a, Box) and (top is None or a.level > top.level):
            top = a
    if top is None:
        return apply_plain(op, args, params)
    return top.apply_op(op, top.level, args, params)


def apply_plain(op: OpDef, args: tuple, params: dict):
    """Run ``op`` on arguments that hold no box: its numpy value, counted.

    An engine whose arguments' values are plain calls this directly, skipping
    ``apply``'s search for the highest box.
    """
    # Runs once per op application in every engine: each test below is ordered
    # so that the common case (small plain arrays, nothing recording or
    # counting) pays for as few lookups as possible.
    if RECORDING_HOOKS:
        recorded = RECORDING_HOOKS[-1](op, args, params)
        if recorded is not None:
            return recorded
    into = op.into
    try:
        # Only arrays from POOLED_FROM_BYTES on can take a cached buffer.
        if into is not None and (
            not args or type(first := args[0]) is not ndarray or first.nbytes >= POOLED_FROM_BYTES
        ):
            out = buffers.run_into(into, args, params)
            if out is None:
                out = op.value(*args, **params)
        else:
            out = op.value(*args, **params)
    except (TypeError, ValueError) as error:
        if not op.takes_complex and any(np.iscomplexobj(a) for a in args):
            raise complex_error(op) from None
        if isinstance(error, TypeError):
            raise
        shapes = ", ".join(str(shape_of(a)) for a in args)
        raise ValueError(f"{op.name}: {error} (argument shapes {shapes})") from None
    if type(out) is ndarray:
        if not op.takes_complex and out.dtype.kind == "c":
            # numpy computed a complex value (maximum, sign, round) that the rules do not hold for.
            raise complex_error(op)
    else:
        if not op.takes_complex and np.result_type(out).kind == "c":
            raise complex_error(op)
        if isinstance(out, BatchArray):
            if cost.ACTIVE:
                cost.record_numpy(op, args, out)
            return rebox(out)  # computed from a value read inside vmap
    if cost.ACTIVE:
        cost.record_numpy(op, args, out)
    return out


def complex_error(op: OpDef) -> ComplexNotSupportedError:
    """The error for complex input to an op whose rules do not hold for it."""
    reason = op.complex or "declares no complex support (see OpDef.complex)"
    return ComplexNotSupportedError(f"{op.name} {reason}: it takes no complex input")
