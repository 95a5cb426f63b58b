"""Discrete calculus on samples, as composites: ``gradient``, ``trapezoid``, ``polyval``,
``interp``, ``convolve``, and the bin finders ``searchsorted`` and ``digitize``.

Each is written with numpy's own formula, so its value is numpy's and its
derivatives follow from the primitives. ``searchsorted`` and ``digitize``
return positions: piecewise constant in their arguments, so their derivative
is zero, and their result is a plain integer array that carries none.
"""

from __future__ import annotations

import string

import numpy as np

from adcompare.ops.complex_parts import refuse_complex
from adcompare.ops.construction import array
from adcompare.ops.contraction import einsum
from adcompare.ops.elementwise import add, divide, multiply, subtract, where
from adcompare.ops.joining import concatenate
from adcompare.ops.rearrange import _gather, take
from adcompare.ops.reductions import sum
from adcompare.ops.registry import (
    INDEX,
    Box,
    Decision,
    array_of,
    composite,
    ndim_of,
    normalize_axes,
    raw,
    shape_of,
)
from adcompare.ops.shape import getitem, reshape, transpose
from adcompare.ops.statistics import diff
from adcompare.runtime.batch_arrays import BatchArray, rebox


def _along(axis: int, index, ndim: int) -> tuple:
    """An index that takes ``index`` along ``axis`` (negative) and everything elsewhere."""
    return (Ellipsis, index) + (slice(None),) * (-1 - axis) if ndim else (index,)


def _stencil(f, axis: int, terms) -> Box | np.ndarray:
    """``Σ coefficient · f[part]`` along ``axis``, for ``(coefficient, part)`` in ``terms``;
    a coefficient is a number or a 1-D array along ``axis``."""
    n = ndim_of(f)
    out = None
    for coefficient, part in terms:
        if np.ndim(coefficient):
            coefficient = np.reshape(coefficient, (-1,) + (1,) * (-1 - axis))
        term = multiply(getitem(f, _along(axis, part, n)), coefficient)
        out = term if out is None else add(out, term)
    return out


def _spacing(varargs, shape, axes) -> list:
    """One spacing per axis: a number, or the coordinates' differences (numpy's forms)."""
    if any(isinstance(v, Box) for v in varargs):
        raise ValueError(
            "gradient: the spacing carries a derivative; give it as constants (the "
            "derivative is taken in the sampled values only)"
        )
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [float(varargs[0])] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError(
            f"gradient: {len(varargs)} spacings for {len(axes)} axes; give one per axis"
        )
    spacings = []
    for value, axis in zip(varargs, axes):
        value = np.asarray(value, dtype=float)
        if value.ndim == 0:
            spacings.append(float(value))
            continue
        if value.shape != (shape[axis],):
            raise ValueError(
                f"gradient: coordinates of shape {value.shape} along an axis of {shape[axis]}"
            )
        steps = np.diff(value)
        spacings.append(float(steps[0]) if np.all(steps == steps[0]) else steps)
    return spacings


def _derivative_along(f, axis: int, step, edge_order: int):
    """numpy's second-order differences inside, first or second order at the edges."""
    if np.ndim(step) == 0:
        inner = divide(
            _stencil(f, axis, [(1.0, slice(2, None)), (-1.0, slice(None, -2))]), 2.0 * step
        )
        if edge_order == 1:
            first = [(-1.0 / step, 0), (1.0 / step, 1)]
            last = [(-1.0 / step, -2), (1.0 / step, -1)]
        else:
            first = [(-1.5 / step, 0), (2.0 / step, 1), (-0.5 / step, 2)]
            last = [(0.5 / step, -3), (-2.0 / step, -2), (1.5 / step, -1)]
    else:
        d1, d2 = step[:-1], step[1:]
        inner = _stencil(
            f,
            axis,
            [
                (-d2 / (d1 * (d1 + d2)), slice(None, -2)),
                ((d2 - d1) / (d1 * d2), slice(1, -1)),
                (d1 / (d2 * (d1 + d2)), slice(2, None)),
            ],
        )
        first, last = _edges(step, edge_order)
    edge = lambda terms: _stencil(f, axis, [(c, slice(i, i + 1 or None)) for c, i in terms])
    return concatenate([edge(first), inner, edge(last)], axis=axis)


