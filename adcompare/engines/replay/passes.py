"""Optimising passes over a recorded program, each a small function.

A pass takes the program's steps (each tagged with the sweep it belongs to)
and its outputs, and returns new ones that compute bit-identical results:

- :func:`simplify`: algebra that IEEE arithmetic keeps exact: ``x * 1``,
  ``x / 1``, ``x - 0``, ``x + (-0)``, ``-(-x)``, a negation folded into the
  sum or product that uses it (``a + (-b)`` is ``a - b`` to the bit) or into
  a constant factor (``-(c * v)`` is ``(-c) * v``), and a constant array of
  one repeated number read as that number (the reverse sweep's seed); sign
  folds only on real floats, where IEEE keeps them exact (an integer's negation
  wraps; complex parts cancel to either zero), and no identity on complex
  values (``(inf+nanj) * 1`` is ``nan+nanj``);
- :func:`eliminate_common_subexpressions`: an instruction that repeats an
  earlier one (same function, same operands) reuses its result, such as
  a value the forward pass computed and a rule computes again in the
  reverse sweep;
- :func:`carry_signs`: a negation carried through the products and quotients
  that read it (``(-a) * b`` is ``-(a * b)``) to the sum that folds it or the
  negation that cancels it, where that leaves fewer elements negated;
- :func:`fuse_unbroadcast`: a ``broadcast_to`` read by an elementwise op,
  and a ``sum`` keeping axes for a ``reshape`` to drop, fused into that op;
- :func:`eliminate_dead_code`: what neither an output nor a guard reads;
- :func:`~adcompare.engines.replay.memory.accumulate_in_place` and
  :func:`~adcompare.engines.replay.memory.reuse_buffers`: the memory passes;
- :func:`~adcompare.engines.replay.lower.lower`: each instruction in its
  cheapest form (a subscript, numpy called directly, constants as arrays).

Constants need no pass: an op whose arguments hold no traced value runs once,
while ``f`` is recorded, and its result enters the program as a constant.
Guards are never removed while they read a value that can change: a replay
stays valid only where the recording's branches hold. Bit-identical means every
bit but a NaN's sign, which IEEE leaves to each operation (``a - b`` and
``a + (-b)`` give NaNs of opposite signs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from adcompare.engines.replay.lower import lower
from adcompare.engines.replay.memory import (
    accumulate_in_place,
    note_shares,
    peak_live_bytes,
    reuse_buffers,
)
from adcompare.engines.replay.record import Guard, Instruction, Recording
from adcompare.ops import OPS

__all__ = [
    "MEMORY_PASSES",
    "PASSES",
    "PassStats",
    "accumulate_in_place",
    "carry_signs",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fuse_unbroadcast",
    "lower",
    "optimise",
    "peak_stats",
    "reuse_buffers",
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
    new_steps = []
    for sweep, step in steps:
        step = _renamed(step, replaced)
        if step is not None:
            new_steps.append((sweep, step))
    return new_steps, [_swap(spec, replaced) for spec in outputs]


def _swap(spec: tuple, replaced: dict) -> tuple:
    return replaced.get(spec[1], spec) if spec[0] == "s" else spec


def _renamed(step, replaced: dict):
    """``step`` reading each replaced slot's replacement; ``None`` for a guard whose
    value became a constant (it can no longer change: it always holds)."""
    if isinstance(step, Guard):
        target = replaced.get(step.slot)
        if target is None:
            return step
        return None if target[0] == "c" else dataclasses.replace(step, slot=target[1])
    args = tuple([_swap(spec, replaced) for spec in step.args])
    kwargs = tuple([(k, _swap(spec, replaced)) for k, spec in step.kwargs])
    if args != step.args or kwargs != step.kwargs:
        step = dataclasses.replace(step, args=args, kwargs=kwargs)
    return step


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


def _uniform_constants(recording: Recording, step: Instruction) -> Instruction:
    """An elementwise instruction reading each constant array whose elements are all one
    number as that number (of the array's dtype), where the result keeps its shape."""
    if not (step.op.elementwise and isinstance(step.op.value, np.ufunc)) or step.kwargs:
        return step
    args, changed = list(step.args), False
    for i, (kind, value) in enumerate(args):
        if kind != "c" or type(value) is not np.ndarray or value.size == 0:
            continue
        flat = np.ascontiguousarray(value).reshape(-1)
        if flat.dtype.kind not in "fc":
            continue
        as_bytes = flat.view(np.uint8).reshape(flat.size, -1)
        if not (as_bytes == as_bytes[:1]).all():
            continue
        others = [np.shape(_value_of(recording, spec)) for j, spec in enumerate(args) if j != i]
        if np.broadcast_shapes(*others, ()) == np.shape(recording.values[step.out]):
            args[i], changed = ("c", flat[0]), True  # a numpy scalar promotes as the array did
    return dataclasses.replace(step, args=tuple(args)) if changed else step


def _value_of(recording: Recording, spec):
    kind, value = spec
    return recording.values[value] if kind == "s" else value


def _negated_constant(spec) -> tuple | None:
    """``-c`` for a constant number or array ``c``: negation is exact."""
    kind, value = spec
    if kind != "c":
        return None
    if type(value) in (int, float, complex):
        return ("c", -value)  # Python numbers keep their weak promotion
    if isinstance(value, (np.ndarray, np.number)) and value.dtype.kind in "fc":
        return ("c", -value)
    return None


def _fold_sign(step: Instruction, inner: list, products: dict):
    """``(-v) * c`` or ``(-v) / c`` as ``v * (-c)``, ``v / (-c)``; ``-(v * c)`` as ``v * (-c)``.

    Real floats only (the caller's check): a complex product's parts can cancel to
    +0 one way and -0 the other, and a complex quotient by zero divides by its
    absolute real part.
    """
    name, args = step.op.name, step.args
    if name in ("multiply", "divide") and inner[0] is not None:
        negated = _negated_constant(args[1])
        if negated is not None:
            return _op_instruction(step, name, (inner[0], negated))
    if name == "multiply" and inner[1] is not None:
        negated = _negated_constant(args[0])
        if negated is not None:
            return _op_instruction(step, name, (negated, inner[1]))
    if name == "negative" and args[0][0] == "s" and args[0][1] in products:
        x, y = products[args[0][1]]
        if _negated_constant(y) is not None:
            return _op_instruction(step, "multiply", (x, _negated_constant(y)))
        if _negated_constant(x) is not None:
            return _op_instruction(step, "multiply", (_negated_constant(x), y))
    return None


def simplify(recording: Recording, steps: Steps, outputs: list) -> tuple[Steps, list]:
    """Apply the exact algebraic identities (see the module's docstring)."""
    return _simplify(recording, steps, outputs, carry=False)


def carry_signs(recording: Recording, steps: Steps, outputs: list) -> tuple[Steps, list]:
    """Carry each negation through the products and quotients that read it,
    ``(-a) * b`` written ``-(a * b)``, until a sum folds it (``c + (-(a * b))`` is
    ``c - a * b``) or a second negation cancels it, as in the reverse sweep of a
    chain of ``cos``. Carried, a negation that nothing folds is computed on each
    product it reached instead of once on ``a``; so the carried program is kept
    only where it negates fewer elements. Runs after common subexpressions, so
    that a repeated negation is counted once.
    """
    negated = _negated_elements(recording, eliminate_dead_code(recording, steps, outputs)[0])
    if not negated:  # nothing to carry
        return steps, outputs
    carried = eliminate_dead_code(recording, *_simplify(recording, steps, outputs, carry=True))
    return carried if _negated_elements(recording, carried[0]) < negated else (steps, outputs)


def _simplify(recording: Recording, steps: Steps, outputs: list, carry: bool):
    negated: dict[int, tuple] = {}  # slot of negative(v) -> the operand v
    products: dict[int, tuple] = {}  # slot of multiply(x, y) -> (x, y)
    replaced: dict = {}
    kept: Steps = []
    for sweep, step in steps:
        step = _renamed(step, replaced) if replaced else step
        if step is None:
            continue
        if isinstance(step, Guard) or step.kind != "op" or _in_place(step):
            kept.append((sweep, step))
            continue
        step = _uniform_constants(recording, step)
        name, args = step.op.name, step.args
        kind = np.result_type(recording.values[step.out]).kind  # every rewrite keeps the out
        # Not on complex values: (inf+nanj) * 1 is nan+nanj, and z + (-0.0) adds +0j.
        same = _identity_operand(step) if kind != "c" else None
        if same is not None and _same_layout(recording, same, step.out):
            replaced[step.out] = same
            continue
        inner = [negated.get(a[1]) if a[0] == "s" else None for a in args]
        folded = _fold_sign(step, inner, products) if kind == "f" and not step.kwargs else None
        if folded is not None:
            if name == "negative":  # still the negation of its operand, for later folds
                negated[step.out] = args[0]
            step, name, args = folded, folded.op.name, folded.args
            inner = [negated.get(a[1]) if a[0] == "s" else None for a in args]
        if name == "negative" and inner[0] is not None:
            if _same_layout(recording, inner[0], step.out):
                replaced[step.out] = inner[0]
                continue
        elif kind != "f":
            pass  # complex: a real operand's imaginary part is +0, negated or not
        elif name == "add" and inner[1] is not None:
            step = _op_instruction(step, "subtract", (args[0], inner[1]))
        elif name == "add" and inner[0] is not None:
            step = _op_instruction(step, "subtract", (args[1], inner[0]))
        elif name == "subtract" and None not in inner:  # (-a) - (-b) is b - a, to the bit
            step = _op_instruction(step, "subtract", (inner[1], inner[0]))
        elif name == "subtract" and inner[1] is not None:
            step = _op_instruction(step, "add", (args[0], inner[1]))
        elif name in ("multiply", "divide") and None not in inner:
            step = _op_instruction(step, name, (inner[0], inner[1]))
        elif carry and name in ("multiply", "divide") and not step.kwargs:
            step = _carry_sign(recording, step, inner, kept, sweep)
        if step.op.name == "negative" and not step.kwargs and kind in "fc":
            negated[step.out] = step.args[0]  # an integer's negation wraps: -uint8(1) is 255
        if step.op.name == "multiply" and not step.kwargs:
            products[step.out] = step.args
        kept.append((sweep, step))
    return _substitute(kept, outputs, replaced)


def _carry_sign(recording: Recording, step: Instruction, inner: list, kept: Steps, sweep: str):
    """``(-a) * b`` (or ``/``) of real floats as ``t = a * b`` appended to ``kept`` and
    ``-t`` returned: exact, since IEEE rounding is symmetric in sign (see _fold_sign
    for why not complex values). ``-t`` is dead code once every reader folds it."""
    position = 0 if inner[0] is not None else 1 if inner[1] is not None else None
    if position is None:
        return step
    if np.result_type(_value_of(recording, inner[position])).kind != "f":
        return step
    value = recording.values[step.out]
    args = list(step.args)
    args[position] = inner[position]
    unsigned = dataclasses.replace(step, args=tuple(args), out=recording.new_slot(-value))
    kept.append((sweep, unsigned))
    return _op_instruction(step, "negative", (("s", unsigned.out),))


def _negated_elements(recording: Recording, steps: Steps) -> int:
    """How many elements the negations among ``steps`` compute."""
    return sum(
        int(np.size(recording.values[step.out]))
        for _, step in steps
        if isinstance(step, Instruction) and step.op is not None and step.op.name == "negative"
    )


def _key_of(spec):
    kind, value = spec
    if kind == "s":
        return spec
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_key_of(("c", part)) for part in value))
    if isinstance(value, slice):
        return ("slice", *(_key_of(("c", part)) for part in (value.start, value.stop, value.step)))
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
        step = _renamed(step, replaced) if replaced else step
        if step is None:
            continue
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


