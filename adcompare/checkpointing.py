"""Checkpointing: trade the tape's memory for recomputation.

``checkpoint(f)`` runs ``f`` without taping its interior: the tape gets one
record that keeps only ``f``'s inputs. When the backward sweep reaches that
record, ``f`` runs again on a fresh tape (:func:`adcompare.engines.reverse.lift`),
is swept (:func:`adcompare.engines.reverse.pullback`), and the inputs' cotangents
go on into the outer sweep, as ``jax.checkpoint`` and PyTorch's
non-reentrant ``torch.utils.checkpoint`` do. Because the re-run happens
inside the record's VJP rule, everything that works for a rule works here:
nested checkpoints, ``create_graph`` (the re-run is then recorded on the
outer tape) and forward mode over it.

``checkpoint.scan(step, carry, xs, snapshots=s)`` is a loop
``carry = step(carry, x, *args)`` reversed with a schedule from
:mod:`adcompare.revolve`: at most ``s`` stored states (binomial, the fewest
recomputations) or ``"sqrt"`` (a snapshot every ⌈√n⌉ steps).

The checkpointed function must take everything it differentiates as an
argument: a tensor it closes over would not be re-run on the fresh tape, so
it is refused with an error.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence

import numpy as np

from adcompare import revolve
from adcompare.engines.forward import Dual
from adcompare.engines.reverse import Tensor, enable_grad, is_grad_enabled, lift, pullback
from adcompare.ops import OpDef, add, concatenate, getitem, reshape, stack
from adcompare.ops.registry import Box, apply, new_level, raw, shape_of
from adcompare.pytree import join_leaves, split_leaves, tree_flatten, tree_leaves, tree_unflatten
from adcompare.runtime import cost
from adcompare.transforms import vmap

__all__ = ["checkpoint", "scan"]


# --- outputs: one array or a tuple of arrays ------------------------------------------


def _leaves(value) -> tuple[list, bool]:
    """The arrays of an output and whether it was a tuple or list of them."""
    if isinstance(value, (tuple, list)):
        return list(value), True
    return [value], False


def _refuse_closure(values: list, where: str) -> None:
    for v in values:
        if isinstance(v, Box):
            raise TypeError(
                f"{where}: the function returned a {type(v).__name__} computed from a tensor "
                "that is not among its arguments (a closure over a parameter). A checkpoint "
                "re-runs the function from its arguments only, so that derivative would be "
                "lost: pass the tensor as an argument, e.g. checkpoint(f)(x, w)"
            )


# --- the records --------------------------------------------------------------------


def _top_box(values):
    top = None
    for v in values:
        if isinstance(v, Box) and (top is None or v.level > top.level):
            top = v
    return top


def _taped(values) -> bool:
    """Whether these inputs would be recorded on a tape (else no checkpoint is needed)."""
    top = _top_box(values)
    return isinstance(top, Tensor) and is_grad_enabled() and any(_needed(values))


def _needed(values) -> tuple[bool, ...]:
    """Which inputs the record will ask cotangents for."""
    top = _top_box(values)
    return tuple(isinstance(v, Tensor) and v.level == top.level and v.requires_grad for v in values)


class _Call:
    """One application of a checkpointed function: what its record's rules need."""

    def __init__(self, fn: Callable, needed: tuple[bool, ...]):
        self.fn = fn
        self.needed = needed
        self.shapes: list = []
        self.as_tuple = False
        self._cached = None

    def outputs(self, values) -> list:
        """Run ``fn`` and remember the outputs' layout (any tree of arrays: a tuple, a
        dict)."""
        out, self.treedef = tree_flatten(self.fn(*values))
        self.shapes = [shape_of(v) for v in out]
        return out

    def cotangent(self, position: int, args: tuple, out_bar):
        """The cotangent of input ``position``: one re-run serves every input.

        The sweep asks once for each input that needs a gradient; the
        cotangents are let go when the last one has been handed out.
        """
        if self._cached is None or self._cached[0] is not out_bar:
            waiting = {i for i, flag in enumerate(self.needed) if flag}
            self._cached = (out_bar, self.cotangents(args, out_bar), waiting)
        _, found, waiting = self._cached
        waiting.discard(position)
        if not waiting:
            self._cached = None
        return found[position]

    def cotangents(self, args: tuple, out_bar) -> list:
        raise NotImplementedError


