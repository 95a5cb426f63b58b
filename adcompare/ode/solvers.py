"""Explicit Runge–Kutta solvers written with the op set, so every engine runs them.

Two tableaus share one step: ``rk4`` (the classic fourth-order method, a
fixed number of steps between consecutive output times) and ``dopri5``
(Dormand and Prince's 5(4) pair, adaptive: the step advances the
fifth-order solution and the embedded fourth-order one estimates the error,
controlled by ``rtol`` and ``atol`` as scipy's solvers do). Every step
evaluates the right-hand side at its end too (``dopri5`` needs it for the
error estimate; it is the next step's first stage, "first same as last"),
which gives each step a dense output: ``dopri5``'s own fourth-order
continuous extension, and for ``rk4`` the cubic Hermite interpolant through
both ends' values and slopes. The adjoint method reads the trajectory
inside a step from it.

Step sizes are chosen from plain numbers: the error estimate is read with
:func:`~adcompare.runtime.boxes.raw` (a stop-gradient), so a step size
carries no derivative and differentiating through the steps differentiates
the scheme with those step sizes held constant, as JAX's and torchdiffeq's
solvers do.

Each step ends exactly on its end time ``t_end`` (the last one of an
interval on the output time), so re-running step ``i`` from its state
``y[i]`` gives the same numbers bit for bit: what the checkpointed adjoint
relies on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adcompare.ops import add, multiply
from adcompare.runtime.batch_arrays import BatchArray
from adcompare.runtime.boxes import raw

__all__ = ["DOPRI5", "RK4", "SOLVERS", "Solution", "Tableau", "dense", "solve", "step"]


@dataclass(frozen=True)
class Tableau:
    """An explicit Runge–Kutta method: stages ``a``, ``c``, weights ``b``; ``error`` the
    weights of the error estimate over the stages and the end slope (``None``: fixed
    steps); ``dense`` each of those values' polynomial in x = (t - t_i)/h (the
    coefficients of x, x², ...); ``order`` the error estimate's order plus one."""

    name: str
    a: tuple
    c: tuple
    b: tuple
    error: tuple | None
    dense: tuple
    order: int


