"""Linear algebra primitives: matmul (1-D, 2-D and batched, as ``np.matmul``).

The rules follow numpy's promotion of 1-D operands: a 1-D left operand is a
row, a 1-D right operand a column, and the added axis is removed again.
"""

from __future__ import annotations

import operator

import numpy as np

from adcompare.ops.elementwise import multiply
from adcompare.ops.links import Links, element_numbers
from adcompare.ops.registry import (
    HOLOMORPHIC,
    Hints,
    defop,
    ndim_of,
    pad_lanes,
    shape_of,
    unbroadcast,
)
from adcompare.ops.shape import expand_dims, pad_batched, reshape, squeeze, transpose


def _prepare_matmul(x, y):
    xs, ys = shape_of(x), shape_of(y)
    if not xs or not ys:
        raise ValueError(
            f"matmul: operands must have at least one axis, got shapes {xs} and {ys}; "
            "use multiply for a scalar"
        )
    inner_x = xs[-1]
    inner_y = ys[0] if len(ys) == 1 else ys[-2]
    if inner_x != inner_y:
        raise ValueError(
            f"matmul: shapes {xs} and {ys} do not line up: {inner_x} columns "
            f"on the left against {inner_y} rows on the right"
        )
    return {}


def _swap_last(a):
    n = ndim_of(a)
    return transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


def _move_last_to_front(a):
    n = ndim_of(a)
    return transpose(a, (n - 1,) + tuple(range(n - 1)))


def _jvp_x(out, x, y, x_dot):
    if ndim_of(y) == 1:
        return matmul(x_dot, y)
    if ndim_of(x) == 1:
        # A 1-D row against batched matrices: make each lane a 1-row matrix.
        lanes = shape_of(x_dot)[:1]
        rows = reshape(x_dot, lanes + (1,) * (ndim_of(y) - 1) + shape_of(x))
        return squeeze(matmul(rows, y), -2)
    return matmul(pad_lanes(x_dot, ndim_of(x), ndim_of(out)), y)


def _jvp_y(out, x, y, y_dot):
    if ndim_of(y) == 1:
        # Contract against the transposed lanes, then put the lanes back in front.
        return _move_last_to_front(matmul(x, transpose(y_dot, (1, 0))))
    if ndim_of(x) == 1:
        return matmul(x, y_dot)
    return matmul(x, pad_lanes(y_dot, ndim_of(y), ndim_of(out)))


def _vjp_x(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(out_bar, transpose(y, (1, 0)))  # nothing broadcast: no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * y
    if ndim_of(x) == 1:
        row = matmul(expand_dims(out_bar, -2), _swap_last(y))
        return unbroadcast(squeeze(row, -2), shape_of(x))
    if ndim_of(y) == 1:
        return unbroadcast(multiply(expand_dims(out_bar, -1), y), shape_of(x))
    return unbroadcast(matmul(out_bar, _swap_last(y)), shape_of(x))


def _vjp_y(out, x, y, out_bar):
    if ndim_of(x) == 2 and ndim_of(y) == 2:
        return matmul(transpose(x, (1, 0)), out_bar)  # nothing broadcast: no unbroadcast
    if ndim_of(x) == 1 and ndim_of(y) == 1:
        return out_bar * x
    if ndim_of(x) == 1:
        return unbroadcast(expand_dims(x, -1) * expand_dims(out_bar, -2), shape_of(y))
    if ndim_of(y) == 1:
        column = matmul(_swap_last(x), expand_dims(out_bar, -1))
        return unbroadcast(squeeze(column, -1), shape_of(y))
    return unbroadcast(matmul(_swap_last(x), out_bar), shape_of(y))


def _matmul_sparsity(out, x, y, *, local):
    """``out[..., i, k]`` depends on row ``i`` of ``x`` and column ``k`` of ``y``;
    ``x[..., i, j]`` and ``y[..., j, k]`` interact in it (one product per ``j``)."""
    xs, ys = shape_of(x), shape_of(y)
    x_shape = xs if len(xs) > 1 else (1,) + xs
    y_shape = ys if len(ys) > 1 else ys + (1,)
    batch = np.broadcast_shapes(x_shape[:-2], y_shape[:-2])
    (m, inner), p = x_shape[-2:], y_shape[-1]
    grid = batch + (m, p, inner)
    rows = np.broadcast_to(element_numbers(batch + (m, p))[..., None], grid).ravel()
    a = np.broadcast_to(element_numbers(xs).reshape(x_shape)[..., :, None, :], grid).ravel()
    columns = np.swapaxes(element_numbers(ys).reshape(y_shape), -1, -2)
    b = np.broadcast_to(columns[..., None, :, :], grid).ravel()
    return Links(((rows, a), (rows, b)), ((0, 1, rows, a, b),))


def _batch(args, batched):
    """A batch of matrix products: 1-D operands become one-row or one-column matrices,
    and batched operands get size-1 axes after the batch axis so that numpy's
    broadcasting of the stack axes lines the examples up."""
    x, y = args
    x_vector = ndim_of(x) - batched[0] == 1
    y_vector = ndim_of(y) - batched[1] == 1
    if x_vector:
        x = expand_dims(x, -2)
    if y_vector:
        y = expand_dims(y, -1)
    rank = max(ndim_of(x) - batched[0], ndim_of(y) - batched[1])
    x, y = (pad_batched(a, rank) if b else a for a, b in zip((x, y), batched))
    out = matmul(x, y)
    if y_vector:
        out = squeeze(out, -1)
    if x_vector:
        out = squeeze(out, -1 if y_vector else -2)
    return out


matmul = defop(
    "matmul",
    np.matmul,
    batch=_batch,
    operators=("__matmul__", "__rmatmul__"),
    replay=operator.mul,
    complex=HOLOMORPHIC,
    nargs=2,
    saves=("args",),
    prepare=_prepare_matmul,
    cases=[
        (((3, 4), (4, 2)), {}),
        (((4,), (4, 2)), {}),
        (((3, 4), (4,)), {}),
        (((4,), (4,)), {}),
        (((2, 3, 4), (4, 5)), {}),
        (((2, 3, 4), (1, 4, 5)), {}),
        (((4,), (2, 4, 3)), {}),
        (((2, 3, 4), (4,)), {}),
    ],
    label="Mm",
    hints=Hints(
        vjp_reads=(("y",), ("x",)),  # each rule reads only the other operand's values
        work=lambda out, x, y: max(np.size(out), 1) * np.shape(x)[-1],
    ),
    sym=lambda x, y: np.matmul(np.asarray(x, dtype=object), np.asarray(y, dtype=object)),
    jvp=(_jvp_x, _jvp_y),
    vjp=(_vjp_x, _vjp_y),
    doc="Matrix product, as ``np.matmul`` and ``x @ y``: 1-D, 2-D and batched.",
    example="matmul([[1.0, 2.0]], [[3.0], [4.0]]) -> [[11.]]",
    sparsity=_matmul_sparsity,
)
