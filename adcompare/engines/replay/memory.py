"""Memory passes over a recorded program: liveness, in-place writes, peak live bytes.

A replay that gives every result fresh memory keeps a working set of one array
per instruction, where plain numpy reuses its temporaries. These passes write
results into the memory of arrays nobody reads any more:

- :func:`accumulate_in_place`: a cotangent added into a slice of a larger one
  (``total + scatter_add(part, index)``) is added where it lands,
  ``total[index] += part``, instead of scattering into zeros first; two
  scatters at one index become one scatter of the sum;
- :func:`reuse_buffers`: an elementwise result is computed into the buffer of
  an array whose last reader has run (``out=``), by liveness.

Both keep every result bit-identical: outside the index the accumulation
still adds ``+0.0`` (which turns ``-0.0`` into ``+0.0``, as the scatter's
zeros did). Only memory the program allocated itself is ever written: never
an input, an array ``f`` reads, a constant, or an array an output or a live
view still refers to. :func:`peak_live_bytes` measures what a program holds
at once, with every array freed after its last reader (as the generated code
does).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from adcompare.engines.replay.record import Guard, Instruction, Recording
from adcompare.ops import OPS

__all__ = ["IN_PLACE_FROM", "accumulate_in_place", "last_uses", "peak_live_bytes", "reuse_buffers"]

#: Results of at least this many bytes are written into dead buffers; below it
#: an ``out=`` argument costs about what the allocation it saves does.
IN_PLACE_FROM = 1 << 14

#: Ops whose value is always a new array of its own (so it may be written into).
_FRESH_OPS = frozenset({"scatter_add", "matmul"})


def reads(step) -> list[int]:
    """The slots a step reads (an instruction's ``out=`` buffer included)."""
    if isinstance(step, Guard):
        return [step.slot]
    specs = list(step.args) + [spec for _, spec in step.kwargs]
    return [slot for kind, slot in specs if kind == "s"]


def last_uses(steps: list, outputs: list) -> dict[int, int]:
    """For each slot, the position of the last step that reads it (``len(steps)``: an output)."""
    last: dict[int, int] = {}
    for position, (_, step) in enumerate(steps):
        for slot in reads(step):
            last[slot] = position
    for kind, slot in outputs:
        if kind == "s":
            last[slot] = len(steps)
    return last


def writes_into(step: Instruction) -> int | None:
    """The slot whose memory the instruction writes its result into, or None."""
    for name, (kind, slot) in step.kwargs:
        if name == "out" and kind == "s":
            return slot
    return None


def _writable(recording: Recording, step: Instruction) -> bool:
    """Whether the instruction's result is always a new array that only it refers to."""
    value = recording.values.get(step.out)
    if not isinstance(value, np.ndarray) or value.ndim == 0 or step.kind != "op":
        return False
    op = step.op
    return op.name in _FRESH_OPS or (op.elementwise and op.hints.into is not None)


def note_shares(recording: Recording, step):
    """``step`` with :attr:`Instruction.shares` read off the recorded values.

    Run before any pass: once common subexpressions are merged, an operand's
    slot may hold another recording of the same value, whose memory the
    recorded result does not share although the replayed one does.
    """
    if not isinstance(step, Instruction) or step.shares is not None:
        return step
    value = recording.values.get(step.out)
    if not isinstance(value, np.ndarray):
        return step

    def shared(operand) -> bool:
        kind, slot = operand
        other = recording.values.get(slot) if kind == "s" else None
        return isinstance(other, np.ndarray) and np.may_share_memory(value, other)

    positions = [i for i, operand in enumerate(step.args) if shared(operand)]
    names = [name for name, operand in step.kwargs if shared(operand)]
    return dataclasses.replace(step, shares=(*positions, *names))


def _shared_slots(step: Instruction) -> list[int]:
    """The slots of the operands :attr:`Instruction.shares` names."""
    keywords = dict(step.kwargs)
    return [(step.args[key] if isinstance(key, int) else keywords[key])[1] for key in step.shares]


def _allocates(recording: Recording, step: Instruction) -> bool:
    """Whether the instruction's result is new memory (a view or an operand is not)."""
    if _writable(recording, step):
        return True
    value = recording.values.get(step.out)
    if not isinstance(value, np.ndarray):
        return False
    if step.shares is not None:
        return not step.shares
    operands = [recording.values.get(slot) for slot in reads(step)]
    return not any(
        isinstance(operand, np.ndarray) and np.may_share_memory(value, operand)
        for operand in operands
    )


class _Buffers:
    """Which arrays the program allocated each slot's value may share memory with.

    A buffer is named by the slot that allocated it; ``owner`` maps it to
    the slot that holds all of it now (after in-place writes, their result).
    """

    def __init__(self, recording: Recording, steps: list, outputs: list):
        self.recording = recording
        self.last = last_uses(steps, outputs)
        self.roots: dict[int, frozenset] = {}
        #: Per buffer, the last step that reads a slot holding (part of) it.
        self.death: dict[int, int] = {}
        self.owner: dict[int, int] = {}
        self.writable: set[int] = set()
        #: Per slot, the box of its array that may hold -0.0 (absent: anywhere).
        self.signed_zeros: dict[int, list | None] = {}

    def add(self, step: Instruction) -> None:
        """Account for ``step``'s result."""
        written = writes_into(step)
        if written is not None:
            roots = self.roots.get(written, frozenset())
            if len(roots) == 1:
                self.owner[next(iter(roots))] = step.out
        elif _allocates(self.recording, step):
            roots = frozenset({step.out})
            self.owner[step.out] = step.out
            if _writable(self.recording, step):
                self.writable.add(step.out)
        elif isinstance(self.recording.values.get(step.out), (np.generic, int, float, complex)):
            roots = frozenset()  # a number holds no memory of an array's
        else:  # a view, a pack, an element: it may refer to the buffers it reads
            roots = frozenset().union(*(self.roots.get(slot, ()) for slot in self._viewed(step)))
        self.roots[step.out] = roots
        last = self.last.get(step.out, -1)
        for root in roots:
            self.death[root] = max(self.death.get(root, -1), last)

    def _viewed(self, step: Instruction) -> list[int]:
        """The operands whose memory the result may share: for an array, those whose
        recorded memory overlaps the recorded result's (a view has one base)."""
        value = self.recording.values.get(step.out)
        if not isinstance(value, np.ndarray):
            return reads(step)
        if step.shares is not None:
            return _shared_slots(step)
        return [
            slot
            for slot in reads(step)
            if not isinstance(self.recording.values.get(slot), np.ndarray)
            or np.may_share_memory(value, self.recording.values[slot])
        ]

    def free_at(self, buffer: int, position: int) -> bool:
        """Whether no step after ``position`` reads ``buffer``'s memory."""
        return self.death.get(buffer, -1) <= position

    def writable_whole(self, slot: int, position: int) -> int | None:
        """The buffer ``slot`` holds all of, if the program may write into it at ``position``."""
        roots = self.roots.get(slot, frozenset())
        if len(roots) != 1:
            return None
        (buffer,) = roots
        if buffer not in self.writable or self.owner.get(buffer) != slot:
            return None
        return buffer if self.free_at(buffer, position) else None


def _layout(value) -> tuple:
    return (value.shape, value.dtype.str, value.strides)


def _into_function(op):
    """``op``'s value as a function taking ``out=`` and returning it."""
    if isinstance(op.value, np.ufunc):
        return op.value
    into = op.hints.into

    def run(*args, out):
        into(out, *args)
        return out

    run.__name__ = f"{op.name}_into"
    return run


def reuse_buffers(recording: Recording, steps: list, outputs: list) -> tuple[list, list]:
    """Compute large elementwise results into buffers whose last reader has run."""
    buffers = _Buffers(recording, steps, outputs)
    idle: dict[tuple, list[int]] = defaultdict(list)
    kept = []
    for position, (sweep, step) in enumerate(steps):
        if isinstance(step, Guard):
            kept.append((sweep, step))
            continue
        value = recording.values.get(step.out)
        if (
            writes_into(step) is None
            and _writable(recording, step)
            and step.op.elementwise
            and value.nbytes >= IN_PLACE_FROM
            and value.flags.c_contiguous
        ):
            buffer = _take(buffers, idle[_layout(value)], step, position)
            if buffer is not None:
                out = ("out", ("s", buffers.owner[buffer]))
                step = dataclasses.replace(
                    step, fn=_into_function(step.op), kwargs=(*step.kwargs, out)
                )
        buffers.add(step)
        if step.out in buffers.writable:
            idle[_layout(value)].append(step.out)
        kept.append((sweep, step))
    return kept, outputs


def _take(buffers: _Buffers, idle: list[int], step: Instruction, position: int) -> int | None:
    """A buffer of the result's layout free at ``position``: an operand's first."""
    layout = _layout(buffers.recording.values[step.out])
    for slot in reads(step):
        buffer = buffers.writable_whole(slot, position)
        if buffer is not None and _layout(buffers.recording.values[buffer]) == layout:
            return buffer
    for buffer in reversed(idle):  # the most recently freed is the likeliest in cache
        if buffers.free_at(buffer, position):
            return buffer
    return None


def _box(index, shape: tuple) -> list[tuple[int, int]] | None:
    """Per axis, the range ``[lo, hi)`` a basic index of integers and step-1 slices writes.

    ``None`` for any other index (arrays, strides, ``None``, ``...``).
    """
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > len(shape):
        return None
    ranges = []
    for item, n in zip(items, shape):
        if isinstance(item, slice) and item.step in (None, 1):
            lo, hi, _ = item.indices(n)
            ranges.append((lo, max(lo, hi)))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool) and -n <= item < n:
            ranges.append((int(item) % n, int(item) % n + 1))
        else:
            return None
    return ranges + [(0, n) for n in shape[len(ranges) :]]


