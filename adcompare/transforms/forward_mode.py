"""Forward-mode transforms: tangent lanes seeded in chunks (jvp, jacfwd).

They speak to the forward engine through its interface only: ``seed`` an
input with tangent lanes at a nesting level, and ``lower`` an output to its
primal and lanes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from adcompare.engines.forward.interface import default_chunk, lower, seed
from adcompare.ops import concatenate, reshape, transpose
from adcompare.ops.registry import new_level, raw, shape_of
from adcompare.pytree import tree_flatten, tree_unflatten
from adcompare.runtime import cost
from adcompare.runtime.dtypes import as_float, float_dtype, in_dtype
from adcompare.transforms.arguments import (
    Flat,
    as_output,
    check_real_scalar,
    check_scalar_output,
    is_static_output,
    nest,
    no_none,
    replace_at,
    split_aux,
    strip,
)


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """``(f(*primals), J·tangents)`` in one forward pass.

    Primals and tangents may be pytrees of the same structure; the output
    tangent has the output's structure.

    >>> import adcompare as ad
    >>> out, tangent = ad.jvp(ad.sin, (0.0,), (2.0,))
    >>> print(out, tangent)
    0.0 2.0
    >>> ad.jvp(lambda p: p["a"] * p["b"], ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},))
    (array(6.), array(3.))
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(
            f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one "
            "tangent per primal"
        )
    flat = Flat(primals, tuple(range(len(primals))), "jvp")
    level = new_level()
    duals = [seed(p, t, level) for p, t in zip(flat.leaves, _flat_tangents(flat, tangents))]
    if cost.ACTIVE:
        cost.record_pass()
    out = flat.call(f, duals)
    no_none(out, "jvp")
    out_leaves, out_def = tree_flatten(out)
    values, out_tangents = [], []
    for o in out_leaves:
        primal, lanes = (o, None) if is_static_output(o) else lower(o, level)
        if lanes is not None:
            values.append(as_output(primal))
            out_tangents.append(_complex_if_complex(primal, reshape(lanes, shape_of(primal))))
        elif is_static_output(o):
            values.append(o)
            out_tangents.append(None)
        else:
            o = as_float(o)
            values.append(o)
            out_tangents.append(np.zeros(shape_of(o), dtype=float_dtype(o)))
    return tree_unflatten(out_def, values), tree_unflatten(out_def, out_tangents)


def _complex_if_complex(primal, tangent):
    """A complex output's tangent in its dtype: a real constant added to a real input
    (``x + 0j``) leaves the tangent real, but it lives in the output's (complex) space."""
    dtype = np.result_type(raw(primal))
    return as_output(in_dtype(tangent, dtype) if dtype.kind == "c" else tangent)


def _flat_tangents(flat: Flat, tangents: tuple) -> list:
    """The tangents of ``flat``'s active leaves, checked against the primals' structure."""
    flat_tangents = []
    for p, t in enumerate(tangents):
        treedef, _, slots = flat.trees[p]
        tangent_leaves, tangent_def = tree_flatten(t)
        if tangent_def != treedef:
            raise ValueError(
                f"jvp: tangent {p} has structure {tangent_def} but its primal has {treedef}; "
                "give each tangent its primal's structure"
            )
        flat_tangents += [as_float(t) for t, s in zip(tangent_leaves, slots) if s is not None]
    for p, t in zip(flat.leaves, flat_tangents):
        if shape_of(p) != shape_of(t):
            raise ValueError(
                f"jvp: a tangent of shape {shape_of(t)} for a primal of shape {shape_of(p)}; "
                "each tangent must have its primal's shape"
            )
    return flat_tangents


