"""The backward sweep: records in reverse tape order, VJP rules, unbroadcast, accumulate.

One sweep serves the eager engine (``Tensor.backward``, ``autograd_grad``,
the transforms) and the replay recorder, whose rules run on traced values so
that their op calls are recorded. Each cotangent travels with who may write
to it, as HIPS autograd's ``add_outgrads`` does:

``MINE``
    memory this sweep allocated and nobody else holds: later contributions
    are added into it in place, and it is handed out as it is;
``LENT``
    memory someone else may hold (a rule's result, a caller's seed): never
    written, handed out as it is to its one holder;
``SHARED``
    an array that also went elsewhere (``add`` passes one cotangent to both
    inputs) or was already handed out: a copy is handed out.

A negation is carried, not computed. The rules are linear in the cotangent, so
the share ``y - x`` or ``-x`` sends to ``x`` is held as the plain cotangent
with ``x``'s record marked negated, and ``x``'s own rules run on it unchanged:
their shares are negated in turn. The sign is folded into the sum that meets a
share of the other sign (a subtraction instead of an addition), and is only
computed, by one negation, where a value leaves the sweep (a leaf's ``.grad``,
a target, a retained gradient) or would fan out to several inputs, or where a
rule is a user's (``custom_vjp`` rules need not be linear). Rosenbrock's backward
at n = 10⁶ loses both of its full-size negations this way. Negation is exact, so
every value is bit for bit what negating first gives, except that a zero may
come out with the other sign: a held total cannot tell the zeros a rule wrote
(a slice's scatter) from negated ones.
"""

from __future__ import annotations

import math
from heapq import heapify, heappop, heappush

# hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup
from numpy import add as _np_add
from numpy import ndarray
from numpy import subtract as _np_subtract

from adcompare.engines.reverse.tape import (
    FREED_GRAPH,
    AccumulateGrad,
    Node,
    placeholder,
    placeholders,
    saved_inputs,
)
from adcompare.ops import add, subtract
from adcompare.ops.registry import shape_of, unbroadcast
from adcompare.runtime import cost
from adcompare.runtime.hooks import RECORDING_HOOKS

MINE, LENT, SHARED = "mine", "lent", "shared"

#: Below this many elements a fresh sum is cheaper than adding in place (numpy's
#: per-call overhead dominates), so only larger cotangent sums are ``MINE``.
IN_PLACE_FROM = 1 << 12


def _raise_modified(node: Node, version: int, saved: int, position: int) -> None:
    value = "its output" if position < 0 else f"its input {position}"
    raise RuntimeError(
        f"one of the values needed for gradient computation ({value} of {node.name}) "
        "has been modified by an in-place operation, directly or through a tensor "
        f"sharing its memory (a slice, reshape, transpose or detach): it is at version "
        f"{version}, saved at version {saved}. Use an out-of-place operation "
        "(x = x + 1 instead of x += 1), modify a .clone() instead, or run the forward "
        "computation again after the write"
    )


def _worth_owning(value) -> bool:
    """Whether later contributions should be added into ``value`` in place."""
    return type(value) is ndarray and value.size >= IN_PLACE_FROM


def _hand_out(cotangent, owner: str):
    """``cotangent`` for a caller to keep: a copy where it also went elsewhere."""
    if owner is SHARED and type(cotangent) is ndarray:
        return cotangent.copy()
    return cotangent


def _seeded(roots, cotangents) -> dict:
    """The sweep's starting cotangents, per record; a seed given twice is ``SHARED``."""
    grads = {}
    seeds = []
    for node, cotangent in zip(roots, cotangents):
        if node in grads:
            grads[node] = (add(grads[node][0], cotangent), LENT, False)
        else:
            shared = any(cotangent is seed for seed in seeds)
            grads[node] = (cotangent, SHARED if shared else LENT, False)
        seeds.append(cotangent)
    return grads