def _intersection(a: list | None, b: list) -> list | None:
    """The box two boxes share, or None."""
    if a is None:
        return None
    ranges = [(max(lo, low), min(hi, high)) for (lo, hi), (low, high) in zip(a, b)]
    return None if any(lo >= hi for lo, hi in ranges) else ranges


def _difference(a: list | None, b: list) -> tuple:
    """Indices covering the box ``a`` outside the box ``b`` once each."""
    if a is None:
        return ()
    if _intersection(a, b) is None:
        return (tuple(slice(lo, hi) for lo, hi in a),)
    shared = _intersection(a, b)
    parts = []
    for axis, ((lo, hi), (low, high)) in enumerate(zip(a, b)):
        before = tuple(slice(*r) for r in shared[:axis])
        after = tuple(slice(*r) for r in a[axis + 1 :])
        parts += [before + (slice(lo, low),) + after] if lo < low else []
        parts += [before + (slice(high, hi),) + after] if high < hi else []
    return tuple(parts)


def add_at(part, index, outside, out):
    """``out[index] += part``; ``out[outside] += 0.0``, as adding a scatter's zeros would.

    ``outside`` need only cover where ``out`` may hold ``-0.0`` (which ``+ 0.0``
    turns into ``+0.0``); elsewhere adding zero changes no bit.

    >>> import numpy as np
    >>> total = np.array([-0.0, 1.0, 2.0])
    >>> add_at(np.array([5.0, 5.0]), (slice(1, 3),), ((slice(0, 1),),), total)
    array([0., 6., 7.])
    """
    out[index] += part
    for box in outside:
        out[box] += 0.0
    return out


