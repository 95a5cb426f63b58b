"""ODE problems: ``odeint``'s three derivatives side by side (the ``ode`` study).

Two problems, each solved by :func:`adcompare.odeint` (``dopri5``, scipy's
default tolerances), so that each method has the side it should win:

``ode-params``
    a neural-ODE-like right-hand side y' = tanh(W y + b) on d states, over
    its n = d² + d weights; one output, ½‖y(1)‖²: the adjoint's one backward
    solve against n sensitivity ODEs.
``ode-trajectory``
    Lotka–Volterra with four rates; the outputs are both populations at m/2
    times on [0, 10], the whole trajectory: four sensitivity ODEs against m
    backward solves.

Three modes compute each Jacobian, measured when named (alone or by the
group ``ode``); each cell's counts add ``error``, the Jacobian's largest
difference from a tight-tolerance reference (``rtol = atol = 1e-12``), over
the reference's largest entry:

``ode:tape``
    through the solver's steps, ``jacobian(mode="auto")`` (reverse for the
    loss, forward for the trajectory);
``ode:forward``
    forward sensitivities, ``jacfwd`` of ``odeint(method="forward")``;
``ode:adjoint``
    the adjoint method, ``jacrev`` of ``odeint(method="adjoint")``.
"""

from __future__ import annotations

import zlib

import numpy as np

import adcompare as ad
from adcompare.bench.problems.define import problem

__all__ = ["MODE_NAMES", "ODE_PROBLEMS", "PREPARERS", "unavailable_reason"]

#: The reference Jacobian's tolerances.
REFERENCE_TOLERANCE = 1e-12
_RATES = np.array([1.1, 0.4, 0.9, 0.3])


def _states_for(n: int) -> int:
    """The d whose d² + d weights are nearest n (at least 2)."""
    return max(2, round((np.sqrt(4 * n + 1) - 1) / 2))


def make_neural(n: int):
    """``(f, weights)``: ½‖y(1)‖² for y' = tanh(W y + b), over ``W`` and ``b`` flattened.

    >>> f, x = make_neural(20)
    >>> x.shape, f(np, x).shape
    ((20,), ())
    """
    d = _states_for(n)
    rng = np.random.default_rng([zlib.crc32(b"ode-params"), d])
    weights = np.concatenate([rng.standard_normal(d * d) / np.sqrt(d), rng.standard_normal(d)])
    start = np.linspace(-1.0, 1.0, d)

    def solve(x, **options):
        w, b = ad.reshape(x[: d * d], (d, d)), x[d * d :]
        ys = ad.odeint(lambda y, t, w, b: ad.tanh(w @ y + b), start, [0.0, 1.0], w, b, **options)
        return 0.5 * ad.sum(ys[-1] ** 2)

    return _with_solve(solve), weights


def make_trajectory(m: int):
    """``(f, rates)``: both Lotka–Volterra populations at m/2 times, over the four rates.

    >>> f, x = make_trajectory(8)
    >>> x.shape, f(np, x).shape
    ((4,), (8,))
    """
    times = np.linspace(0.0, 5.0, max(1, m // 2))

    def rhs(y, t, p):
        prey, predator = y[0], y[1]
        return ad.stack(
            [p[0] * prey - p[1] * prey * predator, p[3] * prey * predator - p[2] * predator]
        )

    def solve(x, **options):
        return ad.reshape(ad.odeint(rhs, np.array([2.0, 1.0]), times, x, **options), (-1,))

    return _with_solve(solve), _RATES.copy()


def _with_solve(solve):
    """The problem's ``f(xp, x)`` (the tape), with ``f.solve(x, **options)`` for the modes."""

    def f(xp, x):
        return solve(x)

    f.solve = solve
    f.reference = None  # the tight-tolerance Jacobian, once a mode has asked
    return f


def _prepare(method: str):
    def prepare(instance):
        solve, x = instance.f.solve, instance.x
        if method == "tape":
            jacobian = ad.jacobian(solve)
        elif method == "forward":
            jacobian = ad.jacfwd(lambda x: solve(x, method="forward"))
        else:
            jacobian = ad.jacrev(lambda x: solve(x, method="adjoint"))
        reference = _reference(instance)

        def work():
            found = np.asarray(jacobian(x), dtype=np.float64).reshape(reference.shape)
            error = np.max(np.abs(found - reference)) / np.max(np.abs(reference))
            work.counts = {"error": float(error)}
            return found

        return work

    return prepare


def _reference(instance) -> np.ndarray:
    """The Jacobian at ``rtol = atol = 1e-12``, by the cheaper continuous method (computed
    once per instance: the three modes share it)."""
    f, x = instance.f, instance.x
    if getattr(f, "reference", None) is None:
        tight = {"rtol": REFERENCE_TOLERANCE, "atol": REFERENCE_TOLERANCE}
        if instance.m == 1:
            found = ad.grad(lambda x: f.solve(x, method="adjoint", **tight))(x)
        else:
            found = ad.jacfwd(lambda x: f.solve(x, method="forward", **tight))(x)
        f.reference = np.asarray(found, dtype=np.float64).reshape(instance.m, instance.n)
    return f.reference


def unavailable_reason(instance) -> str | None:
    """Why ``instance`` is no ODE problem for the ``ode:`` modes, or ``None``."""
    if getattr(instance.f, "solve", None) is None:
        return "the ode: modes need an odeint problem (ode-params, ode-trajectory)"
    return None


#: The ODE modes: name, label and how to prepare the work.
PREPARERS = {
    "ode:tape": ("odeint, through the solver's steps", _prepare("tape")),
    "ode:forward": ("odeint, forward sensitivities", _prepare("forward")),
    "ode:adjoint": ("odeint, adjoint", _prepare("adjoint")),
}

#: The modes the ``ode`` group names.
MODE_NAMES = tuple(PREPARERS)

ODE_PROBLEMS = [
    problem(
        build=make_neural,
        name="ode-params",
        description="½‖y(1)‖² for the neural-ODE-like y' = tanh(W y + b) on d states, over its "
        "n = d² + d weights (odeint, dopri5)",
        xp=True,
        sizes=(6, 20, 72, 272, 1056),
        studies=("ode",),
        sizing="its weights number n = d² + d for d states, so n is the nearest such count",
        limits={"n": (2000, "forward sensitivities carry n lanes of d states each")},
    ),
    problem(
        build=make_trajectory,
        name="ode-trajectory",
        sweep=("m",),
        description="Lotka–Volterra populations at m/2 times on [0, 5], over its 4 rates "
        "(odeint, dopri5)",
        xp=True,
        sizes=(8, 32, 128, 512),
        studies=("ode",),
        sizing="its outputs are two populations a time, so m is even",
        limits={"m": (4096, "the adjoint solves backwards once per output")},
    ),
]