def jacfwd_at(f, flat: Flat, position: int, chunk_size, has_aux, name, scalar=False):
    """The Jacobian of every output leaf with respect to one active input leaf.

    Returns ``(values, aux, out_def, jacobians)``, each Jacobian of shape
    ``out.shape + (n,)`` (``None`` for a static output leaf). ``scalar``
    checks that ``f`` has one real output (for ``grad``).
    """
    x = flat.leaves[position]
    if np.result_type(raw(x)).kind == "c":
        # Real seeds give f(z + t) only along the real direction: the imaginary half of
        # the gradient (∂f/∂a − i ∂f/∂b) would be silently lost.
        raise TypeError(
            f"{name}: forward mode differentiates real inputs only, and this input is "
            f"complex ({np.result_type(raw(x))}); use reverse mode (grad, jacrev), or "
            "pass the real and imaginary parts as two real inputs"
        )
    n = math.prod(shape_of(x))
    k = chunk_size or default_chunk(n)
    if k < 1:
        raise ValueError(f"jacfwd: chunk_size must be a positive integer, not {chunk_size!r}")
    dtype = float_dtype(x)
    if n == 0:
        out, aux = split_aux(flat.call(f, flat.leaves), has_aux, name)
        out_leaves, out_def = tree_flatten(out)
        values = [None if is_static_output(o) else as_float(o) for o in out_leaves]
        jacobians = [
            None if v is None else np.zeros(shape_of(v) + (0,), dtype=dtype) for v in values
        ]
        return values, aux, out_def, jacobians
    values, aux, out_def, blocks = _passes(f, flat, position, k, has_aux, name, scalar)
    jacobians = []
    for block in blocks:
        if not block:
            jacobians.append(None)
            continue
        lanes = block[0] if len(block) == 1 else concatenate(block, axis=0)
        rank = len(shape_of(lanes))
        # The lane axis goes last (nothing to move for a scalar output's lanes).
        jacobian = as_output(lanes if rank == 1 else transpose(lanes, (*range(1, rank), 0)))
        jacobians.append(in_dtype(jacobian, dtype))
    return [None if v is None else as_output(v) for v in values], aux, out_def, jacobians


def _passes(f, flat: Flat, position: int, k: int, has_aux, name, scalar):
    """``ceil(n / k)`` passes of ``k`` lanes: the tangent lanes of each output leaf, in blocks."""
    x = flat.leaves[position]
    x_shape = shape_of(x)
    n = math.prod(x_shape)
    dtype = float_dtype(x)
    level = new_level()
    values, aux, out_def, blocks = [], None, None, None
    for start in range(0, n, k):
        width = min(k, n - start)
        seeds = np.eye(width, n, k=start, dtype=dtype)
        dual = seed(x, seeds.reshape((width,) + x_shape), level, lanes=width)
        if cost.ACTIVE:
            cost.record_pass(width)
        out, aux = split_aux(
            flat.call(f, replace_at(flat.leaves, [position], [dual])), has_aux, name
        )
        if scalar:
            check_scalar_output(out, name)
        out_leaves, out_def = tree_flatten(out)
        blocks = blocks or [[] for _ in out_leaves]
        values = []
        for o, block in zip(out_leaves, blocks):
            primal, lanes = (None, None) if is_static_output(o) else lower(o, level)
            if lanes is not None:
                block.append(lanes)
            elif primal is not None:
                primal = as_float(o)
                block.append(np.zeros((width,) + shape_of(primal), dtype=dtype))
            values.append(primal)
        if scalar:
            check_real_scalar(values[0])
        aux = strip(aux, level)
    return values, aux, out_def, blocks


def jacfwd(
    f: Callable, argnums=0, chunk_size: int | None = None, has_aux: bool = False
) -> Callable:
    """The Jacobian, column block by column block, ``chunk_size`` lanes a pass.

    ``n`` inputs take ``ceil(n / chunk_size)`` forward passes; the default
    chunk takes all inputs at once while ``n * n`` stays within
    ``LANE_BUDGET``. For arrays the result has shape ``out.shape +
    x.shape``; for pytrees it nests the output's structure over the input's,
    as :func:`jacrev` does. With ``has_aux`` the result is ``(jacobian, aux)``.

    >>> import adcompare as ad
    >>> print(ad.jacfwd(lambda x: x**2, chunk_size=1)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def jacobian_by_columns(*args):
        flat = Flat(args, argnums, "jacfwd")
        columns = []
        values, aux, out_def = [], None, None
        for i in range(len(flat.leaves)):
            values, aux, out_def, jacobians = jacfwd_at(f, flat, i, chunk_size, has_aux, "jacfwd")
            columns.append(
                [
                    None if v is None else reshape(jac, shape_of(v) + shape_of(flat.leaves[i]))
                    for v, jac in zip(values, jacobians)
                ]
            )
        if not flat.leaves:
            out, aux = split_aux(flat.call(f, flat.leaves), has_aux, "jacfwd")
            out_leaves, out_def = tree_flatten(out)
            values = [None if is_static_output(o) else o for o in out_leaves]
        blocks = [
            None if v is None else [column[j] for column in columns] for j, v in enumerate(values)
        ]
        jacobian = nest(out_def, blocks, flat)
        return (jacobian, aux) if has_aux else jacobian

    return jacobian_by_columns
