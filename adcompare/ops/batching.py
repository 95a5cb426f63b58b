"""Batching rules: how an op passes a mapped (batch) axis through, for ``vmap``.

A rule is ``batch(args, batched, **params)``: ``batched[i]`` says whether
``args[i]`` carries a leading batch axis (the others are the same for every
example), ``params`` are the op's static parameters as ``prepare`` made them
for *one* example, and the rule returns the output with a leading batch
axis. Rules are written with the op set's own functions, so a batched value
may itself be a ``Dual`` or ``Tensor``: ``vmap`` composes with every
transform.

Most ops need no rule of their own:

- elementwise ops derive theirs (:func:`rule_of`): batched arguments get
  size-1 axes after the batch axis so numpy broadcasting lines them up;
- ops whose static axes count from the end (reductions, ``squeeze``,
  ``expand_dims``, ``concatenate``, ``cumsum``) say ``batch=LEADING_AXIS``:
  the batch axis passes through as the forward engine's lanes do.

Shape ops, indexing and ``matmul`` write theirs on their record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from adcompare.ops.registry import LEADING_AXIS, OpDef, apply, ndim_of
from adcompare.ops.shape import broadcast_batch, pad_batched
from adcompare.runtime.batch_arrays import BatchArray, padded

__all__ = ["rule_of"]


def _elementwise(op: OpDef) -> Callable:
    def batch_elementwise(args, batched, **params):
        # An array parameter (where's condition, clip's bounds) broadcasts with the
        # arguments: it counts for the rank of one example's result too.
        rank = max(
            *(ndim_of(a) - b for a, b in zip(args, batched)),
            *(np.ndim(v) - isinstance(v, BatchArray) for v in params.values()),
            0,
        )
        lined_up = tuple(pad_batched(a, rank) if b else a for a, b in zip(args, batched))
        # A parameter read from a batched value (where's condition) is batched too.
        params = {k: padded(v, rank) for k, v in params.items()}
        return apply(op, lined_up, params)

    return batch_elementwise


def _leading(op: OpDef) -> Callable:
    def batch_leading(args, batched, **params):
        return apply(op, broadcast_batch(args, batched), params)

    return batch_leading


@functools.cache
def rule_of(op: OpDef) -> Callable | None:
    """The batching rule of ``op``: its record's, or one derived for its family.

    >>> from adcompare.ops import OPS
    >>> rule_of(OPS["sin"]).__name__, rule_of(OPS["sum"]).__name__
    ('batch_elementwise', 'batch_leading')
    """
    if op.batch == LEADING_AXIS:
        return _leading(op)
    if op.batch is None and op.elementwise:
        return _elementwise(op)
    return op.batch