RK4 = Tableau(
    "rk4",
    a=((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
    c=(0.0, 0.5, 0.5, 1.0),
    b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
    error=None,
    # Cubic Hermite: y_i + h(h10(x) f_i + h11(x) f_{i+1}) + h01(x)(y_{i+1} - y_i), with
    # y_{i+1} - y_i = h Σ b_j k_j, h10 = x - 2x² + x³, h01 = 3x² - 2x³, h11 = x³ - x².
    dense=(
        (1.0, -1.5, 2 / 3),
        (0.0, 1.0, -2 / 3),
        (0.0, 1.0, -2 / 3),
        (0.0, 0.5, -1 / 3),
        (0.0, -1.0, 1.0),
    ),
    order=4,
)

DOPRI5 = Tableau(
    "dopri5",
    a=(
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    ),
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    error=(-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40),
    # Shampine's fourth-order continuous extension (the coefficients scipy's RK45 uses).
    dense=(
        (1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432),
        (0.0, 0.0, 0.0, 0.0),
        (0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799),
        (0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072),
        (
            0.0,
            127303824393 / 49829197408,
            -318862633887 / 49829197408,
            701980252875 / 199316789632,
        ),
        (0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844),
        (0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423),
    ),
    order=5,
)

#: The solvers by the name ``odeint(solver=...)`` takes.
SOLVERS = {"dopri5": DOPRI5, "rk4": RK4}


def combine(y, h: float, weights, slopes):
    """``y + h Σ weights[j] slopes[j]`` with the op set (zero weights skipped).

    >>> float(combine(1.0, 0.5, (2.0, 0.0), (3.0, 7.0)))
    4.0
    """
    total = None
    for weight, slope in zip(weights, slopes):
        if weight:
            term = multiply(weight, slope)
            total = term if total is None else add(total, term)
    return y if total is None else add(y, multiply(h, total))


def step(rhs: Callable, t: float, t_end: float, y, slope, tableau: Tableau):
    """One step from ``(t, y)`` to ``t_end`` (``slope`` is ``rhs(y, t)``): the new state and
    every slope it evaluated, the end's ``rhs(y_new, t_end)`` last.

    >>> y, slopes = step(lambda y, t: -y, 0.0, 0.1, 1.0, -1.0, RK4)
    >>> print(f"{float(y):.10f} {np.exp(-0.1):.10f} {len(slopes)}")
    0.9048375000 0.9048374180 5
    """
    h = t_end - t
    slopes = [slope]
    for row, c in zip(tableau.a, tableau.c[1:]):
        slopes.append(rhs(combine(y, h, row, slopes), t + c * h))
    y_new = combine(y, h, tableau.b, slopes)
    slopes.append(rhs(y_new, t_end))
    return y_new, slopes


def dense(y, h: float, slopes, x: float, tableau: Tableau):
    """The state at ``t_i + x h`` inside a step from ``y`` whose slopes are ``slopes``.

    >>> y, slopes = step(lambda y, t: -y, 0.0, 0.1, 1.0, -1.0, DOPRI5)
    >>> print(f"{float(dense(1.0, 0.1, slopes, 0.5, DOPRI5)):.8f} {np.exp(-0.05):.8f}")
    0.95122942 0.95122942
    """
    weights = [sum(p * x ** (power + 1) for power, p in enumerate(row)) for row in tableau.dense]
    return combine(y, h, weights, slopes)


@dataclass
class Solution:
    """What a solve leaves: the states at the output times, and every step's start time
    (``grid``, ending with the last output time) with the output index of each grid
    point that is an output time (``outputs_at``)."""

    outputs: list
    grid: list = field(default_factory=list)
    outputs_at: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """How to solve: the tableau, tolerances, the step limit, fixed steps per interval."""

    tableau: Tableau
    rtol: float
    atol: float
    mxstep: int
    steps: int


def solve(rhs: Callable, y0, times: np.ndarray, settings: Settings) -> Solution:
    """Integrate ``dy/dt = rhs(y, t)`` from ``y0`` at ``times[0]`` to every time in ``times``.

    >>> settings = Settings(DOPRI5, 1e-10, 1e-10, 1000, 10)
    >>> out = solve(lambda y, t: -y, np.ones(1), np.array([0.0, 1.0]), settings).outputs
    >>> print(f"{float(out[1][0]):.9f} {np.exp(-1.0):.9f}")
    0.367879441 0.367879441
    """
    solution = Solution([y0], [float(times[0])], {0: 0})
    y, slope = y0, rhs(y0, float(times[0]))
    h = None
    for k in range(1, len(times)):
        start, end = float(times[k - 1]), float(times[k])
        if settings.tableau.error is None:
            y, slope = _fixed_interval(rhs, y, slope, start, end, settings, solution)
        else:
            y, slope, h = _adaptive_interval(rhs, y, slope, start, end, h, settings, solution)
        solution.outputs_at[len(solution.grid) - 1] = k
        solution.outputs.append(y)
    return solution


def _fixed_interval(rhs, y, slope, start, end, settings, solution):
    for j in range(1, settings.steps + 1):
        t_end = end if j == settings.steps else start + j * (end - start) / settings.steps
        y, slopes = step(rhs, solution.grid[-1], t_end, y, slope, settings.tableau)
        slope = slopes[-1]
        solution.grid.append(t_end)
    return y, slope


def _error_norm(y, y_new, slopes, h, settings) -> float:
    """The weighted RMS norm of the error estimate, on plain numbers (a stop-gradient)."""
    if isinstance(raw(y_new), BatchArray):
        raise TypeError(
            "odeint's dopri5 chooses each example's step sizes from its values, which vmap "
            "cannot batch through method='tape' or a derivative rule; use solver='rk4' "
            "(fixed steps), or loop over the examples"
        )
    estimate = h * sum(e * np.asarray(raw(s)) for e, s in zip(settings.tableau.error, slopes) if e)
    scale = settings.atol + settings.rtol * np.maximum(np.abs(raw(y)), np.abs(raw(y_new)))
    return float(np.sqrt(np.mean((estimate / scale) ** 2)))


def _first_step(y, slope, settings) -> float:
    """Hairer's first guess: a step that changes y by a hundredth of its scale."""
    scale = settings.atol + settings.rtol * np.abs(raw(y))
    size = np.sqrt(np.mean((np.asarray(raw(y)) / scale) ** 2))
    speed = np.sqrt(np.mean((np.asarray(raw(slope)) / scale) ** 2))
    return 1e-6 if size < 1e-5 or speed < 1e-5 else 0.01 * size / speed


def _adaptive_interval(rhs, y, slope, start, end, h, settings, solution):
    t, tableau = start, settings.tableau
    h = _first_step(y, slope, settings) if h is None else h
    for _ in range(settings.mxstep):
        t_end = end if t + h >= end - 1e-12 * abs(end) else t + h
        size = t_end - t
        y_new, slopes = step(rhs, t, t_end, y, slope, tableau)
        error = _error_norm(y, y_new, slopes, size, settings)
        factor = 10.0 if error == 0 else 0.9 * error ** (-1 / tableau.order)
        if error <= 1.0:
            y, slope, t = y_new, slopes[-1], t_end
            solution.grid.append(t)
            h = size * min(10.0, factor)
            if t == end:
                return y, slope, h
        else:
            h = size * max(0.2, factor)
        if not math.isfinite(error) or h <= 1e-14 * max(1.0, abs(t)):
            raise FloatingPointError(
                f"odeint: the step size fell to {h:.3g} at t = {t:.6g}: the solution "
                "blows up or is not finite there; check f, or integrate to an earlier time"
            )
    raise RuntimeError(
        f"odeint: more than mxstep = {settings.mxstep} steps between t = {start:.6g} and "
        f"{end:.6g}; the problem may be stiff for this explicit solver: raise mxstep, "
        "loosen rtol/atol, or use scipy.integrate.odeint (LSODA) for the values"
    )
