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
    # |x| at 0: the subgradient 0, sign(0).
    kinks=((0.0, 0.0),),
    doc="Absolute value (the modulus of complex numbers), elementwise; derivative "
    "``sign(x)`` (0 at ``x = 0``), ``conj(z) / |z|`` for complex ``z`` (see ``WIRTINGER``).",
    example="abs(-2.0) -> 2.0",
)


def _weight(x, y, *, larger: bool, ignore_nan: bool):
    """Weight of ``x`` in the larger (or smaller) of ``x`` and ``y``: 1 where it wins, 1/2
    at a tie; ignoring NaN (``fmax``, ``fmin``), also 1 where only ``y`` is NaN."""
    x, y = raw(x), raw(y)
    share = ((x > y) if larger else (x < y)) + 0.5 * (x == y)
    if ignore_nan:
        share = share + (np.isnan(y) & ~np.isnan(x))
    return share.astype(np.result_type(x, y, np.float32), copy=False)


def _winner_sparsity(larger: bool):
    """Both arguments; with ``local``, only the one that wins at each element (both at a tie)."""

    def rule(out, x, y, *, local):
        if not local:
            return elementwise_links(out, x, y)
        keep = tuple(
            _weight(a, b, larger=larger, ignore_nan=False) > 0 for a, b in ((x, y), (y, x))
        )
        return elementwise_links(out, x, y, keep=keep)

    return rule


def _extremum(name, value, *, larger: bool, ignore_nan: bool, **fields):
    """The larger (or smaller) of two arrays, elementwise: each argument's derivative is
    weighted by where it wins, and a tie splits it evenly (PyTorch, JAX)."""

    def weight(x, y):
        return _weight(x, y, larger=larger, ignore_nan=ignore_nan)

    return defop(
        name,
        value,
        replay=ARRAY_ONLY,
        complex="compares complex numbers",
        nargs=2,
        elementwise=True,
        saves=("args",),
        sym=(lambda x, y: sympy.Max(x, y)) if larger else (lambda x, y: sympy.Min(x, y)),
        slope=(
            lambda out, x, y: weight(x, y),
            lambda out, x, y: weight(y, x),
        ),
        sparsity=_winner_sparsity(larger),
        kinks=(((1.0, 1.0), (0.5, 0.5)),),  # a tie splits the derivative evenly
        **fields,
    )


maximum = _extremum(
    "maximum",
    np.maximum,
    larger=True,
    ignore_nan=False,
    doc="Larger of two arrays, elementwise; a tie splits the derivative evenly.",
    example="maximum(2.0, 3.0) -> 3.0",
)

minimum = _extremum(
    "minimum",
    np.minimum,
    larger=False,
    ignore_nan=False,
    doc="Smaller of two arrays, elementwise; a tie splits the derivative evenly.",
    example="minimum(2.0, 3.0) -> 2.0",
)

fmax = _extremum(
    "fmax",
    np.fmax,
    larger=True,
    ignore_nan=True,
    doc="Larger of two arrays, elementwise, ignoring NaN (a NaN loses); a tie splits evenly.",
    example="fmax(2.0, float('nan')) -> 2.0",
)

fmin = _extremum(
    "fmin",
    np.fmin,
    larger=False,
    ignore_nan=True,
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


def _prepare_clip(x, lo=None, hi=None, *, a_min=None, a_max=None, min=None, max=None):
    """The bounds, given as ``lo``, ``hi`` or by numpy's names (``a_min``, ``a_max``;
    numpy 2's ``min``, ``max``)."""
    bounds = {}
    for bound, names in (
        ("lo", {"lo": lo, "a_min": a_min, "min": min}),
        ("hi", {"hi": hi, "a_max": a_max, "max": max}),
    ):
        given = {name: value for name, value in names.items() if value is not None}
        if len(given) > 1:
            raise TypeError(f"clip: {' and '.join(given)} name the same bound; give one of them")
        bounds[bound] = next(iter(given.values()), None)
    return bounds


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
