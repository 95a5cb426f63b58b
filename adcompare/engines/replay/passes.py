"""Optimising passes over a recorded program, each a small function.

A pass takes the program's steps (each tagged with the sweep it belongs to)
and its outputs, and returns new ones that compute bit-identical results:

- :func:`simplify`: algebra that IEEE arithmetic keeps exact: ``x * 1``,
  ``x / 1``, ``x - 0``, ``x + (-0)``, ``-(-x)``, a negation folded into the
  sum or product that uses it (``a + (-b)`` is ``a - b`` to the bit);
- :func:`eliminate_common_subexpressions`: an instruction that repeats an
  earlier one (same function, same operands) reuses its result, such as
  a value the forward pass computed and a rule computes again in the
  reverse sweep;
- :func:`eliminate_dead_code`: what neither an output nor a guard reads.

Constants need no pass: an op whose arguments hold no traced value runs once,
while ``f`` is recorded, and its result enters the program as a constant.
Guards are never removed while they read a value that can change: a replay
stays valid only where the recording's branches hold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from adcompare.engines.replay.record import Guard, Instruction, Recording
from adcompare.ops import OPS

__all__ = [
    "PASSES",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "optimise",
    "simplify",
]

#: A program between passes: ``[(sweep, step), ...]`` with sweep ``"forward"`` or
#: ``"reverse"``, and the output operands.
Steps = list[tuple[str, Instruction | Guard]]


def _operands(step: Instruction) -> list:
    return list(step.args) + [spec for _, spec in step.kwargs]


def _substitute(steps: Steps, outputs: list, replaced: dict) -> tuple[Steps, list]:
    """Rewrite every read of a replaced slot to its replacement operand."""
    if not replaced:
        return steps, outputs

    def swap(spec):
        return replaced.get(spec[1], spec) if spec[0] == "s" else spec

    new_steps = []
    for sweep, step in steps:
        if isinstance(step, Guard):
            target = swap(("s", step.slot))
            if target[0] == "c":
                continue  # its value can no longer change: it always holds
            new_steps.append((sweep, dataclasses.replace(step, slot=target[1])))
            continue
        args = tuple(swap(spec) for spec in step.args)
        kwargs = tuple((k, swap(spec)) for k, spec in step.kwargs)
        if args != step.args or kwargs != step.kwargs:
            step = dataclasses.replace(step, args=args, kwargs=kwargs)
        new_steps.append((sweep, step))
    return new_steps, [swap(spec) for spec in outputs]


def _in_place(step: Instruction) -> bool:
    return any(name == "out" for name, _ in step.kwargs)


def _constant_equal(spec, number: float, negative_zero: bool = False) -> bool:
    kind, value = spec
    if kind != "c" or isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
        return False
    value = np.asarray(value)
    if value.dtype.kind not in "fiu" or value != number:
        return False
    return not negative_zero or bool(np.signbit(value))


def _same_layout(recording: Recording, spec, out: int) -> bool:
    """Whether the operand has the shape and dtype of the instruction's result."""
    value = recording.values[spec[1]] if spec[0] == "s" else spec[1]
    result = recording.values[out]
    try:
        return np.shape(value) == np.shape(result) and (
            np.result_type(value) == np.result_type(result)
        )
    except (TypeError, ValueError):  # index tuples, lists of arrays: not array-like
        return False


def _identity_operand(step: Instruction):
    """The operand an instruction returns unchanged, by an exact identity, or None."""
    name = step.op.name if step.kind == "op" else None
    if step.kwargs or name not in ("multiply", "divide", "add", "subtract"):
        return None
    x, y = step.args
    if name == "multiply":
        return x if _constant_equal(y, 1.0) else y if _constant_equal(x, 1.0) else None
    if name == "divide":
        return x if _constant_equal(y, 1.0) else None
    if name == "subtract":  # x - (+0) is x, also for x = -0
        return x if _constant_equal(y, 0.0) and not _constant_equal(y, 0.0, True) else None
    # x + (-0) is x for every x; x + (+0) turns -0 into +0, so it stays.
    if _constant_equal(y, 0.0, negative_zero=True):
        return x
    return y if _constant_equal(x, 0.0, negative_zero=True) else None


def _op_instruction(step: Instruction, name: str, args: tuple) -> Instruction:
    op = OPS[name]
    return dataclasses.replace(step, fn=op.value, args=args, op=op)


