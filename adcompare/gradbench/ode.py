"""GradBench's ``ode`` eval: s steps of the classic Runge–Kutta method (RK4) on a chain ODE.

The system, for parameters x (n) and y(0) = 0, is

    y₀′ = x₀,    yᵢ′ = xᵢ · yᵢ₋₁  (i = 1 … n−1),

integrated to t = 2 in s equal RK4 steps (h = 2/s). Input
``{"x": [n numbers], "s": int}``; ``primal`` answers y(2) as a list of n,
``gradient`` the gradient of its last element with respect to x, a list of n.

Each RK4 stage reaches one element further down the chain, so after s steps
only y₀ … y₄ₛ₋₁ can differ from zero: at GradBench's sizes (n ≥ 1000,
s ≤ 100) the last element and its gradient are exactly zero. The tests use
small n with enough steps to reach it.

``auto`` is replay: one RK4 step recorded (milliseconds) and replayed
along the s steps and back, reverse mode's gradient bit for bit
(:func:`_chained_gradient`); one recording of all s steps, the other way to
replay, would take seconds and gigabytes at n = 100,000, s = 100, and
GradBench's mean per response would be that recording.

>>> prepared = EVAL.prepare({"x": [1.0, 3.0], "s": 1})
>>> EVAL.functions["primal"](prepared, "reverse").tolist()  # y₀ = x₀t, y₁ = x₀x₁t²/2 at t = 2
[2.0, 6.0]
>>> EVAL.functions["gradient"](prepared, "reverse").tolist()  # (2x₁, 2x₀)
[6.0, 2.0]
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.gradbench.inputs import chain_gradient, replayed_vjp
from adcompare.gradbench.scalar import (
    ByMode,
    field_array,
    fields,
    gradient_eval,
    seeded_workloads,
    whole_number,
)

__all__ = ["EVAL", "last", "rk4"]

#: GradBench's default (n, s), in its order (by n·s; equal products keep n's order).
SIZES = tuple(
    sorted(
        ((n, s) for n in (1000, 10000, 100000) for s in (1, 10, 100)),
        key=lambda size: size[0] * size[1],
    )
)
#: Ops one RK4 step applies to n-vectors (a measure of forward mode's work).
OPS_PER_STEP = 20


def _values(draw: np.ndarray, size: tuple[int, int]) -> dict:
    return {"x": draw.tolist(), "s": size[1]}


def _shifted(y):
    """(1, y₀, y₁, …, yₙ₋₂): the right-hand side is x times this."""
    return ad.concatenate([np.ones(1), y[:-1]])


def rk4(x, s: int):
    """y(2) for the chain ODE with parameters ``x``, in ``s`` RK4 steps from y(0) = 0.

    Each stage's slope is kᵢ = x·shifted(yᵢ), so x is factored out of the stage
    updates and of the step's weighted sum, y + (h/6)·x·(s₁ + s₄ + 2(s₂ + s₃)):
    the same sums as the four kᵢ (within an ulp), with a sixth fewer array
    operations, and fewer still in the reverse sweep.

    >>> rk4(np.array([1.0, 3.0]), 1).tolist()
    [2.0, 6.0]
    """
    scales = _scales(x, s)
    y = np.zeros(x.shape[0])
    for _ in range(s):
        y = _step(*scales, y)
    return y


def _scales(x, s: int) -> tuple:
    """(h/2)·x, h·x and (h/6)·x for the step h = 2/s."""
    h = 2.0 / s
    return (h / 2) * x, h * x, (h / 6) * x


def _step(half, full, sixth, y):
    """One RK4 step of the chain ODE, x factored out (see :func:`rk4`)."""
    s1 = _shifted(y)
    s2 = _shifted(y + half * s1)
    s3 = _shifted(y + half * s2)
    s4 = _shifted(y + full * s3)
    return y + sixth * ((s1 + s4) + 2.0 * (s2 + s3))


def _step_adjoint(half, full, sixth, y, bar):
    """⟨one step's new y, bar⟩: its gradient is the step taken backwards."""
    return ad.sum(_step(half, full, sixth, y) * bar)


_REPLAYS: dict = {}
_SCALES: dict = {}


def _chained_gradient(x, s: int) -> np.ndarray:
    """The gradient of the last element of y(2) by one recorded RK4 step, replayed along
    the steps and back (:func:`~adcompare.gradbench.inputs.chain_gradient`); the scales'
    cotangents reach x by their replayed pullback
    (:func:`~adcompare.gradbench.inputs.replayed_vjp`). Reverse mode's gradient within
    a few ulps, with a recording of one step (tens of instructions) where the whole
    chain's took seconds."""
    n = x.shape[0]
    scales, pullback = replayed_vjp(_SCALES, (n, s), lambda x: _scales(x, s), x)
    last_bar = np.zeros(n)
    last_bar[-1] = 1.0
    bars = chain_gradient(
        _REPLAYS, n, _step_adjoint, scales, (np.zeros(n),), s, lambda t: (), (last_bar,)
    )
    return pullback(*bars)


def last(x, s: int):
    """The last element of :func:`rk4`'s y(2): the function the gradient is of.

    >>> print(last(np.array([1.0, 3.0]), 1))
    6.0
    """
    return rk4(x, s)[-1]


def _prepare(value) -> tuple[np.ndarray, int]:
    value = fields(value, "ode", ["x", "s"])
    return field_array(value, "x", "ode", 1), whole_number(value, "s", "ode", 1)


EVAL = gradient_eval(
    "ode",
    ByMode(
        "ode", last, work=lambda x, s: OPS_PER_STEP * s * x.size, replay_gradient=_chained_gradient
    ),
    _prepare,
    lambda: seeded_workloads(
        SIZES, lambda size: f"n={size[0]},s={size[1]}", lambda size: (size[0],), _values
    ),
    primal=rk4,
    auto="replay",
)