def sweep(
    roots,
    cotangents,
    *,
    retain_graph: bool,
    targets=None,
    rule_inputs=saved_inputs,
    in_place: bool = True,
) -> dict:
    """Sweep the records backwards from ``roots`` seeded with ``cotangents``.

    Without ``targets``, gradients are accumulated into leaves' ``.grad``
    (and retained non-leaves'); with ``targets`` (a set of records) the
    gradients arriving at them are returned in a dict and nothing is
    accumulated. ``rule_inputs(node)`` gives the ``(args, out)`` a record's
    rules read; ``in_place`` lets the sweep add into cotangents it owns (the
    replay recorder turns it off: its constants are read again at replay).
    Records are freed as they are swept unless ``retain_graph``.
    """
    grads = _seeded(roots, cotangents)
    # Records wait in a heap, latest first: one is swept once every record made after
    # it has been, so all its consumers have added their shares. Only records a
    # cotangent reaches enter it; each enters once, with its first share.
    pending = [(-node.seq, id(node), node) for node in grads if node is not None]
    heapify(pending)
    captured = {}
    while pending:
        node = heappop(pending)[2]
        # ``flipped``: the cotangent is held negated (see the module's docstring)
        cotangent, owner, flipped = grads.pop(node)
        if flipped and not _carries_sign(node, targets):
            cotangent, owner = _unflip(cotangent, owner)
            flipped = False
        if targets is not None and node in targets:
            captured[node] = _hand_out(cotangent, owner)
            owner = SHARED
        if type(node) is AccumulateGrad:
            if targets is None:
                node.variable._accumulate(_hand_out(cotangent, owner))
            continue
        if node.freed:
            raise RuntimeError(FREED_GRAPH)
        for counter, saved, position in node.versions:
            if counter[0] != saved:
                _raise_modified(node, counter[0], saved, position)
        if targets is None and node.retained is not None:
            kept = node.retained()
            if kept is not None:
                kept._accumulate(_hand_out(cotangent, owner))
                owner = SHARED
        _send(node, cotangent, owner, grads, pending, rule_inputs, in_place, flipped)
        if not retain_graph:  # release what the record saved
            if cost.ACTIVE:
                cost.record_release(node.saved_bytes)
            node.saved_args = node.saved_out = None
            node.freed = True
    return captured


def _carries_sign(node, targets) -> bool:
    """Whether a record's rules may run on its cotangent held negated: not where the
    value leaves the sweep, nor where it would fan out (each share negated later), nor
    where the share grows (a sum's cotangent is cheaper to negate before it is spread),
    unless it lands in slices, which fold the sign where they land."""
    if type(node) is AccumulateGrad or node.freed or node.retained is not None:
        return False
    op, nexts = node.op, node.next
    if not op.linear_rules or (targets is not None and node in targets):
        return False  # a user's rule (custom_vjp) need not be linear: clip(g), say
    if len(nexts) == 1:
        i = 0  # recorded, so its one input needs a gradient
    elif len(nexts) == 2 and (nexts[0] is None) is not (nexts[1] is None):
        i = 1 if nexts[0] is None else 0
    else:
        return False  # several inputs need it (or a variadic op): negated once, here
    if op.accumulate_vjp is not None:
        return True
    shape = node.in_shapes[i] if node.in_shapes is not None else shape_of(node.saved_args[i])
    return math.prod(shape) <= math.prod(node.out_shape)


def _unflip(cotangent, owner: str) -> tuple:
    """The value of a cotangent held negated, in place where the sweep owns it.

    Taken as ``0 - c`` rather than ``-c``: the zeros a rule wrote (a slice's
    scatter, a mask), which negating first would not have negated, stay ``+0``.
    """
    if owner is MINE:
        _np_subtract(0.0, cotangent, out=cotangent)
        if cost.ACTIVE:
            cost.record_numpy(subtract.op, (0.0, cotangent), cotangent)
        return cotangent, MINE
    return subtract(0.0, cotangent), LENT


_NO_HINTS = (None, None)