def _edges(step, edge_order: int):
    if edge_order == 1:
        return [(-1.0 / step[0], 0), (1.0 / step[0], 1)], [
            (-1.0 / step[-1], -2),
            (1.0 / step[-1], -1),
        ]
    d1, d2 = step[0], step[1]
    first = [
        (-(2.0 * d1 + d2) / (d1 * (d1 + d2)), 0),
        ((d1 + d2) / (d1 * d2), 1),
        (-d1 / (d2 * (d1 + d2)), 2),
    ]
    d1, d2 = step[-2], step[-1]
    last = [
        (d2 / (d1 * (d1 + d2)), -3),
        (-(d2 + d1) / (d1 * d2), -2),
        ((2.0 * d2 + d1) / (d2 * (d1 + d2)), -1),
    ]
    return first, last


@composite(cases=[(((5,),), {}), (((4, 5),), {"axis": 1, "edge_order": 2})])
def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """The gradient of sampled values by central differences, as ``np.gradient``.

    Spacings are numbers or coordinate arrays, one for all axes or one per
    axis, and are constants; the derivative is taken in ``f``, in which the
    result is linear. One array per axis (a tuple for several).

    >>> print(gradient(np.array([1.0, 4.0, 9.0, 16.0])))
    [3. 4. 6. 7.]
    """
    f = array_of(f)
    axes = normalize_axes(axis, ndim_of(f))
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order={edge_order!r}; give 1 or 2")
    shape = shape_of(f)
    for a in axes:
        if shape[a] < edge_order + 1:
            raise ValueError(
                f"gradient: an axis of {shape[a]} samples is too short for edge_order="
                f"{edge_order}; it needs at least {edge_order + 1}"
            )
    steps = _spacing(varargs, shape, axes)
    out = tuple(_derivative_along(f, a, s, edge_order) for a, s in zip(axes, steps))
    return out[0] if len(out) == 1 else out


