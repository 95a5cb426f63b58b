"""Long loops for the memory study: problems swept over their number of steps T.

Each is a problem of the one registry (:func:`loop_problem` defines it through
:func:`~adcompare.bench.problems.problem`, ``studies=("memory",)``): its
function is the loop's objective run plainly, over the parameters, and its
instance's ``f.loop`` is the :class:`LoopInstance` the memory study's modes
checkpoint. A user's loop enters the same way, with :func:`loop_problem`.

Each problem is a loop ``carry = step(carry, xs[t], *params)`` of T steps and
a scalar objective of the final carry, differentiated with respect to the
parameters. Reverse mode would win on time (one output), but its tape
grows with T; forward mode's memory does not; checkpointing sits between
(:mod:`~adcompare.bench.memory.modes`).

``heat``
    the 1-D heat equation u_t = κ(x) u_xx + q on 64 cells, explicit Euler
    (stable: κ·dt/dx² ≤ 0.4), differentiated with respect to the 64
    diffusivities κ; objective ½‖u_T‖².
``lstm``
    adbench-lstm's cell (:mod:`adcompare.adbench.lstm`, one layer, 14
    bits) over a random sequence of T characters, differentiated with
    respect to its 126 weights; objective the final hidden state's sum.

Each instance also carries its loop written against an array namespace
(``written_on``), which is how the peers (:mod:`~adcompare.bench.memory.peers`)
run the same problem with their own arrays.

A problem touches this file only: add a builder and one :func:`loop_problem`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

import adcompare as ad
from adcompare.adbench.lstm import layer_step
from adcompare.bench.problems.define import Problem, problem

__all__ = ["AD_NAMESPACE", "LOOP_PROBLEMS", "LoopInstance", "loop_problem"]

#: adcompare's op set as the namespace ``LoopInstance.written_on`` takes.
AD_NAMESPACE = SimpleNamespace(
    asarray=np.asarray, concatenate=ad.concatenate, sum=ad.sum, tanh=ad.tanh, sigmoid=ad.sigmoid
)


@dataclass(frozen=True)
class LoopInstance:
    """One loop problem at T steps.

    ``step(carry, x, *arrays)`` returns the next carry (a tuple of arrays);
    ``objective(carry)`` the scalar; ``params`` the flat parameter vector
    that is differentiated; ``unflatten(params)`` the ``arrays`` ``step`` gets.
    ``written_on(xp)`` returns the same ``(step, objective)`` written against
    the namespace ``xp`` (``asarray``, ``concatenate``, ``sum``, ``tanh``,
    ``sigmoid``), for a peer library's arrays.
    """

    problem: str
    steps: int
    step: Callable
    carry: tuple
    xs: np.ndarray | None
    params: np.ndarray
    unflatten: Callable
    objective: Callable
    written_on: Callable

    @property
    def state_bytes(self) -> int:
        """Bytes of one carry: what one snapshot holds."""
        return sum(int(np.asarray(c).nbytes) for c in self.carry)

    def loss(self, params, run: Callable):
        """The objective with the loop run by ``run(step, carry, xs, args)``.

        >>> inst = LOOP_PROBLEMS["heat"].build(steps=3).f.loop
        >>> run = lambda step, carry, xs, args: ad.checkpoint.scan(
        ...     step, carry, xs, length=inst.steps, args=args)
        >>> float(inst.loss(inst.params, run)) > 0
        True
        """
        final = run(self.step, self.carry, self.xs, self.unflatten(params))
        return self.objective(final)


def _plain_run(steps: int) -> Callable:
    def run(step, carry, xs, args):
        for t in range(steps):
            carry = step(carry, None if xs is None else xs[t], *args)
        return carry

    return run


def loop_problem(
    build: Callable[[int], LoopInstance],
    *,
    name: str,
    description: str = "",
    sizes=(10, 100, 1000),
    studies: tuple[str, ...] = ("memory",),
) -> Problem:
    """A loop as a problem: ``build(steps)`` gives its :class:`LoopInstance` at T steps.

    The problem's function is the objective with the loop run plainly, over
    the parameters; the built instance's ``f.loop`` is the loop itself.

    >>> heat = LOOP_PROBLEMS["heat"].build(steps=3)
    >>> heat.n, heat.m, heat.f.loop.steps
    (64, 1, 3)
    """

    def make(steps: int):
        if steps < 1:
            raise ValueError(f"{name}: needs at least one step, not {steps}")
        loop = build(steps)

        def f(xp, params):
            return loop.loss(params, _plain_run(loop.steps))

        f.loop = loop
        return f, loop.params

    return problem(
        build=make,
        name=name,
        sweep=("steps",),
        sizes=sizes,
        description=description,
        xp=True,
        studies=studies,
    )


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


HEAT_CELLS = 64


def _heat_on(xp, source: np.ndarray):
    zero, source = xp.asarray(np.zeros(1)), xp.asarray(source)

    def step(carry, x, diffusivity):
        (u,) = carry
        padded = xp.concatenate([zero, u, zero])  # u = 0 at both ends
        laplacian = padded[2:] - 2.0 * u + padded[:-2]
        return (u + diffusivity * laplacian + source,)

    return step, lambda carry: 0.5 * xp.sum(carry[0] * carry[0])


def _heat(steps: int) -> LoopInstance:
    rng = _rng("heat")
    kappa = rng.uniform(0.1, 0.4, HEAT_CELLS)
    source = np.sin(np.linspace(0.0, np.pi, HEAT_CELLS)) * 0.01
    start = rng.uniform(0.0, 1.0, HEAT_CELLS)
    step, objective = _heat_on(AD_NAMESPACE, source)
    return LoopInstance(
        "heat",
        steps,
        step,
        (start,),
        None,
        kappa,
        lambda params: (params,),
        objective,
        lambda xp: _heat_on(xp, source),
    )


LSTM_BITS = 14


def _lstm(steps: int) -> LoopInstance:
    rng = _rng("lstm")
    bits = LSTM_BITS
    sequence = np.eye(bits)[rng.integers(0, bits, steps)]
    params = rng.standard_normal(9 * bits) * 0.5
    split = np.cumsum([4 * bits, 4 * bits])

    def step(carry, x, weight, bias, in_weight):
        hidden, cell = carry
        return layer_step(weight, bias, x * in_weight, hidden, cell, bits)

    def written_on(xp):
        def peer_step(carry, x, weight, bias, in_weight):
            hidden, cell = carry
            layer_input = x * in_weight
            gates = xp.concatenate([layer_input, hidden, layer_input, hidden]) * weight + bias
            sigmoids = xp.sigmoid(gates[: 3 * bits])
            change = xp.tanh(gates[3 * bits :])
            cell = cell * sigmoids[:bits] + sigmoids[bits : 2 * bits] * change
            return sigmoids[2 * bits :] * xp.tanh(cell), cell

        return peer_step, lambda carry: xp.sum(carry[0])

    def unflatten(flat):
        return flat[: split[0]], flat[split[0] : split[1]], flat[split[1] :]

    return LoopInstance(
        "lstm",
        steps,
        step,
        (np.zeros(bits), np.zeros(bits)),
        sequence,
        params,
        unflatten,
        lambda carry: ad.sum(carry[0]),
        written_on,
    )


#: The memory study's loops, by name.
LOOP_PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        loop_problem(
            _heat,
            name="heat",
            description=f"1-D heat equation on {HEAT_CELLS} cells, explicit Euler, gradient with "
            f"respect to the {HEAT_CELLS} diffusivities",
        ),
        loop_problem(
            _lstm,
            name="lstm",
            description=f"adbench-lstm's cell ({LSTM_BITS} bits, one layer) over a sequence of T "
            f"characters, gradient with respect to its {9 * LSTM_BITS} weights",
        ),
    ]
}
