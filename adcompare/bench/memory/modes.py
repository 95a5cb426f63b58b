"""The ways the memory study differentiates a loop (:mod:`~adcompare.bench.memory.loops`).

==================  ================================================================
``f``               the loop on plain arrays, no derivative: the baseline
``forward``         forward mode, one pass with a lane per parameter: memory does not
                    grow with T
``reverse``         reverse mode, every step on the tape: memory O(T)
``block``           reverse mode, ``adcompare.checkpoint`` around each block of ⌈√T⌉
                    steps: the tape keeps each block's inputs, O(√T)
``revolve:S``       reverse mode, ``checkpoint.scan`` with the binomial schedule and
                    S = 4, 16 or 64 snapshots: O(S)
``revolve:sqrt``    the same with S = ⌈√T⌉ snapshots
==================  ================================================================

Each mode's ``prepare(instance)`` returns the work: a function of no
arguments that returns the gradient (``None`` for ``f``). ``snapshots(T)``
is the number of stored states the mode's theory line uses. The peers' modes
(``torch.utils.checkpoint``, ``jax.checkpoint``) are in
:mod:`~adcompare.bench.memory.peers`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import adcompare as ad
from adcompare.bench.memory.loops import LoopInstance

__all__ = ["MEMORY_MODES", "MemoryMode", "block_size", "get_memory_mode"]


@dataclass(frozen=True)
class MemoryMode:
    """A way of computing a loop problem's gradient.

    ``growth`` names the theory line of its memory: ``"1"``, ``"T"``,
    ``"sqrt(T)"`` or ``"S"`` (a fixed number of snapshots, ``snapshots(T)``).
    """

    name: str
    label: str
    prepare: Callable[[LoopInstance], Callable[[], object]]
    growth: str
    derivative: bool = True
    snapshots: Callable[[int], int] | None = None


def block_size(steps: int) -> int:
    """The steps in one checkpointed block: ⌈√T⌉.

    >>> block_size(100), block_size(101)
    (10, 11)
    """
    return math.isqrt(steps - 1) + 1 if steps > 1 else 1


def _plain(instance: LoopInstance):
    def run(step, carry, xs, args):
        for t in range(instance.steps):
            carry = step(carry, None if xs is None else xs[t], *args)
        return carry

    params = instance.params
    return lambda: instance.loss(params, run)


def _scan(snapshots):
    def run(step, carry, xs, args, *, steps):
        return ad.checkpoint.scan(step, carry, xs, length=steps, snapshots=snapshots, args=args)

    return run


def _forward(instance: LoopInstance):
    run = _scan(None)
    jacobian = ad.jacfwd(
        lambda p: instance.loss(p, lambda *a: run(*a, steps=instance.steps)),
        chunk_size=instance.params.size,
    )
    params = instance.params
    return lambda: jacobian(params)


def _reverse_with(snapshots_of: Callable[[int], int | None]):
    def prepare(instance: LoopInstance):
        run = _scan(snapshots_of(instance.steps))
        gradient = ad.grad(lambda p: instance.loss(p, lambda *a: run(*a, steps=instance.steps)))
        params = instance.params
        return lambda: gradient(params)

    return prepare


def _blocks(instance: LoopInstance):
    steps, size = instance.steps, block_size(instance.steps)

    def run(step, carry, xs, args):
        count = len(carry)
        for start in range(0, steps, size):

            def block(*values, start=start):
                state = tuple(values[:count])
                for t in range(start, min(steps, start + size)):
                    state = tuple(step(state, None if xs is None else xs[t], *values[count:]))
                return state

            carry = ad.checkpoint(block)(*carry, *args)
        return carry

    gradient = ad.grad(lambda p: instance.loss(p, run))
    params = instance.params
    return lambda: gradient(params)


def _fixed(s: int):
    return lambda steps: s


MEMORY_MODES: dict[str, MemoryMode] = {
    m.name: m
    for m in [
        MemoryMode("f", "f (no derivative)", _plain, "1", derivative=False),
        MemoryMode("forward", "forward, a lane per parameter", _forward, "1"),
        MemoryMode("reverse", "reverse, full tape", _reverse_with(lambda steps: None), "T"),
        MemoryMode("block", "reverse, checkpoint per √T-step block", _blocks, "sqrt(T)"),
        *(
            MemoryMode(
                f"revolve:{s}",
                f"reverse, revolve s = {s}",
                _reverse_with(_fixed(s)),
                "S",
                snapshots=_fixed(s),
            )
            for s in (4, 16, 64)
        ),
        MemoryMode(
            "revolve:sqrt",
            "reverse, revolve s = ⌈√T⌉",
            _reverse_with(block_size),
            "sqrt(T)",
            snapshots=block_size,
        ),
    ]
}


def get_memory_mode(name: str) -> MemoryMode:
    """The memory-study mode called ``name``, with a clear error for an unknown one.

    >>> get_memory_mode("revolve:64").snapshots(10**5)
    64
    """
    try:
        return MEMORY_MODES[name]
    except KeyError:
        raise ValueError(
            f"unknown memory-study mode {name!r}; the modes are {', '.join(MEMORY_MODES)}"
        ) from None


def gradient_error(got, expected) -> float:
    """``max|a − b| / max(1, max|b|)`` between two gradients.

    >>> gradient_error([1.0, 2.0], [1.0, 2.5])
    0.2
    """
    got = np.reshape(np.asarray(got, dtype=np.float64), -1)
    expected = np.reshape(np.asarray(expected, dtype=np.float64), -1)
    return float(np.max(np.abs(got - expected)) / max(1.0, float(np.max(np.abs(expected)))))
