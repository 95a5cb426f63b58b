"""Deterministic cost counting: op applications, element work, tape size.

Time is noisy; counts are not. Every op application passes through one hook
in dispatch, which reports to the counters that are active. Three engines
report:

``"numpy"``
    an op applied to plain arrays: the arithmetic that is actually done.
    Its ``elements`` are the elements the op touches: the size of its
    largest operand or result, or what the op record's ``work`` says
    (a matrix product counts its multiply-adds).
``"forward"``
    an op applied to dual numbers. Its ``elements`` are tangent elements:
    ``lanes × output size``.
``"reverse"``
    an op recorded on the tape. Its ``elements`` are output elements;
    ``tape_records`` and ``tape_bytes`` say how much the tape holds.

A backward sweep's rule applications show up as ``"numpy"`` work (or as
forward or reverse work when derivatives are nested). ``passes`` counts
forward passes with dual numbers and ``sweeps`` counts backward sweeps;
``seeds`` counts the tangent directions the passes carried (one per lane), and
``cotangent_seeds`` the cotangent directions the sweeps carried (one per
lane of a sweep mapped by ``vmap``, as ``jacrev`` maps its rows).

Checkpointing trades memory for recomputation, so both sides are counted:
``live_tape_bytes`` is what the tape holds now (records not yet freed by a
sweep, plus the snapshots checkpointed loops keep) and ``peak_tape_bytes``
its maximum inside the block; ``recomputed_ops`` counts the op applications
on plain arrays done again while a backward sweep re-runs a checkpointed
function, ``recomputed_steps`` the loop steps that ``checkpoint.scan``
evaluates again, and ``peak_snapshots`` the most loop states it held at once.
Run the forward pass and the sweep in the same block: a record made before
the block and freed inside it is not subtracted.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ACTIVE", "Cost", "count"]

#: The counters open now, innermost last. Empty when nothing is counted, so the hot
#: paths test ``if cost.ACTIVE:`` (a list's truth) before calling a ``record_*`` hook.
ACTIVE: list[Cost] = []
#: How many checkpointed re-runs are under way (ops then count as recomputed).
_RECOMPUTING = [0]


@dataclass
class Cost:
    """Counts gathered inside one :func:`count` block.

    Attributes are plain counters keyed by engine name (``"numpy"``,
    ``"forward"``, ``"reverse"``) so that they can be compared across runs.
    """

    ops: Counter = field(default_factory=Counter)
    elements: Counter = field(default_factory=Counter)
    by_op: Counter = field(default_factory=Counter)
    tape_records: int = 0
    tape_bytes: int = 0
    passes: int = 0
    sweeps: int = 0
    seeds: int = 0
    cotangent_seeds: int = 0
    live_tape_bytes: int = 0
    peak_tape_bytes: int = 0
    recomputed_ops: int = 0
    recomputed_steps: int = 0
    peak_snapshots: int = 0

    def as_dict(self) -> dict:
        """The counts as plain JSON-ready values.

        >>> Cost().as_dict()["tape_bytes"]
        0
        """
        return {
            "ops": dict(self.ops),
            "elements": dict(self.elements),
            "by_op": {f"{engine}.{name}": n for (engine, name), n in self.by_op.items()},
            "tape_records": self.tape_records,
            "tape_bytes": self.tape_bytes,
            "passes": self.passes,
            "sweeps": self.sweeps,
            "seeds": self.seeds,
            "cotangent_seeds": self.cotangent_seeds,
            "peak_tape_bytes": self.peak_tape_bytes,
            "recomputed_ops": self.recomputed_ops,
            "recomputed_steps": self.recomputed_steps,
            "peak_snapshots": self.peak_snapshots,
        }

    def _hold(self, nbytes: int) -> None:
        self.live_tape_bytes += nbytes
        if self.live_tape_bytes > self.peak_tape_bytes:
            self.peak_tape_bytes = self.live_tape_bytes


@contextlib.contextmanager
def count() -> Iterator[Cost]:
    """Count op applications, element work and tape bytes inside a block.

    >>> import adcompare as ad
    >>> with ad.count() as c:
    ...     y = ad.sin(ad.Tensor([1.0, 2.0], requires_grad=True)).sum()
    >>> c.ops["reverse"], c.tape_records
    (2, 2)
    """
    cost = Cost()
    ACTIVE.append(cost)
    try:
        yield cost
    finally:
        # By identity: two Cost records with equal counts compare equal.
        del ACTIVE[next(i for i, c in enumerate(ACTIVE) if c is cost)]


def _size(value) -> int:
    return int(np.size(value)) if not hasattr(value, "size") else int(value.size)


def record_numpy(op, args, out) -> None:
    """Report one op applied to plain arrays (called by dispatch)."""
    if op.hints.work is not None:
        touched = int(op.hints.work(out, *args))
    else:
        touched = _size(out)
        for a in args:
            touched = max(touched, _size(a))
    recomputing = _RECOMPUTING[0] > 0
    for cost in ACTIVE:
        cost.ops["numpy"] += 1
        cost.elements["numpy"] += touched
        cost.by_op["numpy", op.name] += 1
        if recomputing:
            cost.recomputed_ops += 1


def record_forward(name: str, lanes: int, out) -> None:
    """Report one op applied to dual numbers with ``lanes`` tangent lanes."""
    work = lanes * _size(out)
    for cost in ACTIVE:
        cost.ops["forward"] += 1
        cost.elements["forward"] += work
        cost.by_op["forward", name] += 1


def record_reverse(name: str, out, saved_bytes: int) -> None:
    """Report one op recorded on the tape, holding ``saved_bytes``."""
    for cost in ACTIVE:
        cost.ops["reverse"] += 1
        cost.elements["reverse"] += _size(out)
        cost.by_op["reverse", name] += 1
        cost.tape_records += 1
        cost.tape_bytes += saved_bytes
        cost._hold(saved_bytes)


def record_release(nbytes: int) -> None:
    """Report ``nbytes`` of the tape released (a record freed by a sweep, a snapshot dropped)."""
    for cost in ACTIVE:
        cost.live_tape_bytes = max(0, cost.live_tape_bytes - nbytes)


def record_hold(nbytes: int) -> None:
    """Report ``nbytes`` kept for a backward sweep outside the records (a snapshot)."""
    for cost in ACTIVE:
        cost._hold(nbytes)


def record_snapshots(held: int) -> None:
    """Report that a checkpointed loop holds ``held`` snapshots now."""
    for cost in ACTIVE:
        cost.peak_snapshots = max(cost.peak_snapshots, held)


def record_recomputed_step() -> None:
    """Report one loop step evaluated again by a backward sweep."""
    for cost in ACTIVE:
        cost.recomputed_steps += 1


@contextlib.contextmanager
def recomputing() -> Iterator[None]:
    """Count the ops applied inside the block as recomputed (``recomputed_ops``).

    >>> import adcompare as ad
    >>> with ad.count() as c, recomputing():
    ...     _ = ad.sin(ad.Tensor([1.0]))
    >>> c.recomputed_ops
    1
    """
    _RECOMPUTING[0] += 1
    try:
        yield
    finally:
        _RECOMPUTING[0] -= 1


def record_pass(lanes: int = 1) -> None:
    """Report one forward pass with dual numbers, carrying ``lanes`` tangent directions."""
    for cost in ACTIVE:
        cost.passes += 1
        cost.seeds += lanes


def record_sweep(lanes: int = 1) -> None:
    """Report one backward sweep, carrying ``lanes`` cotangent directions."""
    for cost in ACTIVE:
        cost.sweeps += 1
        cost.cotangent_seeds += lanes


def counting() -> bool:
    """Whether any :func:`count` block is active."""
    return bool(ACTIVE)
