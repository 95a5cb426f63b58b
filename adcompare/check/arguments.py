"""Flat views of the differentiated arguments, and the checks of what ``f`` returns."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from adcompare import symbolic
from adcompare.ops.registry import Box


def _flatten(args: Sequence, positions: Sequence[int]) -> np.ndarray:
    parts = [np.asarray(args[p], dtype=np.float64).ravel() for p in positions]
    return np.concatenate(parts) if parts else np.zeros(0)


def _unflatten(z, args: Sequence, positions: Sequence[int]) -> list:
    """``args`` with the differentiated positions replaced from the flat vector ``z``."""
    out = list(args)
    start = 0
    for p in positions:
        shape = np.shape(args[p])
        size = math.prod(shape)
        out[p] = z[start : start + size].reshape(shape)
        start += size
    return out


def _split_columns(matrix: np.ndarray, lead: tuple, args, positions) -> list:
    """Split the last axis of ``matrix`` (flat inputs) into one block per position."""
    blocks, start = [], 0
    for p in positions:
        shape = np.shape(args[p])
        size = math.prod(shape)
        blocks.append(matrix[..., start : start + size].reshape(lead + shape))
        start += size
    return blocks


def _argnums(argnums, args: tuple, name: str) -> tuple[int, ...]:
    positions = symbolic.argument_positions(argnums, args, name)
    if not positions:
        raise ValueError(
            f"{name}: no argument to differentiate (by default every real floating argument "
            "is); pass argnums= to choose"
        )
    return positions


def _pack(blocks: list, argnums, order: int):
    """Blocks in the shape the transforms return: one, a tuple, or a tuple of tuples."""
    many = isinstance(argnums, (tuple, list))
    if order == 1:
        return tuple(blocks) if many else blocks[0]
    n = math.isqrt(len(blocks))
    rows = tuple(tuple(blocks[i * n : (i + 1) * n]) for i in range(n))
    return rows if many else rows[0][0]


def _value(f, args) -> np.ndarray:
    out = f(*args)
    if out is None:
        raise TypeError(
            "the function returned None: did it forget a `return`? Return the value "
            "to differentiate (a number or an array)"
        )
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(
            f"the function returned a {type(out).__name__}; return a single array "
            "(stack or concatenate the outputs)"
        )
    if isinstance(out, Box):
        raise TypeError("the function returned a boxed value for plain inputs")
    out = np.asarray(out)
    if not np.issubdtype(out.dtype, np.number) and out.dtype != np.bool_:
        raise TypeError(
            f"the function returned a {out.dtype} value ({_short_repr(out)}); return a "
            "number or a numeric array"
        )
    return out


def _short_repr(value) -> str:
    text = repr(value.item() if value.ndim == 0 else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_scalar(shape, what: str) -> None:
    if math.prod(shape) != 1:
        raise ValueError(
            f"{what} needs a function with a scalar output, but this one returned shape "
            f"{tuple(shape)}; reduce the output (e.g. with sum) first"
        )


def _hessian_blocks(hess: np.ndarray, args, positions) -> list:
    """Cut a flat Hessian into blocks ``H[p][q]`` shaped ``x_p.shape + x_q.shape``, row order."""
    shapes = [np.shape(args[p]) for p in positions]
    offsets = np.cumsum([0] + [math.prod(s) for s in shapes])
    return [
        hess[offsets[i] : offsets[i + 1], offsets[j] : offsets[j + 1]].reshape(
            shapes[i] + shapes[j]
        )
        for i in range(len(shapes))
        for j in range(len(shapes))
    ]
