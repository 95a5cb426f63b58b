"""The reverse sweep written as plainly as it can be: read this before :mod:`.sweep`.

Reverse mode runs ``f`` once on tensors, which appends one record (a ``Node``,
:mod:`.tape`) per op: the op, the records of its inputs (``next``) and the
values its VJP rules read. The backward sweep then walks those records from
the output back to the inputs, carrying each record's cotangent ``ū`` (the
derivative of the final output with respect to that record's value):

1. take every record the output depends on, newest first, so that a record is
   reached only after every record that read its value;
2. at each one, call its op's VJP rule for each input that needs a gradient:
   ``rule(out, *args, ū, **params)`` is that input's share ``ūᵀ ∂out/∂arg``;
3. sum the share down to the input's shape (``unbroadcast``: the adjoint of
   numpy's broadcasting) and add it to what that input has received so far.

That is all of the mathematics. :func:`adcompare.engines.reverse.sweep.sweep`
computes the same numbers faster: a heap instead of a sorted list, sums
added in place into memory it owns (who owns a cotangent travels with it),
a negation carried as a sign instead of computed, ``x * x`` as one rule, and
slices added where they land instead of scattered into zeros first. Each of
those is an optimisation, never a change to the mathematics; the tests
(``tests/test_reference_sweep.py``) check that the fast sweep gives these
numbers bit for bit. The order is part of that: floating-point addition is
not associative, so the shares reaching a record are summed in the order the
fast sweep sums them, newest consumer first.

What it leaves out, and why: it never writes ``.grad`` (the caller reads the
cotangent of any record, a leaf's or a retained tensor's, from the dict it
returns); it frees nothing, so it may run any number of times on one tape;
and it does not record itself, so it cannot give a gradient to differentiate
again (``create_graph``): a seed that lives on the tape it sweeps is refused.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.engines.reverse.grad_mode import enable_grad
from adcompare.engines.reverse.interface import lift, lower, node_of
from adcompare.engines.reverse.sweep import _raise_modified
from adcompare.engines.reverse.tape import FREED_GRAPH, AccumulateGrad, node_level, saved_inputs
from adcompare.ops import add
from adcompare.ops.registry import Box, shape_of, unbroadcast


def reference_sweep(root, seed) -> dict:
    """The cotangent of every record that ``root`` depends on, seeded with ``seed`` at ``root``.

    A leaf's gradient is the cotangent of its record (``node_of(leaf)``); a
    record the sweep does not reach is not in the dict. Nothing is freed and
    no ``.grad`` is written.

    >>> from adcompare.engines.reverse import lift, node_of
    >>> x, y = lift([np.array([1.0, 2.0]), np.array(3.0)])
    >>> cotangents = reference_sweep(node_of(x * x - x * y), np.ones(2))
    >>> print(cotangents[node_of(x)], cotangents[node_of(y)])  # 2x - y, -Σx
    [-1.  1.] -3.0
    """
    if isinstance(seed, Box) and seed.level == node_level(root):
        raise ValueError(
            "reference_sweep does not record itself, so its seed cannot be a tensor on the "
            "tape it sweeps (as create_graph makes one); pass a plain array, or use "
            "autograd_grad(..., create_graph=True) for a gradient to differentiate again"
        )
    cotangents = {root: seed}
    for node in _newest_first(root):
        if type(node) is AccumulateGrad:
            continue  # a leaf: nothing comes before it
        _check_saved_values(node)
        args, out = saved_inputs(node)  # values it did not keep stand in as their shapes
        for i, (source, arg) in enumerate(zip(node.next, args)):
            if source is None:
                continue  # an input that needs no gradient
            share = node.op.vjp_at(i)(out, *args, cotangents[node], **node.params)
            share = unbroadcast(share, shape_of(arg))
            cotangents[source] = add(cotangents[source], share) if source in cotangents else share
    return cotangents


def _newest_first(root) -> list:
    """The records ``root`` depends on, newest first.

    Records are numbered as they are made (``seq``), after their inputs, so
    this order reaches every record after all the records that read it: the
    sorted tape, read backwards. Found with a stack, not recursion, so a chain
    of a million records is fine.
    """
    reached, stack = {root}, [root]
    while stack:
        for source in stack.pop().next:
            if source is not None and source not in reached:
                reached.add(source)
                stack.append(source)
    return sorted(reached, key=lambda node: node.seq, reverse=True)


def _check_saved_values(node) -> None:
    """Refuse a record whose saved values were freed or changed since: they would give a
    wrong number."""
    if node.freed:
        raise RuntimeError(FREED_GRAPH)
    for counter, saved, position in node.versions:
        if counter[0] != saved:
            _raise_modified(node, counter[0], saved, position)


def reference_jacrev(f: Callable, x) -> np.ndarray:
    """``f``'s Jacobian at ``x``, one reference sweep per output element, as ``jacrev`` gives it.

    ``x`` is a plain array; the result has shape ``out.shape + x.shape``, so
    for a scalar ``f`` it is the gradient. A real input's rows are real and in
    its dtype, as ``.grad`` is.

    >>> reference_jacrev(lambda x: x[0] * x[1], np.array([2.0, 3.0]))
    array([3., 2.])
    >>> reference_jacrev(lambda x: x**2, np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    (leaf,) = lift([x])
    with enable_grad():
        value, root = lower(f(leaf), leaf.level)
    value = np.asarray(value)
    if value.dtype.kind == "c":
        raise TypeError(
            "reference_jacrev: reverse mode needs real outputs, and this one is complex; "
            "differentiate ad.real(...) and ad.imag(...) separately"
        )
    dtype = value.dtype if value.dtype.kind == "f" else np.dtype(np.float64)
    rows = []
    for i in range(value.size):
        seed = np.zeros(value.size, dtype)
        seed[i] = 1.0
        reached = {} if root is None else reference_sweep(root, seed.reshape(value.shape))
        row = np.asarray(reached.get(node_of(leaf), np.zeros(leaf.shape, leaf.dtype)))
        rows.append((row if leaf.dtype.kind == "c" else row.real).astype(leaf.dtype))
    return np.reshape(rows, value.shape + leaf.shape)