def _readers(steps: Steps, outputs: list) -> dict[int, int]:
    counts: dict[int, int] = {}
    specs = [spec for _, step in steps if isinstance(step, Instruction) for spec in _operands(step)]
    specs += [("s", step.slot) for _, step in steps if isinstance(step, Guard)]
    for kind, slot in specs + outputs + outputs:  # an output counts as two readers
        if kind == "s":
            counts[slot] = counts.get(slot, 0) + 1
    return counts


def _is_op(step, name: str) -> bool:
    return isinstance(step, Instruction) and step.kind == "op" and step.op.name == name


def _broadcasting_itself(recording: Recording, step: Instruction, producers: dict):
    """An elementwise op reading ``broadcast_to(v)`` reads ``v``, where numpy's own
    broadcasting gives the result its shape."""
    if not (step.op.elementwise and isinstance(step.op.value, np.ufunc)) or step.kwargs:
        return step
    args, changed = list(step.args), False
    for i, (kind, slot) in enumerate(args):
        source = producers.get(slot) if kind == "s" else None
        if not _is_op(source, "broadcast_to") or _in_place(source):
            continue
        narrower = args[:i] + [source.args[0]] + args[i + 1 :]
        shapes = [np.shape(_value_of(recording, spec)) for spec in narrower]
        if np.broadcast_shapes(*shapes) == np.shape(recording.values[step.out]):
            args, changed = narrower, True
    return dataclasses.replace(step, args=tuple(args)) if changed else step


