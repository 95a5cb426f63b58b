"""Staged replay: what does not depend on some arguments runs first, the rest when they come.

A chain of identical steps differentiated backwards (an LSTM's characters, an
ODE solver's steps) knows each step's inputs on the way forward but the
cotangent that step will receive only on the way back. Replaying the whole
value-and-gradient program at each step of the way back computes the step's
forward pass a second time. A staged program splits the optimised program
in two by dependence, as partial evaluation does (JAX's ``linearize`` keeps
the linear part's residuals the same way):

- the **early** part holds every step that reads none of the *late*
  arguments; it returns the results it can already give and the
  **residuals**, the values it computed that the late part reads;
- the **late** part holds the steps that do, and takes the residuals as
  arguments of its own.

The two run the whole program's instructions, each on the same operands, so
every number is bit-identical to :meth:`~adcompare.engines.replay.CompiledFunction.value_and_grad`.
The memory passes run on each part after the split: neither part writes into
memory the other still reads (a residual is an output of the one and an input
of the other, and a program never writes into those).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from adcompare.engines.replay.codegen import (
    GuardFlip,
    Program,
    cycles_uncollected,
    run_recorded_again,
    signature,
    tagged_steps,
)
from adcompare.engines.replay.memory import reads
from adcompare.engines.replay.passes import MEMORY_PASSES, eliminate_dead_code, optimise
from adcompare.engines.replay.record import Instruction, Recording

__all__ = ["Stages", "Started", "late_slots", "split"]


def split(
    recording: Recording, tagged: list, outputs: list, late: set[int]
) -> tuple[list, list, list[int]]:
    """The steps that read no slot in ``late`` (the late inputs and every value computed
    from one: :func:`late_slots`), the steps that do and ``outputs`` need, and the
    residuals: the slots the first part computes that the second part reads.

    >>> def step(out, *slots):  # out = f(slots)
    ...     return "forward", Instruction("op", None, tuple(("s", s) for s in slots), (), out)
    >>> steps = [step(2, 0), step(3, 1, 2), step(4, 1)]  # slot 4 is not wanted
    >>> late = late_slots(steps, {1})
    >>> early, later, residuals = split(Recording(), steps, [("s", 3)], late)
    >>> [s.out for _, s in early], [s.out for _, s in later], residuals
    ([2], [3], [2])
    """
    early_steps, late_steps = [], []
    for sweep, step in tagged:
        reads_late = any(slot in late for slot in reads(step))
        (late_steps if reads_late else early_steps).append((sweep, step))
    late_steps, _ = eliminate_dead_code(recording, late_steps, outputs)
    computed = {step.out for _, step in early_steps if isinstance(step, Instruction)}
    read = [slot for _, step in late_steps for slot in reads(step)]
    residuals = [slot for slot in dict.fromkeys(read) if slot in computed]
    return early_steps, late_steps, residuals


def late_slots(tagged: list, late: set[int]) -> set[int]:
    """``late`` and every slot computed from one of them.

    >>> from adcompare.engines.replay.record import Instruction
    >>> step = Instruction("op", None, (("s", 0), ("s", 1)), (), 2)  # 2 = f(0, 1)
    >>> sorted(late_slots([("forward", step)], {1}))
    [1, 2]
    """
    late = set(late)
    for _, step in tagged:
        if isinstance(step, Instruction) and any(slot in late for slot in reads(step)):
            late.add(step.out)
    return late


@dataclasses.dataclass
class _Parts:
    """One recording's two programs and which of the whole program's outputs each gives."""

    early: Program
    late: Program
    known: list[int]  # positions (in the whole program's outputs) the early part gives
    unknown: list[int]  # positions the late part gives


def _build(recording: Recording, passes, late_positions: tuple, names: list, value: bool) -> _Parts:
    algebra = tuple(p for p in passes if p not in MEMORY_PASSES)
    # Dead code goes before the memory passes, as in PASSES: after them, an
    # instruction lowered to write into another's memory would look dead.
    memory = (eliminate_dead_code, *(p for p in passes if p in MEMORY_PASSES))
    tagged = tagged_steps(recording, recording.steps)
    tagged, outputs, _ = optimise(recording, tagged, list(recording.outputs), algebra)
    late = late_slots(tagged, {recording.inputs[p] for p in late_positions})
    wanted = range(0 if value else 1, len(outputs))  # the value's steps are dead without it
    unknown = [i for i in wanted if outputs[i][0] == "s" and outputs[i][1] in late]
    known = [i for i in wanted if i not in unknown]
    early_steps, late_steps, residuals = split(
        recording, tagged, [outputs[i] for i in unknown], late
    )
    finals = ["value", *(f"g_{n}" for n in names)]
    kept = [("s", slot) for slot in residuals]
    early_steps, early_out, _ = optimise(
        recording, early_steps, [outputs[i] for i in known] + kept, memory
    )
    early = Program(
        recording,
        early_steps,
        early_out,
        names,
        results=[finals[i] for i in known],
        residuals=len(residuals),
    )
    later = dataclasses.replace(recording, inputs=[*recording.inputs, *residuals])
    late_steps, late_out, _ = optimise(later, late_steps, [outputs[i] for i in unknown], memory)
    late_program = Program(
        later,
        late_steps,
        late_out,
        [*names, *(f"r{k}" for k in range(1, len(residuals) + 1))],
        results=[finals[i] for i in unknown],
        residual_inputs=len(residuals),
    )
    return _Parts(early, late_program, known, unknown)


class Started:
    """A staged replay whose early part has run: :attr:`known` holds what it gave,
    :meth:`finish` runs the late part once the late arguments are known."""

    def __init__(self, stages: Stages, parts: _Parts, arrays: tuple, results: tuple):
        self._stages, self._parts, self._arrays = stages, parts, arrays
        given = len(parts.known)
        self._residuals = results[given:]
        self._merged = [None] * stages.outputs  # the whole program's outputs, as known
        for position, value in zip(parts.known, results[:given]):
            self._merged[position] = value
        self.known = stages.shaped(self._merged)

    def finish(self, *late_args):
        """``value_and_grad`` of the whole arguments, the late ones given here, in order.

        Late arguments of other shapes or dtypes than recorded, or a guard the
        late part holds that no longer does, run the whole program instead (the
        numbers are the same; only the time of the early part is spent again).
        """
        stages, parts = self._stages, self._parts
        if self._residuals is None:
            raise RuntimeError("finish: this staged replay was finished already; start another")
        arrays = stages.complete(self._arrays, late_args, stages.late)
        residuals, self._residuals = self._residuals, None
        if stages.fits(arrays) and not stages.out_of_date():
            try:
                found = parts.late.run(*arrays, *residuals)
            except GuardFlip:
                return stages.whole(arrays)
            results = list(self._merged)
            for position, value in zip(parts.unknown, found):
                results[position] = value
            return stages.shaped(results)
        return stages.whole(arrays)


class Stages:
    """The staged form of a compiled function: see
    :meth:`~adcompare.engines.replay.CompiledFunction.staged`.

    ``compiled`` records ``f`` for it (``_recorded(arrays)``: the recording, the input
    names and the arrays ``f`` reads, as they were), says when those changed
    (``_out_of_date``) and replays the whole program where a stage cannot
    (``value_and_grad``). The stages and the compiled function each keep the bindings
    of their own latest recording: either may record again after a change first.
    """

    def __init__(self, compiled, arrays: tuple, late: tuple[int, ...], value: bool):
        self._compiled, self.late, self._value = compiled, late, value
        self.outputs = 1 + len(compiled._argnums)
        self._examples = tuple(np.array(arrays[p]) for p in late)
        self._known = tuple(p for p in range(len(arrays)) if p not in late)
        self._template = [None] * len(arrays)  # the late arguments' places hold the examples
        for p, example in zip(late, self._examples):
            self._template[p] = example
        self.recordings = 0
        self._parts: dict = {}
        self._bindings: list = []
        self._record(arrays)

    def programs(self) -> tuple[Program, Program]:
        """The early and the late program of the most recent recording."""
        return self._latest.early, self._latest.late

    def whole(self, arrays: tuple):
        """``value_and_grad`` by the whole program (recorded again where it must be)."""
        value, grads = self._compiled.value_and_grad(*arrays)
        return (value if self._value else None), grads

    def __call__(self, *known_args) -> Started:
        """Run the early part on the arguments that are not late, in order."""
        arrays = self.complete(self._template, known_args, self._known)
        if self.out_of_date():
            self._parts.clear()  # recorded with the arrays f read, as they were
        key = signature(arrays)
        parts = self._parts.get(key) or self._record(arrays)
        try:
            return Started(self, parts, arrays, parts.early.run(*arrays))
        except GuardFlip:
            parts = self._record(arrays)
        return Started(self, parts, arrays, run_recorded_again(parts.early, arrays))

    def complete(self, arrays, given: tuple, at: tuple[int, ...]) -> tuple:
        """``arrays`` (a sequence of every argument) with those at positions ``at`` replaced
        by ``given``, checked and converted as the compiled function's arguments are."""
        if len(given) != len(at):
            which = "late" if at is self.late else "not late"
            raise TypeError(
                f"give the {len(at)} argument(s) that are {which} (late: positions "
                f"{list(self.late)}), got {len(given)}"
            )
        whole = list(arrays)
        plain = True  # the others were checked already: they are the arguments as recorded
        for p, value in zip(at, given):
            whole[p] = value
            plain = plain and type(value) is np.ndarray and value.dtype.kind in "fc"
        return tuple(whole) if plain else self._compiled._inputs(tuple(whole))

    def out_of_date(self) -> bool:
        """Whether an array ``f`` reads without receiving it changed since the stages'
        latest recording (between a first stage and its second, the second then runs
        the whole program, recorded again)."""
        return bool(self._bindings) and self._compiled._out_of_date(self._bindings)

    def fits(self, arrays: tuple) -> bool:
        """Whether the late arguments have the recorded shapes and dtypes."""
        return all(
            arrays[p].shape == e.shape and arrays[p].dtype == e.dtype
            for p, e in zip(self.late, self._examples)
        )

    def shaped(self, results: list):
        """``results`` as ``value_and_grad`` returns them."""
        value, grads = results[0], tuple(results[1:])
        return value, (grads if self._compiled._many else grads[0])

    def _record(self, arrays: tuple) -> _Parts:
        with cycles_uncollected():
            recording, names, self._bindings = self._compiled._recorded(arrays)
            self.recordings += 1
            parts = _build(recording, self._compiled._passes, self.late, names, self._value)
        self._parts[signature(arrays)] = self._latest = parts
        return parts
