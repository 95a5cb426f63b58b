"""Derivatives by name: a mode, a composition of modes, or a reference."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from adcompare import symbolic, transforms
from adcompare.check.arguments import _check_scalar
from adcompare.check.numeric import complex_step, finite_differences
from adcompare.runtime.dtypes import as_float

#: Second-order modes: (outer Jacobian, inner gradient mode).
SECOND_ORDER_MODES = {
    "fwd-over-rev": ("forward", "reverse"),
    "rev-over-rev": ("reverse", "reverse"),
    "fwd-over-fwd": ("forward", "forward"),
    "rev-over-fwd": ("reverse", "forward"),
}
# With order=2, the plain mode names mean the pure compositions.
_PURE = {"forward": "fwd-over-fwd", "reverse": "rev-over-rev"}

NUMERIC_REFERENCES = ("fd", "complex_step")


def _mode_name(mode: str, order: int) -> str:
    if order == 2:
        return _PURE.get(mode, mode)
    if mode in SECOND_ORDER_MODES:
        raise ValueError(f"{mode!r} is a second-order mode; use it with order=2")
    return mode


def derivative_blocks(f: Callable, args: tuple, positions, mode: str, order: int, out_shape):
    """The derivative of ``f`` by ``mode`` as a flat list of blocks.

    Order 1: one Jacobian block per position, shaped ``out.shape + x.shape``.
    Order 2: blocks ``H[p][q]`` in row order, shaped ``x_p.shape + x_q.shape``.
    """
    argnums = tuple(positions)
    mode = _mode_name(mode, order)
    if order == 1:
        if mode == "fd":
            blocks = finite_differences(f, argnums)(*args)
        elif mode == "complex_step":
            blocks = complex_step(f, argnums)(*args)
        elif math.prod(out_shape) == 1:
            blocks = transforms.grad(f, argnums, mode=mode)(*args)
        else:
            blocks = transforms.jacobian(f, argnums, mode=mode)(*args)
        return [
            np.asarray(b).reshape(tuple(out_shape) + np.shape(args[p]))
            for b, p in zip(blocks, positions)
        ]
    _check_scalar(out_shape, "order=2")
    if mode == "fd":
        rows = finite_differences(f, argnums, order=2)(*args)
    elif mode == "complex_step":
        rows = complex_step(f, argnums, order=2)(*args)
    elif mode == "symbolic":
        rows = symbolic.hessian(f, argnums)(*args)
    elif mode in SECOND_ORDER_MODES:
        outer, inner = SECOND_ORDER_MODES[mode]
        jac = transforms.jacfwd if outer == "forward" else transforms.jacrev
        # Row p: the Jacobian (outer mode) of the gradient (inner mode) for argument p.
        rows = [jac(transforms.grad(f, p, mode=inner), argnums)(*args) for p in positions]
    else:
        known = ", ".join(repr(m) for m in ["forward", "reverse", *SECOND_ORDER_MODES, "symbolic"])
        raise ValueError(
            f"unknown second-order mode {mode!r}; use one of {known}, 'fd' or 'complex_step'"
        )
    return [
        np.asarray(block).reshape(np.shape(args[p]) + np.shape(args[q]))
        for p, row in zip(positions, rows)
        for q, block in zip(positions, row)
    ]


def _float64(args, positions) -> tuple:
    """The arguments with the differentiated ones in float64 (references are computed so)."""
    return tuple(
        as_float(a).astype(np.float64) if i in positions else a for i, a in enumerate(args)
    )


def _reference(f, args, positions, against, order, shape):
    exact = against in ("symbolic", *NUMERIC_REFERENCES)
    reference_args = _float64(args, positions) if exact else args
    return derivative_blocks(f, reference_args, positions, against, order, shape)
