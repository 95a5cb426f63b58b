"""Batching rules: how an op passes a mapped (batch) axis through, for ``vmap``.

A rule is ``batch(args, batched, **params)``: ``batched[i]`` says whether
``args[i]`` carries a leading batch axis (the others are the same for every
example), ``params`` are the op's static parameters as ``prepare`` made them
for *one* example, and the rule returns the output with a leading batch
axis. Rules are written with the op set's own functions, so a batched value
may itself be a ``Dual`` or ``Tensor``: ``vmap`` composes with every
transform.

Most ops need no rule of their own:

- elementwise ops derive theirs (:func:`derive`): batched arguments get
  size-1 axes after the batch axis so numpy broadcasting lines them up;
- ops whose static axes count from the end (reductions, ``squeeze``,
  ``expand_dims``, ``concatenate``) take :data:`leading_axis`: the batch
  axis passes through as the forward engine's lanes do.

Shape ops, indexing and ``matmul`` write theirs on their record.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["batch_size", "broadcast_batch", "derive", "leading_axis", "pad_batched"]


def leading_axis(args, batched, **params):
    """Marker rule: the op handles a leading axis itself (its axes count from the end)."""
    raise NotImplementedError("leading_axis is replaced by derive() with a rule for its op")


def batch_size(args, batched) -> int:
    """The size of the batch axis of the batched arguments."""
    from adcompare.ops.registry import shape_of

    return next(shape_of(a)[0] for a, b in zip(args, batched) if b)


def broadcast_batch(args, batched) -> tuple:
    """Every argument with the batch axis: the unbatched ones broadcast along it."""
    from adcompare.ops.registry import shape_of
    from adcompare.ops.shape import broadcast_to

    size = batch_size(args, batched)
    return tuple(a if b else broadcast_to(a, (size,) + shape_of(a)) for a, b in zip(args, batched))


def pad_batched(value, rank: int):
    """A batched value with size-1 axes after the batch axis, up to ``rank`` per example."""
    from adcompare.ops.registry import shape_of
    from adcompare.ops.shape import reshape

    shape = shape_of(value)
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return value
    return reshape(value, shape[:1] + (1,) * missing + shape[1:])


def _elementwise(op) -> Callable:
    from adcompare.ops.registry import apply, ndim_of

    def batch_elementwise(args, batched, **params):
        rank = max(ndim_of(a) - b for a, b in zip(args, batched))
        padded = tuple(pad_batched(a, rank) if b else a for a, b in zip(args, batched))
        return apply(op, padded, params)

    return batch_elementwise


def _leading(op) -> Callable:
    from adcompare.ops.registry import apply

    def batch_leading(args, batched, **params):
        return apply(op, broadcast_batch(args, batched), params)

    return batch_leading


def derive(op, batch: Callable | None) -> Callable | None:
    """The batching rule of ``op``: the one given, or one derived for its family."""
    if batch is leading_axis:
        return _leading(op)
    if batch is None and op.elementwise:
        return _elementwise(op)
    return batch
