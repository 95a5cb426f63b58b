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
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush

from numpy import add as _np_add
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.engines.reverse.tape import (
    FREED_GRAPH,
    AccumulateGrad,
    Node,
    placeholder,
    placeholders,
    saved_inputs,
)
from adcompare.ops import add
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
            grads[node] = (add(grads[node][0], cotangent), LENT)
        else:
            shared = any(cotangent is seed for seed in seeds)
            grads[node] = (cotangent, SHARED if shared else LENT)
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
        cotangent, owner = grads.pop(node)
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
        _send(node, cotangent, owner, grads, pending, rule_inputs, in_place)
        if not retain_graph:  # release what the record saved
            if cost.ACTIVE:
                cost.record_release(node.saved_bytes)
            node.saved_args = node.saved_out = None
            node.freed = True
    return captured


def _send(
    node: Node, cotangent, owner: str, grads: dict, pending: list, rule_inputs, in_place: bool
) -> None:
    """Run a record's VJP rules and add each input's share into ``grads``; an input's
    record that receives its first share joins the heap ``pending``."""
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
    accumulate = op.accumulate_vjp if in_place else None
    passed_on = owner is SHARED  # the cotangent already went where it may be handed out
    if same is not None and nexts[0] is nexts[1] is not None and args[0] is args[1]:
        nexts, rules = nexts[:1], (same,)  # x * x: one rule for both positions
    for i, nxt in enumerate(nexts):
        if nxt is None:
            continue
        previous = grads.get(nxt)
        if (
            accumulate is not None
            and previous is not None
            and previous[1] is MINE
            and type(cotangent) is ndarray
            and cotangent.dtype == previous[0].dtype
        ):
            accumulate(previous[0], out, *args, cotangent, **params)
            continue
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
            # A fresh scatter into zeros: later slices add into it in place, which
            # beats a scatter and a sum per slice at any size.
            kind = MINE
        else:
            kind = LENT
        if previous is None:
            grads[nxt] = (contribution, kind)
            heappush(pending, (-nxt.seq, id(nxt), nxt))
        else:
            _add_into(grads, nxt, previous, contribution, in_place)


def _add_into(grads: dict, nxt, previous: tuple, contribution, in_place: bool) -> None:
    """Add ``contribution`` to the cotangent ``previous`` that ``nxt`` has so far."""
    total, total_owner = previous
    if (
        total_owner is MINE
        and type(contribution) is ndarray
        and contribution.shape == total.shape
        and contribution.dtype == total.dtype
    ):
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
        grads[nxt] = (summed, LENT)
    else:
        total = add(total, contribution)
        grads[nxt] = (total, MINE if in_place and _worth_owning(total) else LENT)