def _sum_dropping_axes(recording: Recording, step: Instruction, producers: dict, readers: dict):
    """``reshape(sum(v, axes, keepdims=True))`` that only drops the summed axes, as
    ``sum(v, axes, keepdims=False)``."""
    if not _is_op(step, "reshape") or step.args[0][0] != "s":
        return step
    source = producers.get(step.args[0][1])
    if not _is_op(source, "sum") or readers.get(source.out) != 1:
        return step
    keywords = dict(source.kwargs)
    if keywords.get("keepdims") != ("c", True) or keywords.get("axis", ("s",))[0] != "c":
        return step
    summed = np.shape(_value_of(recording, source.args[0]))
    axes = {axis % len(summed) for axis in keywords["axis"][1]}
    dropped = tuple(n for axis, n in enumerate(summed) if axis not in axes)
    if dropped != np.shape(recording.values[step.out]):
        return step
    kwargs = tuple((k, ("c", False) if k == "keepdims" else v) for k, v in source.kwargs)
    return dataclasses.replace(source, kwargs=kwargs, out=step.out)


def fuse_unbroadcast(recording: Recording, steps: Steps, outputs: list) -> tuple[Steps, list]:
    """Fuse the reverse sweep's broadcasts and unbroadcasting sums into the ops that use them.

    An elementwise op broadcasts its operands itself, so it reads
    ``broadcast_to``'s operand directly; a ``sum`` that keeps the summed axes
    only to have a ``reshape`` drop them drops them itself. Both give the
    same numbers from the same arithmetic.
    """
    producers = {step.out: step for _, step in steps if isinstance(step, Instruction)}
    readers = _readers(steps, outputs)
    kept: Steps = []
    for sweep, step in steps:
        if isinstance(step, Instruction) and step.kind == "op" and not _in_place(step):
            step = _broadcasting_itself(recording, step, producers)
            step = _sum_dropping_axes(recording, step, producers, readers)
        kept.append((sweep, step))
    return kept, outputs


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
#: The memory passes come next: they read which values are still needed; then
#: :func:`~adcompare.engines.replay.lower.lower` picks how each instruction is written.
PASSES: tuple[Callable, ...] = (
    simplify,
    eliminate_common_subexpressions,
    carry_signs,
    fuse_unbroadcast,
    eliminate_dead_code,
    accumulate_in_place,
    reuse_buffers,
    lower,
)