def _scatter(step) -> tuple | None:
    """``(part, index, shape)`` of a ``scatter_add`` at a basic index, else None."""
    if not (isinstance(step, Instruction) and step.kind == "op" and step.op.name == "scatter_add"):
        return None
    keywords = dict(step.kwargs)
    index, shape = keywords.get("index"), keywords.get("shape")
    if index is None or index[0] != "c" or shape is None or shape[0] != "c":
        return None
    if _box(index[1], tuple(shape[1])) is None or writes_into(step) is not None:
        return None
    return step.args[0], index[1], tuple(shape[1])


def accumulate_in_place(recording: Recording, steps: list, outputs: list) -> tuple[list, list]:
    """Add a scattered cotangent into the total where it lands, not into zeros first."""
    buffers = _Buffers(recording, steps, outputs)
    producers = {step.out: step for _, step in steps if isinstance(step, Instruction)}
    readers: dict[int, int] = defaultdict(int)
    for _, step in steps:
        for slot in reads(step):
            readers[slot] += 1
    for kind, slot in outputs:
        if kind == "s":
            readers[slot] += 2
    dropped: set[int] = set()
    kept = []
    for position, (sweep, step) in enumerate(steps):
        new = [step]
        if isinstance(step, Instruction) and _is_sum(step):
            scatters = [
                _scatter(producers.get(slot)) if readers[slot] == 1 else None
                for _, slot in step.args
            ]
            fused, consumed = _fuse(recording, buffers, step, scatters, position)
            if fused:
                dropped.update(consumed)
                new = fused
        for step in new:
            if not isinstance(step, Guard):
                buffers.add(step)
                _track_signed_zeros(buffers, step)
            kept.append((sweep, step))
    kept = [(sweep, s) for sweep, s in kept if isinstance(s, Guard) or s.out not in dropped]
    return kept, outputs


