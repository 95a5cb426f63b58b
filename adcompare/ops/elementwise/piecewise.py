"""Piecewise functions: ``abs``, the larger and smaller of two arrays, ``where``, ``clip``.

Subgradient convention at non-smooth points, the same in both modes:

- ``abs``: derivative ``sign(x)``, so 0 at ``x = 0`` (numpy, PyTorch, JAX);
- ``maximum`` / ``minimum`` (and ``fmax`` / ``fmin``): at a tie each argument
  gets half (PyTorch, JAX);
- ``clip``: derivative 1 on the closed interval ``[lo, hi]``, 0 outside
  (PyTorch's ``clamp``);
- ``where``: the cotangent flows only to the branch that was selected.
"""

from __future__ import annotations

import builtins

import numpy as np
import sympy

from adcompare.ops.complex_parts import conj, real
from adcompare.ops.elementwise.arithmetic import negative
from adcompare.ops.links import elementwise_links
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    WIRTINGER,
    anywhere,
    defop,
    public_face,
    raw,
)


def _sign(x):
    # The derivative of sign(x) is zero wherever it exists, so it is a constant.
    return np.sign(raw(x))


def _modulus_slope(x):
    """``conj(z) / |z|`` for complex ``z``, 0 at 0: ``d|z| = Re(conj(z) dz) / |z|``.

    Unlike ``sign`` of a real number it is not constant, so it is built from
    ops (differentiable again); the modulus is made safe where it is 0.
    """
    modulus = abs(x)
    zero = raw(modulus) == 0
    if not anywhere(zero):
        return conj(x) / modulus
    return _select(0.0, conj(x) / _select(1.0, modulus, cond=zero), cond=zero)


def _abs_jvp(out, x, x_dot):
    if np.result_type(raw(x)).kind == "c":
        return real(_modulus_slope(x) * x_dot)
    return _sign(x) * x_dot


def _abs_vjp(out, x, out_bar):
    if np.result_type(raw(x)).kind == "c":
        return real(out_bar) * _modulus_slope(x)
    return out_bar * _sign(x)


abs = defop(
    "abs",
    np.abs,
    operators=("__abs__",),
    numpy=("abs", "absolute"),
    replay=builtins.abs,
    complex=WIRTINGER,
    elementwise=True,
    saves=("args",),
    method="abs",
    sym=sympy.Abs,
    jvp=_abs_jvp,
    vjp=_abs_vjp,
    doc="Absolute value (the modulus of complex numbers), elementwise; derivative "
    "``sign(x)`` (0 at ``x = 0``), ``conj(z) / |z|`` for complex ``z`` (see ``WIRTINGER``).",
    example="abs(-2.0) -> 2.0",
)


def _share(x, y):
    """Weight of ``x`` in ``maximum(x, y)``: 1 where it wins, 1/2 at a tie."""
    x, y = raw(x), raw(y)
    share = (x > y) + 0.5 * (x == y)
    return share.astype(np.result_type(x, y, np.float32), copy=False)


def _winner_sparsity(larger: bool):
    """Both arguments; with ``local``, only the one that wins at each element (both at a tie)."""

    def rule(out, x, y, *, local):
        if not local:
            return elementwise_links(out, x, y)
        first, second = (x, y) if larger else (y, x)
        return elementwise_links(
            out, x, y, keep=(_share(first, second) > 0, _share(second, first) > 0)
        )

    return rule


maximum = defop(
    "maximum",
    np.maximum,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    label="Maximum",
    sym=lambda x, y: sympy.Max(x, y),
    jvp=(
        lambda out, x, y, x_dot: _share(x, y) * x_dot,
        lambda out, x, y, y_dot: _share(y, x) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _share(x, y),
        lambda out, x, y, out_bar: out_bar * _share(y, x),
    ),
    doc="Larger of two arrays, elementwise; a tie splits the derivative evenly.",
    example="maximum(2.0, 3.0) -> 3.0",
    sparsity=_winner_sparsity(larger=True),
)

minimum = defop(
    "minimum",
    np.minimum,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    label="Minimum",
    sym=lambda x, y: sympy.Min(x, y),
    jvp=(
        lambda out, x, y, x_dot: _share(y, x) * x_dot,
        lambda out, x, y, y_dot: _share(x, y) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _share(y, x),
        lambda out, x, y, out_bar: out_bar * _share(x, y),
    ),
    doc="Smaller of two arrays, elementwise; a tie splits the derivative evenly.",
    example="minimum(2.0, 3.0) -> 2.0",
    sparsity=_winner_sparsity(larger=False),
)


def _fshare(x, y):
    """Weight of ``x`` in ``fmax(x, y)``: as :func:`_share`, and 1 where only ``y`` is NaN."""
    x, y = raw(x), raw(y)
    share = (x > y) + 0.5 * (x == y) + (np.isnan(y) & ~np.isnan(x))
    return share.astype(np.result_type(x, y, np.float32), copy=False)