#: The passes that decide where results are written (and how instructions are written):
#: they run on a program once it is split into the parts that run apart
#: (:mod:`~adcompare.engines.replay.staged`).
MEMORY_PASSES: tuple[Callable, ...] = (accumulate_in_place, reuse_buffers, lower)


class PassStats(NamedTuple):
    """A pass and what it changed: ``before`` and ``after`` count instructions; the
    row named ``"peak live bytes"`` gives those of the program before and after
    every pass (:func:`~adcompare.engines.replay.memory.peak_live_bytes`)."""

    name: str
    before: int
    after: int


def optimise(
    recording: Recording, steps: Steps, outputs: list, passes=PASSES
) -> tuple[Steps, list, list[PassStats]]:
    """Run ``passes`` in order (with :func:`eliminate_dead_code` last unless among
    them); also return each pass's :class:`PassStats` (:func:`peak_stats` gives the
    peak live bytes' row)."""
    if eliminate_dead_code not in passes:
        passes = (*passes, eliminate_dead_code)
    steps = [(sweep, note_shares(recording, step)) for sweep, step in steps]
    stats = []
    for run_pass in passes:
        before = sum(isinstance(step, Instruction) for _, step in steps)
        steps, outputs = run_pass(recording, steps, outputs)
        after = sum(isinstance(step, Instruction) for _, step in steps)
        stats.append(PassStats(run_pass.__name__, before, after))
    return steps, outputs, stats


def peak_stats(recording: Recording, before: tuple, after: tuple) -> PassStats:
    """The ``"peak live bytes"`` row: those of the program ``before`` the passes and
    ``after`` them, each ``(steps, outputs)`` (steps with their shares noted)."""
    return PassStats(
        "peak live bytes",
        peak_live_bytes(recording, *before),
        peak_live_bytes(recording, *after),
    )
