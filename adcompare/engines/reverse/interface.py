"""The reverse engine's face for transforms: lift values onto a tape, seed a sweep, read cotangents.

As JAX's ``Trace`` is to its transformations: :func:`lift` puts values on a
tape at a nesting level, :func:`lower` reads a traced output's value and
record back, :func:`node_of` gives a tensor's record, and :func:`cotangents`
seeds one sweep and reads what reaches the leaves. Transforms use these and
nothing private; the module also names the engine's box, ``Tensor``, and
``enable_grad``, so that this module is all the transforms import of the engine.
"""

from __future__ import annotations

import numpy as np

from adcompare.engines.reverse.grad_mode import enable_grad
from adcompare.engines.reverse.tensor import Tensor, _cotangent, run_backward
from adcompare.ops.registry import new_level
from adcompare.runtime.dtypes import as_float, in_dtype

__all__ = [
    "Tensor",
    "autograd_grad",
    "cotangents_at",
    "enable_grad",
    "lift",
    "lower",
    "node_of",
    "pullback",
]


def lift(values, level: int | None = None) -> list[Tensor]:
    """Leaf tensors over ``values`` at one nesting level (a fresh one by default): a new tape.

    The values may be boxes of lower levels (a ``Tensor`` of an outer tape):
    the new tape's sweep then records its own rules on theirs. This is the
    hook that lets a transform re-run a function under a tape of its own.
    Integers and bools become float64; floating and complex values stay.

    >>> import adcompare as ad
    >>> (x,) = lift([3.0])
    >>> y = x * x
    >>> print(pullback([y], [1.0], [x])[0])
    6.0
    """
    if level is None:
        level = new_level()
    return [Tensor._wrap(as_float(v), level, requires_grad=True) for v in values]


def node_of(tensor: Tensor):
    """A tensor's record: its ``grad_fn``, or the accumulator of a leaf.

    >>> import adcompare as ad
    >>> x = ad.Tensor(2.0, requires_grad=True)
    >>> node_of(x), node_of(x * x)
    (<AccumulateGrad>, <MulBackward>)
    """
    return tensor._node()


def lower(value, level: int):
    """``(plain value, record)`` of a function's output traced at ``level``.

    The record is ``None`` where the output does not depend on the lifted
    values (a constant, or a tensor of another tape, which stays a box).

    >>> (x,) = lift([np.array([3.0])], level=7)
    >>> lower(x * x, 7)
    (array([9.]), <MulBackward>)
    >>> lower(2.0, 7)
    (2.0, None)
    """
    if isinstance(value, Tensor) and value.level == level:
        return value._data, (value._node() if value._requires_grad else None)
    return value, None


def cotangents_at(roots, seeds, leaves, *, retain_graph: bool) -> list:
    """What reaches each of ``leaves`` in one sweep from the records ``roots`` (``None``: nothing).

    ``seeds`` holds one cotangent per root; the records are freed as they are
    swept unless ``retain_graph``.

    >>> x, y = lift([np.array([3.0]), np.array([4.0])])
    >>> cotangents_at([node_of(x * 2.0)], [np.ones(1)], [x, y], retain_graph=False)
    [array([2.]), None]
    """
    if not roots:
        return [None] * len(leaves)
    nodes = [t._node() for t in leaves]
    captured = run_backward(
        roots, seeds, retain_graph=retain_graph, create_graph=False, targets=set(nodes)
    )
    return [captured.get(node) for node in nodes]


def pullback(outputs, cotangents, inputs) -> list:
    """Cotangents of ``inputs`` after one sweep from ``outputs`` seeded with ``cotangents``.

    The sweep frees the tape as it goes. Cotangents are used as they are
    (tensors of an outer tape stay in its graph); an input the outputs do
    not reach gets zeros; outputs that are not on a tape are skipped. See
    :func:`lift` for an example.
    """
    level = inputs[0].level if inputs else None
    roots, seeds = [], []
    for out, cotangent in zip(outputs, cotangents):
        if isinstance(out, Tensor) and out.level == level and out._requires_grad:
            roots.append(out._node())
            seeds.append(cotangent)
    reached = cotangents_at(roots, seeds, inputs, retain_graph=False)
    return [np.zeros(t.shape, t.dtype) if g is None else g for t, g in zip(inputs, reached)]


def autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """Gradients of ``outputs`` with respect to ``inputs``, as ``torch.autograd.grad``.

    Nothing is accumulated into ``.grad``. Inputs that the outputs do not
    depend on get a zero gradient.

    >>> import adcompare as ad
    >>> x = ad.Tensor(3.0, requires_grad=True)
    >>> (dx,) = ad.autograd_grad(x**3, [x], create_graph=True)
    >>> (d2x,) = ad.autograd_grad(dx, [x])
    >>> print(dx.item(), d2x.item())
    27.0 18.0
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    for t in list(outputs) + list(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(
                "autograd_grad: every output and input must be a Tensor that requires grad"
            )
    cotangents = [_cotangent(o, g, create_graph) for o, g in zip(outputs, grad_outputs)]
    roots = [o._node() for o in outputs]
    targets = {t._node() for t in inputs}
    if retain_graph is None:
        retain_graph = create_graph
    captured = run_backward(
        roots, cotangents, retain_graph=retain_graph, create_graph=create_graph, targets=targets
    )
    result = []
    for t in inputs:
        g = captured.get(t._node())
        if g is None:
            g = np.zeros(t.shape, dtype=t.dtype)
        g = in_dtype(g, t.dtype)  # as .grad gets it: the input's dtype
        if not isinstance(g, Tensor):
            g = Tensor._wrap(g, t.level)
        result.append(g)
    return tuple(result)