class _FunctionCall(_Call):
    def cotangents(self, args: tuple, out_bar) -> list:
        positions = [i for i, flag in enumerate(self.needed) if flag]
        leaves = lift([args[i] for i in positions])
        inputs = list(args)
        for i, leaf in zip(positions, leaves):
            inputs[i] = leaf
        with enable_grad(), cost.recomputing():
            outputs = tree_leaves(self.fn(*inputs))
        found = pullback(outputs, split_leaves(out_bar, self.shapes), leaves)
        result = [None] * len(args)
        for i, cotangent in zip(positions, found):
            result[i] = cotangent
        return result

    def rerun_for_tangent(self, duals):
        return self.fn(*duals)


def _run_value(*values, call: _Call):
    out = call.outputs(values)
    _refuse_closure(out, "checkpoint")
    return join_leaves(out)


def _run_batched(args, batched, call: _Call):
    """The batching rule: ``f`` is written for one example, so vmap runs it."""
    in_axes = tuple(0 if flag else None for flag in batched)
    out = vmap(lambda *values: join_leaves(call.outputs(values)), in_axes=in_axes)(*args)
    _refuse_closure([out], "checkpoint")
    return out


def _rerun_jvp(out, primals, tangents, call: _Call):
    """Forward mode over the record: run the function again on dual numbers."""
    level = new_level()
    lanes = next(shape_of(t)[0] for t in tangents if t is not None)
    duals = [p if t is None else Dual(p, t, level=level) for p, t in zip(primals, tangents)]
    outputs = tree_leaves(call.rerun_for_tangent(duals))
    parts = [
        v.tangent
        if isinstance(v, Dual) and v.level == level
        else np.zeros((lanes, *shape), dtype=np.result_type(raw(v), np.float32))
        for v, shape in zip(outputs, call.shapes)
    ]
    if len(parts) == 1:
        return parts[0]
    return concatenate([reshape(t, (lanes, -1)) for t in parts], axis=-1)


def _function_vjp(position, out, *rest, call: _Call):
    *args, out_bar = rest
    return call.cotangent(position, tuple(args), out_bar)


CHECKPOINT = OpDef(
    name="checkpoint",
    value=_run_value,
    jvp=_rerun_jvp,
    vjp=_function_vjp,
    nargs=None,
    saves=frozenset({"args"}),
    batch=_run_batched,
    label="Checkpoint",
    doc="A checkpointed function: its inputs are kept, its interior is re-run.",
)


def checkpoint(f: Callable) -> Callable:
    """``f`` with its interior not taped: re-run on a fresh tape by the backward sweep.

    The tape keeps ``f``'s inputs only. ``f`` takes arrays or tensors and
    returns an array or a tuple of arrays; every tensor it differentiates
    must be an argument. Outside a tape (plain arrays, dual numbers) ``f``
    simply runs.

    >>> import adcompare as ad
    >>> layer = lambda x, w: ad.tanh(x * w) * w
    >>> block = ad.checkpoint(layer)
    >>> x = ad.Tensor([0.5, -1.0], requires_grad=True)
    >>> w = ad.Tensor(2.0, requires_grad=True)
    >>> with ad.count() as cost:
    ...     ad.sum(block(block(x, w), w)).backward()
    >>> print(x.grad)
    tensor([0.06044961, 0.00202085])
    >>> plain = ad.grad(lambda x: ad.sum(layer(layer(x, 2.0), 2.0)))([0.5, -1.0])
    >>> bool((plain == x.grad.numpy()).all())  # bit for bit
    True
    >>> cost.recomputed_ops  # tanh, two multiplies, per block
    6
    """

    @functools.wraps(f)
    def checkpointed(*args):
        if not _taped(args):
            return f(*args)
        call = _FunctionCall(f, _needed(args))
        flat = apply(CHECKPOINT, args, {"call": call})
        return tree_unflatten(call.treedef, split_leaves(flat, call.shapes))

    return checkpointed


# --- loops ----------------------------------------------------------------------------