def simplify(recording: Recording, steps: Steps, outputs: list) -> tuple[Steps, list]:
    """Apply the exact algebraic identities (see the module's docstring)."""
    negated: dict[int, tuple] = {}  # slot of negative(v) -> the operand v
    replaced: dict = {}
    kept: Steps = []
    for sweep, step in steps:
        step = _substitute([(sweep, step)], [], replaced)[0][0][1] if replaced else step
        if isinstance(step, Guard) or step.kind != "op" or _in_place(step):
            kept.append((sweep, step))
            continue
        name, args = step.op.name, step.args
        same = _identity_operand(step)
        if same is not None and _same_layout(recording, same, step.out):
            replaced[step.out] = same
            continue
        inner = [negated.get(a[1]) if a[0] == "s" else None for a in args]
        if name == "negative" and inner[0] is not None:
            if _same_layout(recording, inner[0], step.out):
                replaced[step.out] = inner[0]
                continue
        elif name == "add" and inner[1] is not None:
            step = _op_instruction(step, "subtract", (args[0], inner[1]))
        elif name == "add" and inner[0] is not None:
            step = _op_instruction(step, "subtract", (args[1], inner[0]))
        elif name == "subtract" and inner[1] is not None:
            step = _op_instruction(step, "add", (args[0], inner[1]))
        elif name == "multiply" and inner[0] is not None and inner[1] is not None:
            step = _op_instruction(step, "multiply", (inner[0], inner[1]))
        if step.op.name == "negative" and not step.kwargs:
            negated[step.out] = step.args[0]
        kept.append((sweep, step))
    return _substitute(kept, outputs, replaced)


def _key_of(spec):
    kind, value = spec
    if kind == "s":
        return spec
    if isinstance(value, np.ndarray) and value.size > 16:
        return ("id", id(value))
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return ("id", id(value))
    if array.dtype == object:
        return ("id", id(value))
    return (type(value).__name__, array.dtype.str, array.shape, array.tobytes())


def eliminate_common_subexpressions(
    recording: Recording, steps: Steps, outputs: list
) -> tuple[Steps, list]:
    """Let an instruction that repeats an earlier one reuse its result."""
    seen: dict = {}
    replaced: dict = {}
    kept: Steps = []
    for sweep, step in steps:
        step = _substitute([(sweep, step)], [], replaced)[0][0][1] if replaced else step
        if isinstance(step, Instruction) and not _in_place(step):
            try:
                key = (
                    step.kind,
                    step.op if step.kind == "op" else (step.fn, repr(step.base)),
                    tuple(_key_of(spec) for spec in step.args),
                    tuple((k, _key_of(spec)) for k, spec in step.kwargs),
                )
                hash(key)
            except TypeError:
                key = None
            if key is not None:
                if key in seen and _same_layout(recording, ("s", seen[key]), step.out):
                    replaced[step.out] = ("s", seen[key])
                    continue
                seen[key] = step.out
        kept.append((sweep, step))
    return _substitute(kept, outputs, replaced)


def eliminate_dead_code(recording: Recording, steps: Steps, outputs: list) -> tuple[Steps, list]:
    """Keep only the steps that an output or a guard depends on, in order."""
    needed = {slot for kind, slot in outputs if kind == "s"}
    kept: Steps = []
    for sweep, step in reversed(steps):
        if isinstance(step, Guard):
            needed.add(step.slot)
        elif step.out in needed:
            needed.update(slot for kind, slot in _operands(step) if kind == "s")
        else:
            continue
        kept.append((sweep, step))
    kept.reverse()
    return kept, outputs


#: The optimising passes, in order; a program always ends with :func:`eliminate_dead_code`.
PASSES: tuple[Callable, ...] = (simplify, eliminate_common_subexpressions)


def optimise(
    recording: Recording, steps: Steps, outputs: list, passes=PASSES
) -> tuple[Steps, list, list[tuple[str, int, int]]]:
    """Run ``passes`` in order; also return ``(pass, instructions before, after)`` for each."""
    stats = []
    for run_pass in passes:
        before = sum(isinstance(step, Instruction) for _, step in steps)
        steps, outputs = run_pass(recording, steps, outputs)
        after = sum(isinstance(step, Instruction) for _, step in steps)
        stats.append((run_pass.__name__, before, after))
    return steps, outputs, stats
