"""Decisions an op takes from values, while ``f`` is recorded: recomputed at replay, or guarded.

An op record lists in ``decided_by_values`` what its arguments' values
decide (``sort``'s permutation, ``take``'s positions, ``slogdet``'s sign; see
:class:`~adcompare.ops.registry.records.Decision`). While ``compile`` records,
such a composite is called through :func:`check_decisions`: when the op's
result depends, through a numpy call recorded inside it, on the value that
decides (the permutation computed by a recorded ``argsort``), the decision is
recomputed at every replay. Otherwise it was frozen into the recording, so it
becomes a guard: replay recomputes the decision and records ``f`` again where
it differs, never replaying another point's permutation.
"""

from __future__ import annotations

import numpy as np

from adcompare.engines.replay.program import Guard, Instruction, Recording
from adcompare.runtime.boxes import Box, raw

__all__ = ["DecisionTest", "check_decisions"]


class DecisionTest:
    """A guard's test: the decision at a value, as bytes with its shape and dtype.

    >>> import numpy as np
    >>> from adcompare.ops.registry.decisions import ORDER
    >>> test = DecisionTest(ORDER, {"axis": -1})
    >>> test(np.array([2.0, 1.0])) == test(np.array([5.0, 3.0]))
    True
    >>> test(np.array([2.0, 1.0])) == test(np.array([1.0, 2.0]))
    False
    """

    def __init__(self, decision, params: dict):
        self.decision = decision
        self.params = params
        self.__name__ = f"decide_{decision.kind}"

    def __call__(self, value) -> _Decided:
        decided = np.asarray(self.decision.decide(value, **self.params))
        return _Decided(repr((decided.shape, decided.dtype.str)).encode() + decided.tobytes())


class _Decided(bytes):
    """A decision's bytes; shown by length in the generated source's comments."""

    def __repr__(self) -> str:
        return f"<decision of {len(self)} bytes>"


def check_decisions(recording: Recording, decisions: tuple, arguments: dict, call):
    """Run ``call()`` (a composite) and guard each of ``decisions`` its result does not
    recompute at replay (see the module's docstring)."""
    start = len(recording.steps)
    out = call()
    producers = {s.out: s for s in recording.steps[start:] if isinstance(s, Instruction)}
    outputs = [slot for value in _leaves(out) if (slot := _slot_of(recording, value)) is not None]
    for decision in decisions:
        slot = _slot_of(recording, arguments[decision.source])
        if slot is None or _recomputed(outputs, producers, slot):
            continue  # a constant decides it, or the recording recomputes it
        params = {k: raw(v) for k, v in arguments.items() if k != decision.source}
        test = DecisionTest(decision, params)
        expected = test(recording.values[slot])
        recording.steps.append(Guard(test, slot, expected, f"the {decision.kind} it decides"))
    return out


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


def _slot_of(recording: Recording, value) -> int | None:
    """The slot ``value`` stands for (a traced value, or a plain view of one), if any."""
    value = raw(value) if isinstance(value, Box) else value
    if not isinstance(value, np.ndarray):
        return None
    slot = getattr(value, "_slot", None)
    return slot if slot is not None else recording.slot_at(value)


def _recomputed(outputs: list, producers: dict, source: int) -> bool:
    """Whether a numpy call recorded inside the op reads ``source`` and feeds an output."""
    stack, seen = [(slot, False) for slot in outputs], set()
    while stack:
        slot, through_numpy = stack.pop()
        if slot == source and through_numpy:
            return True
        step = producers.get(slot)
        if step is None or (slot, through_numpy) in seen:
            continue
        seen.add((slot, through_numpy))
        numpy = through_numpy or step.kind == "numpy"
        operands = [*step.args, *(operand for _, operand in step.kwargs)]
        stack.extend((read, numpy) for kind, read in operands if kind == "s")
    return False