class _ScanCall(_Call):
    """A loop's record: the schedule, and the snapshots the forward pass left."""

    def __init__(self, step, needed, *, carry_count, has_xs, steps, snapshots):
        super().__init__(step, needed)
        self.carry_count = carry_count
        self.has_xs = has_xs
        self.steps = steps
        self.snapshots = snapshots
        self.left = None  # what the forward pass leaves for the sweep

    def split(self, values):
        carry = list(values[: self.carry_count])
        xs = values[self.carry_count] if self.has_xs else None
        args = list(values[self.carry_count + self.has_xs :])
        return carry, xs, args

    def step(self, state: list, xs, i: int, args: list) -> list:
        x = None if xs is None else getitem(xs, i)
        carry = state[0] if self.carry_count == 1 and not self.as_tuple else tuple(state)
        out, _ = _leaves(self.fn(carry, x, *args))
        return out

    def advance(self, state, xs, args, start, end, recomputed):
        for i in range(start, end):
            if recomputed:
                cost.record_recomputed_step()
            state = self.step(state, xs, i, args)
        return state

    def forward_phase(self, values, recomputed: bool):
        """Run the schedule up to its first reversal: the snapshots and the state x[T-1]."""
        carry, xs, args = self.split(values)
        actions = revolve.actions(self.steps, self.snapshots)
        held, state = {}, carry
        with cost.recomputing() if recomputed else contextlib.nullcontext():
            for action in actions:
                kind = action[0]
                if kind == "reverse":
                    return held, state, actions, action
                state = self._do(action, held, state, xs, args, recomputed)
        raise AssertionError("a schedule without a reversal")  # pragma: no cover

    def _do(self, action, held, state, xs, args, recomputed):
        kind = action[0]
        if kind == "advance":
            return self.advance(state, xs, args, action[1], action[2], recomputed)
        if kind == "snapshot":
            held[action[1]] = state
            if cost.ACTIVE:
                cost.record_hold(_state_bytes(state))
                cost.record_snapshots(len(held))
        elif kind == "restore":
            return held[action[1]]
        elif kind == "free":
            dropped = held.pop(action[1])
            if cost.ACTIVE:
                cost.record_release(_state_bytes(dropped))
        return state

    def cotangents(self, values: tuple, out_bar) -> list:
        left, self.left = self.left, None
        if left is not None and not any(isinstance(v, Box) for v in values):
            held, state, actions, action = left
        else:
            # A second sweep, or one recorded for create_graph: the states must come
            # from these inputs, so the forward phase runs again from them.
            if left is not None and cost.ACTIVE:
                cost.record_release(sum(_state_bytes(v) for v in left[0].values()))
            held, state, actions, action = self.forward_phase(values, recomputed=True)
        _, xs, args = self.split(values)
        positions = self.needed
        xs_needed = self.has_xs and positions[self.carry_count]
        args_needed = [flag for flag in positions[self.carry_count + self.has_xs :]]
        carry_bar = split_leaves(out_bar, self.shapes)
        xs_bar = [None] * self.steps if xs_needed else None
        args_bar = [None] * len(args)
        while action is not None:
            if action[0] == "reverse":
                i = action[1]
                carry_bar, x_bar, step_args_bar = self._reverse(
                    state, xs, i, args, args_needed, xs_needed, carry_bar
                )
                if xs_needed:
                    xs_bar[i] = x_bar
                for k, g in enumerate(step_args_bar):
                    if g is not None:
                        args_bar[k] = g if args_bar[k] is None else add(args_bar[k], g)
            else:
                with cost.recomputing():
                    state = self._do(action, held, state, xs, args, True)
            action = next(actions, None)
        result = list(carry_bar)
        if self.has_xs:
            result.append(stack(xs_bar) if xs_needed else None)
        result += args_bar
        return [r if flag else None for r, flag in zip(result, positions)]

    def _reverse(self, state, xs, i, args, args_needed, xs_needed, carry_bar):
        """Run step ``i`` on a fresh tape from ``state`` and sweep it with ``carry_bar``."""
        cost.record_recomputed_step()
        x = None if xs is None else getitem(xs, i)
        lifted = list(state) + ([x] if xs_needed else [])
        lifted += [a for a, flag in zip(args, args_needed) if flag]
        leaves = lift(lifted)
        count = len(state)
        step_state = leaves[:count]
        x_leaf = leaves[count] if xs_needed else x
        rest = iter(leaves[count + xs_needed :])
        step_args = [next(rest) if flag else a for a, flag in zip(args, args_needed)]
        carry = step_state[0] if self.carry_count == 1 and not self.as_tuple else tuple(step_state)
        with enable_grad(), cost.recomputing():
            outputs, _ = _leaves(self.fn(carry, x_leaf, *step_args))
        found = pullback(outputs, carry_bar, leaves)
        x_bar = found[count] if xs_needed else None
        rest = iter(found[count + xs_needed :])
        args_bar = [next(rest) if flag else None for flag in args_needed]
        return found[:count], x_bar, args_bar

    def rerun_for_tangent(self, duals):
        carry, xs, args = self.split(duals)
        return self.advance(carry, xs, args, 0, self.steps, False)


