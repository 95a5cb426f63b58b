"""Reading an op record's sparsity: its own rule, or one derived for the op's family.

- An op whose ``sparsity`` is a rule: that rule.
- :data:`~adcompare.ops.registry.SELECTS`: the op's value applied to element
  numbers says which input element each output element is.
- An elementwise op with no rule: broadcasting links; its second-order
  interactions are derived once from its JVP rules (below).
- Any other op without a rule: every output element depends on every input
  element, with a warning naming the op (correct, but dense).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from adcompare.ops.links import Links, element_numbers, elementwise_links
from adcompare.ops.registry import SELECTS, OpDef
from adcompare.ops.registry.records import ARG_NAMES
from adcompare.sparsity.decisions import decided_here

__all__ = ["DenseFallbackWarning", "derivative_structure", "links_of"]


class DenseFallbackWarning(UserWarning):
    """An op has no sparsity rule, so its pattern was taken as dense."""


def links_of(
    op: OpDef,
    out,
    args: tuple,
    params: dict,
    *,
    local: bool,
    second_order: bool = True,
    derived: bool = True,
    read: dict | None = None,
) -> Links:
    """The dependencies of one application of ``op`` (plain values in, :class:`Links` out).

    An elementwise op's links are pruned to the positions its JVP rules
    depend on and get their interactions (:func:`derivative_structure`)
    unless ``derived`` is false: that derivation itself traces JVP rules,
    and there plain broadcasting links are what it needs. Without
    ``second_order`` the interactions are left out. ``read`` is a global
    trace's record of the arrays computed from its values: an operand the
    record declares decided by values that is one of them links every output
    element to every input element (see :mod:`adcompare.sparsity.decisions`).
    """
    if not local and read and _decided_by_values(op, args, params, read):
        return _every_link(op, out, args)  # the union over every decision the values take
    rule = op.sparsity
    if callable(rule):
        links = rule(out, *args, local=local, **params)
        if callable(links.interactions):
            links = Links(links.inputs, links.interactions() if second_order else ())
    elif rule == SELECTS:
        numbers = op.value(element_numbers(np.shape(args[0])), **params)
        links = Links(((np.arange(np.size(out)), np.ravel(numbers)),))
    elif op.elementwise:
        links = elementwise_links(out, *args)
    else:
        return _dense(op, out, args)
    if op.elementwise:
        inputs = _differentiable(op, links.inputs)
        if not derived:
            return Links(inputs)
        linked, _ = derivative_structure(op)
        inputs = tuple(link if i in linked else None for i, link in enumerate(inputs))
        pairs = _elementwise_pairs(op, out, args, links) if second_order else ()
        links = Links(inputs, pairs)
    return links


def _differentiable(op: OpDef, inputs: tuple) -> tuple:
    """Drop the links of positions without a derivative rule (``where``'s condition).

    A variadic op (``concatenate``, ``einsum``) differentiates every position.
    """
    if op.nargs is None:
        return inputs
    positions = op.differentiable
    return tuple(link if i in positions else None for i, link in enumerate(inputs))


def _elementwise_pairs(op: OpDef, out, args: tuple, links: Links) -> tuple:
    """Per interacting pair of positions, the elements that meet in each output element."""
    pairs = []
    size = np.size(out)
    for i, j in derivative_structure(op)[1]:
        if links.inputs[i] is None or links.inputs[j] is None:
            continue
        a, b = np.full(size, -1), np.full(size, -1)
        a[links.inputs[i][0]] = links.inputs[i][1]
        b[links.inputs[j][0]] = links.inputs[j][1]
        both = (a >= 0) & (b >= 0)
        pairs.append((i, j, np.flatnonzero(both), a[both], b[both]))
    return tuple(pairs)


@functools.cache
def derivative_structure(op: OpDef) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Which positions of an elementwise op its derivative depends on, and which interact.

    Derived from the record's own JVP rules by abstract interpretation: each
    rule runs on tracers standing for the arguments, for ``out`` (which
    depends on all of them) and for the tangent. A rule whose result does
    not depend on the tangent has a zero derivative (``floor``); the
    arguments it does depend on are those the first derivative varies with:
    ``x * y`` interacts ``((0, 1),)``, ``x + y`` not at all, ``exp`` with
    itself. A rule that reads only a value's sign (``abs``, ``maximum``) is
    linear almost everywhere.

    >>> from adcompare.ops import OPS
    >>> [derivative_structure(OPS[name]) for name in ("multiply", "add", "exp", "abs")]
    [((0, 1), ((0, 1),)), ((0, 1), ()), ((0,), ((0, 0),)), ((0,), ())]
    """
    from adcompare.sparsity.tracer import Trace

    positions = op.differentiable
    nargs = op.nargs or 1
    values = [np.float64(v) for v in _sample_point(op)]
    params = op.test_params((), np.random.default_rng(0)) if op.test_params else {}
    if op.prepare is not None:
        params = op.prepare(*values, **params)
    trace = Trace(nargs + 1, local=False, hessian=False, derived=False)
    tracers = [trace.argument(v, i) if i in positions else v for i, v in enumerate(values)]
    out = trace.depending_on(op.value(*values, **params), positions)
    tangent = trace.argument(np.ones(1), nargs)
    linked, pairs = set(), set()
    for i in positions:
        try:
            contribution = op.jvp_at(i)(out, *tracers, tangent, **params)
        except (TypeError, ValueError) as error:
            warnings.warn(
                f"sparsity: the JVP rule of op {op.name!r} does not run on index sets ({error}); "
                "its arguments are taken to interact in every way (correct, but denser)",
                DenseFallbackWarning,
                stacklevel=2,
            )
            every = tuple((i, j) for i in positions for j in positions if i <= j)
            return tuple(positions), every
        found = {int(j) for j in trace.dependencies(contribution)}
        if nargs in found:
            linked.add(i)
            pairs.update((min(i, j), max(i, j)) for j in found - {nargs})
    return tuple(sorted(linked)), tuple(sorted(pairs))


def _sample_point(op: OpDef) -> list[float]:
    """A point inside the op's test domain, away from the middle (where 0 often sits)."""
    nargs = op.nargs or 1
    domain = op.domain
    pairs = domain if isinstance(domain[0], (tuple, list)) else [domain] * nargs
    return [low + 0.63 * (high - low) for low, high in pairs]


def _decided_by_values(op: OpDef, args: tuple, params: dict, read: dict) -> bool:
    """Whether an operand ``op`` declares decided by values was computed from the traced
    values here; refused where that makes the output's shape follow them."""
    for decision in op.decided_by_values:
        if decision.source in params:
            operand = params[decision.source]
        else:
            operand = args[ARG_NAMES.index(decision.source)]
        found = decided_here(operand, read)
        if found == "shape":
            raise ValueError(
                f"sparsity: {op.name} selects with a mask or positions computed from x "
                "(such as x[x > 0]), so the output's shape depends on x and no pattern holds "
                "at every x; select with where(mask, x, 0), or pass local=True for the "
                "pattern at this x (found again at every call)"
            )
        if found:
            return True
    return False


def _dense(op: OpDef, out, args: tuple) -> Links:
    warnings.warn(
        f"sparsity: op {op.name!r} has no sparsity rule, so every output element is taken "
        "to depend on every input element (correct, but dense); give its defop a "
        "sparsity= rule",
        DenseFallbackWarning,
        stacklevel=4,
    )
    return _every_link(op, out, args)


def _every_link(op: OpDef, out, args: tuple) -> Links:
    """Every output element depends on every element of every argument, every pair
    interacting."""
    size = np.size(out)
    inputs, pairs = [], []
    for arg in args:
        n = np.size(arg)
        inputs.append((np.repeat(np.arange(size), n), np.tile(np.arange(n), size)))
    for i in range(len(args)):
        for j in range(i, len(args)):
            ni, nj = np.size(args[i]), np.size(args[j])
            grid = np.indices((size, ni, nj)).reshape(3, -1)
            pairs.append((i, j, *grid))
    return Links(_differentiable(op, tuple(inputs)), tuple(pairs))