@composite(cases=[(((3, 5),), {}), (((5,), (5,)), {}), (((4, 3),), {"dx": 0.5, "axis": 0})])
def trapezoid(y, x=None, dx: float = 1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, as ``np.trapezoid``;
    the sample points ``x`` may carry a derivative too.

    >>> print(trapezoid(np.array([1.0, 2.0, 3.0])))
    4.0
    """
    y = array_of(y)
    n = ndim_of(y)
    (axis,) = normalize_axes(axis, n)
    if x is None:
        width = dx
    elif ndim_of(x) == 1:
        width = reshape(diff(x), (-1,) + (1,) * (-1 - axis))
    else:
        width = diff(x, axis=axis)
    pairs = add(
        getitem(y, _along(axis, slice(1, None), n)), getitem(y, _along(axis, slice(None, -1), n))
    )
    return sum(divide(multiply(width, pairs), 2.0), axis=axis)


@composite(cases=[(((4,), (3, 2)), {}), (((3,), (5,)), {})])
def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's
    rule as ``np.polyval``; differentiable in the coefficients and in ``x``.

    >>> print(polyval([1.0, 0.0, -1.0], 3.0))
    8.0
    """
    p = array(p) if isinstance(p, (list, tuple)) else array_of(p)
    x = array_of(x)
    out = np.zeros(shape_of(x))
    for i in range(shape_of(p)[0]):
        out = add(multiply(out, x), getitem(p, i))
    return out


def _bins_of_x(x, xp, **params):
    return np.searchsorted(xp, x, side="right")


def _bins_of_xp(xp, x, **params):
    return np.searchsorted(xp, x, side="right")


@composite(
    cases=[
        (((7,),), {"xp": np.array([0.1, 0.3, 0.5, 0.9]), "fp": np.array([1.0, -1.0, 0.5, 2.0])})
    ],
    domain=(0.0, 1.0),
    decided_by_values=(Decision(INDEX, "x", _bins_of_x), Decision(INDEX, "xp", _bins_of_xp)),
)
def interp(x, xp, fp, left=None, right=None, period=None):
    """The piecewise-linear interpolant through ``(xp, fp)`` at ``x``, as ``np.interp``
    (``xp`` increasing; ``left``/``right`` outside it, ``fp``'s ends by default).

    Differentiable in ``x`` (the slope of its segment; at a knot, the segment to the
    right), in ``fp`` and in ``xp``; ``period`` is refused.

    >>> print(interp(np.array([0.5, 2.5]), np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 4.0])))
    [1.  3.5]
    """
    if period is not None:
        raise ValueError(
            "interp: period= is not supported; reduce x and xp modulo the period first"
        )
    x, xp, fp = array_of(x), array_of(xp), array_of(fp)
    refuse_complex(x, "interp")
    refuse_complex(xp, "interp")
    if ndim_of(xp) != 1 or shape_of(xp) != shape_of(fp) or not shape_of(xp)[0]:
        raise ValueError("interp: xp and fp must be 1-D, non-empty and of the same length")
    n = shape_of(xp)[0]
    first, last = getitem(fp, 0), getitem(fp, n - 1)
    if n == 1:
        inside = multiply(np.ones(shape_of(x)), first)
    else:
        # ufuncs, not np.clip: inside vmap the positions keep their batch axis
        j = np.minimum(np.maximum(np.searchsorted(raw(xp), raw(x), side="right") - 1, 0), n - 2)
        x0, x1, f0, f1 = getitem(xp, j), getitem(xp, j + 1), getitem(fp, j), getitem(fp, j + 1)
        slope = divide(subtract(f1, f0), subtract(x1, x0))
        inside = add(multiply(slope, subtract(x, x0)), f0)
    x_first, x_last = getitem(xp, 0), getitem(xp, n - 1)
    out = where(x == x_last, last, inside)
    out = where(x > x_last, last if right is None else right, out)
    return where(x < x_first, first if left is None else left, out)


def _convolution_positions(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """For the full convolution of lengths ``n`` and ``m``: per output, the 1-based positions
    of the pairs it sums (0 where a pair falls outside)."""
    k = np.arange(n + m - 1)[:, None]
    j = np.arange(n)[None, :]
    inside = (k - j >= 0) & (k - j < m)
    return np.where(inside, j + 1, 0), np.where(inside, k - j + 1, 0)


@composite(
    cases=[(((5,), (3,)), {}), (((3,), (4,)), {"mode": "same"}), (((6,), (3,)), {"mode": "valid"})]
)
def convolve(a, v, mode: str = "full", axes=None, dot_axes=((), ())):
    """The discrete linear convolution, as ``np.convolve`` for two 1-D arrays (``mode``
    'full', 'same' or 'valid'); differentiable in both.

    Given ``axes`` or arrays of more than one axis, it is autograd's
    ``scipy.signal.convolve``: ``a``'s axes ``axes[0]`` convolved with ``v``'s
    ``axes[1]`` (all of ``a``'s, paired in order, by default), ``dot_axes`` summed
    over as ``tensordot`` does; the result's axes are ``a``'s others, ``v``'s
    others, then the convolved ones ('full', 'same': ``a``'s length, centred, or
    'valid'; for arrays of the same number of axes and no ``dot_axes``,
    ``scipy.signal.convolve``'s value).

    >>> print(convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])))
    [0.  1.  2.5 4.  1.5]
    """
    a, v = array_of(a), array_of(v)
    if axes is not None or any(dot_axes) or ndim_of(a) != 1 or ndim_of(v) != 1:
        return _convolve_axes(a, v, mode, axes, dot_axes)
    if not shape_of(a)[0] or not shape_of(v)[0]:
        raise ValueError("convolve: give two non-empty arrays")
    n, m = shape_of(a)[0], shape_of(v)[0]
    a_at, v_at = _convolution_positions(n, m)
    full = sum(multiply(_gather(a, a_at), _gather(v, v_at)), axis=-1)
    short, long = sorted((n, m))
    if mode == "full":
        return full
    if mode == "same":
        start = (short - 1) // 2
        return getitem(full, slice(start, start + long))
    if mode == "valid":
        return getitem(full, slice(short - 1, long))
    raise ValueError(f"convolve: mode={mode!r}; give 'full', 'same' or 'valid'")


def _convolve_axes(a, b, mode: str, axes, dot_axes):
    """The convolution over ``axes`` with ``dot_axes`` summed: ``b``'s convolved axes are
    spread into (output position, ``a``'s position) windows, zero outside, and one
    ``einsum`` sums the products."""
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode={mode!r}; give 'full', 'same' or 'valid'")
    na, nb = ndim_of(a), ndim_of(b)
    a_axes, b_axes = (
        [int(i) % n for i in part] for part, n in zip(axes or (range(na),) * 2, (na, nb))
    )
    a_dot, b_dot = ([int(i) % n for i in part] for part, n in zip(dot_axes, (na, nb)))
    if len(a_axes) != len(b_axes) or len(a_dot) != len(b_dot):
        raise ValueError("convolve: axes and dot_axes must pair as many axes of each array")
    letters = iter(string.ascii_letters)
    a_letters = [next(letters) for _ in range(na)]
    b_letters = [
        a_letters[a_dot[b_dot.index(i)]] if i in b_dot else next(letters) for i in range(nb)
    ]
    kept_b = [i for i in range(nb) if i not in b_axes]
    windows = transpose(b, (*kept_b, *b_axes))
    outputs = []
    for i, (axis_a, axis_b) in enumerate(zip(a_axes, b_axes)):
        n, m = shape_of(a)[axis_a], shape_of(b)[axis_b]
        # the outputs kept of the full convolution's n + m - 1: 'same' keeps a's n, centred
        count, offset = {
            "full": (n + m - 1, 0),
            "same": (n, (m - 1) // 2),
            "valid": (abs(n - m) + 1, min(n, m) - 1),
        }[mode]
        index = np.arange(count)[:, None] + offset - np.arange(n)[None, :]
        inside = (index >= 0) & (index < m)
        at = len(kept_b) + 2 * i
        windows = take(windows, np.clip(index, 0, m - 1), axis=at)
        later = len(a_axes) - i - 1
        windows = where(inside.reshape(inside.shape + (1,) * later), windows, 0.0)
        outputs.append(next(letters))
        b_letters.append(outputs[-1] + a_letters[axis_a])
    ignored_a = [a_letters[i] for i in range(na) if i not in a_axes and i not in a_dot]
    ignored_b = [b_letters[i] for i in kept_b if i not in b_dot]
    kept_letters = "".join(b_letters[i] for i in kept_b) + "".join(b_letters[nb:])
    out = "".join(ignored_a + ignored_b + outputs)
    return einsum(f"{''.join(a_letters)},{kept_letters}->{out}", a, windows)


def _positions_of_a(a, v, side="left", sorter=None):
    return np.searchsorted(a, v, side=side, sorter=sorter)


def _positions_of_v(v, a, side="left", sorter=None):
    return np.searchsorted(a, v, side=side, sorter=sorter)


@composite(
    cases=[(((6,),), {"v": np.array([-0.5, 0.1, 0.7, 1.5])})],
    decided_by_values=(
        Decision(INDEX, "a", _positions_of_a),
        Decision(INDEX, "v", _positions_of_v),
    ),
)
def searchsorted(a, v, side: str = "left", sorter=None):
    """Where ``v``'s elements would go in the sorted ``a``, as ``np.searchsorted``.

    Piecewise constant in both arguments: its derivative is zero, and its result
    a plain integer array.

    >>> print(searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.5, 0.0])))
    [2 0]
    """
    return _positions(
        np.searchsorted(raw(a), raw(v), side=side, sorter=None if sorter is None else raw(sorter))
    )


def _bins_of_values(x, bins, right=False):
    return np.digitize(x, bins, right=right)


def _bins_of_edges(bins, x, right=False):
    return np.digitize(x, bins, right=right)


@composite(
    cases=[(((6,),), {"bins": np.array([-1.0, 0.0, 0.5, 1.5])})],
    decided_by_values=(
        Decision(INDEX, "x", _bins_of_values),
        Decision(INDEX, "bins", _bins_of_edges),
    ),
)
def digitize(x, bins, right: bool = False):
    """The bin each of ``x``'s elements falls in, as ``np.digitize``.

    Piecewise constant: its derivative is zero, and its result a plain integer array.

    >>> print(digitize(np.array([0.5, 2.5]), np.array([0.0, 1.0, 2.0])))
    [1 3]
    """
    return _positions(np.digitize(raw(x), raw(bins), right=right))


def _positions(found):
    """Positions found from values: plain, or inside ``vmap`` batched (one per example)."""
    return rebox(found) if isinstance(found, BatchArray) else found