fmax = defop(
    "fmax",
    np.fmax,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    sym=lambda x, y: sympy.Max(x, y),
    jvp=(
        lambda out, x, y, x_dot: _fshare(x, y) * x_dot,
        lambda out, x, y, y_dot: _fshare(y, x) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _fshare(x, y),
        lambda out, x, y, out_bar: out_bar * _fshare(y, x),
    ),
    sparsity=_winner_sparsity(larger=True),
    doc="Larger of two arrays, elementwise, ignoring NaN (a NaN loses); a tie splits evenly.",
    example="fmax(2.0, float('nan')) -> 2.0",
)

fmin = defop(
    "fmin",
    np.fmin,
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    nargs=2,
    elementwise=True,
    saves=("args",),
    sym=lambda x, y: sympy.Min(x, y),
    jvp=(
        lambda out, x, y, x_dot: _fshare(negative(x), negative(y)) * x_dot,
        lambda out, x, y, y_dot: _fshare(negative(y), negative(x)) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar * _fshare(negative(x), negative(y)),
        lambda out, x, y, out_bar: out_bar * _fshare(negative(y), negative(x)),
    ),
    sparsity=_winner_sparsity(larger=False),
    doc="Smaller of two arrays, elementwise, ignoring NaN (a NaN loses); a tie splits evenly.",
    example="fmin(2.0, float('nan')) -> 2.0",
)


def _prepare_where(x, y, *, cond):
    return {"cond": np.asanyarray(raw(cond), dtype=bool)}  # a vmap's BatchArray stays one


def _choose(x, y, cond):
    # where's replay kernel on single numbers.
    return x if cond else y


def _where_sparsity(out, x, y, *, local, cond):
    """Both branches; with ``local``, the branch ``cond`` chooses."""
    return elementwise_links(out, x, y, keep=(cond, ~cond) if local else None)


_select = defop(
    "where",
    lambda x, y, cond: np.where(cond, x, y),
    replay=_choose,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    prepare=_prepare_where,
    label="Where",
    test_params=lambda shape, rng: {"cond": rng.random(shape) > 0.5},
    sym=lambda x, y, cond: x if cond else y,
    jvp=(
        lambda out, x, y, x_dot, cond: _select(x_dot, 0.0, cond=cond),
        lambda out, x, y, y_dot, cond: _select(0.0, y_dot, cond=cond),
    ),
    vjp=(
        lambda out, x, y, out_bar, cond: _select(out_bar, 0.0, cond=cond),
        lambda out, x, y, out_bar, cond: _select(0.0, out_bar, cond=cond),
    ),
    doc="``x`` where ``cond`` holds, else ``y`` (the condition as a keyword).",
    sparsity=_where_sparsity,
)


@public_face(_select)
def where(cond, x, y):
    """``x`` where ``cond`` is true, else ``y``, elementwise (like ``np.where``).

    The condition is not differentiated; the derivative flows only into the
    branch that was chosen at each element.

    >>> print(where([True, False], [1.0, 2.0], [10.0, 20.0]))
    [ 1. 20.]
    """
    return _select(x, y, cond=cond)


def _prepare_clip(x, lo=None, hi=None):
    return {"lo": lo, "hi": hi}


def _inside(x, lo, hi):
    x = raw(x)
    mask = np.ones_like(x, dtype=bool)
    if lo is not None:
        mask = mask & (x >= lo)
    if hi is not None:
        mask = mask & (x <= hi)
    return mask


def _sym_clip(x, lo, hi):
    # Piecewise rather than Min(Max(...)): its derivative is 1 on the closed
    # interval, the engines' convention (Heaviside would give 1/2 at a bound).
    pieces = []
    if lo is not None:
        pieces.append((lo, x < lo))
    if hi is not None:
        pieces.append((hi, x > hi))
    return sympy.Piecewise(*pieces, (x, True))


def _clip_sparsity(out, x, *, local, lo, hi):
    """The element; with ``local``, only where it lies inside the bounds."""
    return elementwise_links(out, x, keep=(_inside(x, lo, hi),) if local else None)


clip = defop(
    "clip",
    lambda x, lo, hi: np.clip(x, lo, hi),
    replay=ARRAY_ONLY,
    complex="compares complex numbers",
    elementwise=True,
    saves=("args",),
    prepare=_prepare_clip,
    method="clip",
    label="Clamp",
    test_params=lambda shape, rng: {"lo": -0.5, "hi": 0.7},
    sym=_sym_clip,
    jvp=lambda out, x, x_dot, lo, hi: _select(x_dot, 0.0, cond=_inside(x, lo, hi)),
    vjp=lambda out, x, out_bar, lo, hi: _select(out_bar, 0.0, cond=_inside(x, lo, hi)),
    doc=(
        "Limit values to ``[lo, hi]`` (either bound may be ``None``); the bounds are "
        "constants. Derivative 1 on the closed interval, 0 outside."
    ),
    example="clip(5.0, 0.0, 1.0) -> 1.0",
    sparsity=_clip_sparsity,
)