def _state_bytes(state) -> int:
    return sum(int(np.asarray(raw(v)).nbytes) for v in state)


def _scan_value(*values, call: _ScanCall):
    held, state, actions, action = call.forward_phase(values, recomputed=False)
    _, xs, args = call.split(values)
    out = call.step(state, xs, call.steps - 1, args)
    _refuse_closure(out, "checkpoint.scan")
    call.shapes = [shape_of(v) for v in out]
    call.left = (held, state, actions, action)
    return join_leaves(out)


def _scan_vjp(position, out, *rest, call: _ScanCall):
    *values, out_bar = rest
    return call.cotangent(position, tuple(values), out_bar)


SCAN = OpDef(
    name="checkpoint_scan",
    value=_scan_value,
    jvp=_rerun_jvp,
    vjp=_scan_vjp,
    nargs=None,
    saves=frozenset({"args"}),
    label="CheckpointScan",
    doc="A loop reversed by a checkpointing schedule.",
)


def _loop(step, carry, xs, steps, args):
    as_tuple = isinstance(carry, (tuple, list))
    for i in range(steps):
        carry = step(carry, None if xs is None else xs[i], *args)
    return tuple(carry) if as_tuple else carry


def scan(
    step: Callable,
    carry,
    xs=None,
    *,
    length: int | None = None,
    snapshots: int | str | None = None,
    args: Sequence = (),
):
    """The final carry of ``carry = step(carry, xs[i], *args)`` for each i, checkpointed.

    ``carry`` is an array or a tuple of arrays; ``xs`` an array whose first
    axis is the step (or ``None`` with ``length`` steps, ``step`` then gets
    ``None``). ``snapshots`` chooses how the reverse sweep gets each step's
    state back: ``None`` tapes every step (no recomputation, memory grows
    with the steps), a number ``s`` uses Griewank and Walther's binomial
    schedule with at most ``s`` stored states and the fewest recomputed
    steps (``adcompare.checkpoint.schedule`` shows it), ``"sqrt"`` stores
    every ⌈√n⌉-th state. Tensors the step differentiates go in ``args``.
    With dual numbers (forward mode) the loop simply runs: its memory does
    not grow with the steps.

    Counted: ``count().recomputed_steps`` is the schedule's advances after
    the forward pass plus one taped run per step, ``schedule.advances -
    (steps - 1) + steps``.

    >>> import adcompare as ad
    >>> decay = lambda y, x, rate: y - 0.01 * rate * y
    >>> rate = ad.Tensor(5.0, requires_grad=True)
    >>> with ad.count() as cost:
    ...     y = ad.checkpoint.scan(decay, ad.Tensor(1.0), length=100, snapshots=4, args=(rate,))
    ...     y.backward()
    >>> print(f"{float(rate.grad):.12f} {-0.95**99:.12f}")  # d/dr (1 - r/100)^100
    -0.006232136021 -0.006232136021
    >>> cost.recomputed_steps == ad.checkpoint.schedule(100, 4).advances - 99 + 100
    True
    """
    steps = _steps(xs, length)
    carry_leaves, as_tuple = _leaves(carry)
    values = (*carry_leaves, *([] if xs is None else [xs]), *args)
    if snapshots is None or not _taped(values):
        return _loop(step, carry, xs, steps, args)
    if snapshots != "sqrt":
        revolve.schedule(1, snapshots)  # checks the number
    call = _ScanCall(
        step,
        _needed(values),
        carry_count=len(carry_leaves),
        has_xs=xs is not None,
        steps=steps,
        snapshots=snapshots,
    )
    call.as_tuple = as_tuple
    flat = apply(SCAN, values, {"call": call})
    out = split_leaves(flat, call.shapes)
    return tuple(out) if as_tuple else out[0]


def _steps(xs, length: int | None) -> int:
    """How many steps a scan takes: ``xs``'s first axis, or ``length``."""
    if xs is None and length is None:
        raise ValueError("scan: give xs (one entry per step) or length (the number of steps)")
    steps = length if xs is None else shape_of(xs)[0]
    if length is not None and steps != length:
        raise ValueError(f"scan: xs has {steps} steps but length={length}; give one of them")
    if steps < 1:
        raise ValueError(f"scan: needs at least one step, got {steps}")
    return steps


checkpoint.scan = scan
checkpoint.schedule = revolve.schedule