def _send(node, cotangent, owner, grads, pending, rule_inputs, in_place, flipped) -> None:
    """Add each input's share (its VJP rule's) into ``grads``; a record's first share puts it
    on the heap ``pending``. ``flipped``: the cotangent is held negated, as every share is."""
    if rule_inputs is saved_inputs:  # saved_inputs, inline: this runs once per record
        args = node.saved_args
        if args is None:
            args = placeholders(node.in_shapes)
        out = node.saved_out
        if out is None:
            out = placeholder(node.out_shape)
    else:
        args, out = rule_inputs(node)
    op, params, nexts, in_shapes = node.op, node.params, node.next, node.in_shapes
    rules, same = op.vjp_rules, op.vjp_same
    unbroadcasts = op.unbroadcasts or (op.elementwise and params)  # clip(x, wider bounds)
    accumulate, negates = op.sweep_hints if in_place else _NO_HINTS
    passed_on = owner is SHARED  # the cotangent already went where it may be handed out
    if same is not None and nexts[0] is nexts[1] is not None and args[0] is args[1]:
        nexts, rules = nexts[:1], (same,)  # x * x: one rule for both positions
    for i, nxt in enumerate(nexts):
        if nxt is None:
            continue
        previous = grads.get(nxt)
        sign = flipped
        if (
            accumulate is not None
            and previous is not None
            and previous[1] is MINE
            and _accumulated(op, grads, nxt, previous, out, args, cotangent, sign, params)
        ):
            continue
        if negates is not None and negates[i] and type(cotangent) is ndarray:
            contribution, sign = cotangent, not sign  # the negation, carried
        else:
            rule = rules[i] if rules is not None else op.vjp_at(i)
            contribution = rule(out, *args, cotangent, **params)
        if unbroadcasts:  # shapes read inline: shape_of's call costs more than the test
            if in_shapes is not None:
                shape = in_shapes[i]
            else:
                arg = args[i]
                shape = arg.shape if type(arg) is ndarray else shape_of(arg)
            plain = type(contribution) is ndarray
            if (contribution.shape if plain else shape_of(contribution)) != shape:
                contribution = unbroadcast(contribution, shape)
        if contribution is cotangent:
            kind = SHARED if passed_on else LENT
            passed_on = True
        elif accumulate is not None and previous is None and type(contribution) is ndarray:
            # A fresh scatter: later slices add into it in place (beats scatter + sum)
            kind = MINE
        else:
            kind = LENT
        if previous is None:
            grads[nxt] = (contribution, kind, sign)
            heappush(pending, (-nxt.seq, id(nxt), nxt))
        elif sign is previous[2]:
            _add_into(grads, nxt, previous, contribution, in_place)  # held as the total is
        else:
            _subtract_into(grads, nxt, previous, contribution, in_place)


def _accumulated(op, grads, nxt, previous, out, args, cotangent, sign, params) -> bool:
    """Add a share into the total the sweep owns with the op's ``accumulate_vjp`` hook;
    ``False`` where it does not apply (the share is not a plain array of its dtype, or
    the signs differ and the hook is a user's, which only adds)."""
    total, _, held = previous  # held: the total so far is held negated
    if type(cotangent) is not ndarray or cotangent.dtype != total.dtype:
        return False
    if sign == held:
        op.accumulate_vjp(total, out, *args, cotangent, **params)
        return True
    if not op.linear_rules:  # a user's hook only adds
        return False
    op.accumulate_vjp(
        total, out, *args, cotangent, how="subtract" if sign else "negate_add", **params
    )
    if held:  # made the value, no longer negated
        grads[nxt] = (total, MINE, False)
    return True


def _into_own(total, total_owner: str, contribution) -> bool:
    """Whether ``contribution`` can be summed into ``total`` in place: the sweep owns it."""
    return (
        total_owner is MINE
        and type(contribution) is ndarray
        and contribution.shape == total.shape
        and contribution.dtype == total.dtype
    )


def _add_into(grads: dict, nxt, previous: tuple, contribution, in_place: bool) -> None:
    """Add ``contribution`` to the cotangent ``previous`` that ``nxt`` has so far."""
    total, total_owner, held = previous
    if _into_own(total, total_owner, contribution):
        total += contribution
    elif (
        type(total) is ndarray
        and type(contribution) is ndarray
        and total.size < IN_PLACE_FROM
        and not RECORDING_HOOKS
    ):
        # Two small plain arrays (a size-1 chain reads x at every other op): numpy
        # adds them directly, counted as the op. The op's dispatch costs more than
        # the sum here; a large sum goes through it for a pooled buffer.
        summed = _np_add(total, contribution)
        if cost.ACTIVE:
            cost.record_numpy(add.op, (total, contribution), summed)
        grads[nxt] = (summed, LENT, held)
    else:
        total = add(total, contribution)
        grads[nxt] = (total, MINE if in_place and _worth_owning(total) else LENT, held)


def _subtract_into(grads: dict, nxt, previous: tuple, contribution, in_place: bool) -> None:
    """Add to ``nxt``'s cotangent a share of the other sign: one of the two is held
    negated, so their sum is a difference, and it is no longer negated."""
    total, total_owner, held = previous
    if _into_own(total, total_owner, contribution):
        if held:
            _np_subtract(contribution, total, out=total)
        else:
            _np_subtract(total, contribution, out=total)
        grads[nxt] = (total, MINE, False)
        return
    total = subtract(contribution, total) if held else subtract(total, contribution)
    grads[nxt] = (total, MINE if in_place and _worth_owning(total) else LENT, False)