def _track_signed_zeros(buffers: _Buffers, step: Instruction) -> None:
    """Note the box of a scatter's result that may hold ``-0.0`` (its zeros are ``+0.0``)."""
    found = _scatter(step)
    if found is not None:
        buffers.signed_zeros[step.out] = _box(found[1], found[2])


def _is_sum(step: Instruction) -> bool:
    return (
        step.kind == "op"
        and step.op.name == "add"
        and not step.kwargs
        and all(kind == "s" for kind, _ in step.args)
    )


def _fuse(recording, buffers: _Buffers, step: Instruction, scatters: list, position: int):
    """The instructions that replace ``step`` (a sum with scatters in it), and the
    scatters they make dead; ``([], ())`` where nothing fuses."""
    result = recording.values[step.out]
    first, second = scatters
    if not isinstance(result, np.ndarray) or result.size < 2:  # one number: the scalar program's
        return [], ()
    if first and second and _same_place(first, second):
        parts = [recording.values[p[1]] if p[0] == "s" else p[1] for p in (first[0], second[0])]
        same = all(isinstance(p, np.ndarray) and p.dtype == result.dtype for p in parts)
        if same and _layout(parts[0]) == _layout(parts[1]):
            total = recording.new_slot(np.add(*parts))
            add = dataclasses.replace(step, args=(first[0], second[0]), out=total)
            return [add, _scatter_into(step, first, total)], [slot for _, slot in step.args]
    for found, (_, scattered), (_, other) in (
        (first, step.args[0], step.args[1]),
        (second, step.args[1], step.args[0]),
    ):
        if found is None:
            continue
        buffer = buffers.writable_whole(other, position)
        target = recording.values[other]
        if buffer is None or _layout(target) != _layout(result):
            continue
        part, index, shape = found
        box, everywhere = _box(index, shape), [(0, n) for n in shape]
        maybe = buffers.signed_zeros.get(other, everywhere)
        outside = _difference(maybe, box)
        buffers.signed_zeros[step.out] = _intersection(maybe, box)
        keywords = (("index", ("c", index)), ("outside", ("c", outside)), ("out", ("s", other)))
        base = (add_at, "add_at")
        return [Instruction("numpy", add_at, (part,), keywords, step.out, base=base)], [scattered]
    return [], ()


def _same_place(first: tuple, second: tuple) -> bool:
    return first[2] == second[2] and repr(first[1]) == repr(second[1])


def _scatter_into(step: Instruction, found: tuple, part: int) -> Instruction:
    """``scatter_add(part)`` at ``found``'s index and shape, into ``step``'s slot."""
    _, index, shape = found
    op = OPS["scatter_add"]
    keywords = (("index", ("c", index)), ("shape", ("c", shape)))
    return Instruction("op", op.value, (("s", part),), keywords, step.out, op=op)


def peak_live_bytes(recording: Recording, steps: list, outputs: list) -> int:
    """The most bytes of arrays the program allocated that are alive at once.

    Each array is freed after its last reader (or view's reader) has run;
    inputs, arrays ``f`` reads and constants are not counted.
    """
    buffers = _Buffers(recording, steps, outputs)
    live: dict[int, int] = {}
    current = peak = 0
    for position, (_, step) in enumerate(steps):
        if isinstance(step, Guard):
            continue
        buffers.add(step)
        if step.out in buffers.owner and writes_into(step) is None:
            live[step.out] = int(np.asarray(recording.values[step.out]).nbytes)
            current += live[step.out]
            peak = max(peak, current)
        touched = set(buffers.roots[step.out]).union(
            *(buffers.roots.get(slot, ()) for slot in reads(step))
        )
        for buffer in touched:
            if buffer in live and buffers.free_at(buffer, position):
                current -= live.pop(buffer)
    return peak
