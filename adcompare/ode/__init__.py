"""ODE solutions differentiated three ways: :func:`odeint`.

``odeint(f, y0, t, *args)`` has scipy's signature: ``f(y, t, *args)``
returns dy/dt, the result is the solution at the times ``t``, shape
``(len(t), len(y0))``. The solver is ``"dopri5"`` (Dormand–Prince 5(4),
adaptive, ``rtol``/``atol`` as scipy's) or ``"rk4"`` (``steps`` fixed steps
between consecutive times); both are written with the op set
(:mod:`adcompare.ode.solvers`). ``method`` says how derivatives are taken:

``"tape"``
    the solver simply runs on the traced values, so forward and reverse mode
    differentiate its arithmetic step by step: the exact derivative of the
    numbers computed, with the step sizes (chosen from plain numbers) held
    constant;
``"forward"``
    the forward sensitivity equations (:mod:`adcompare.ode.rules`): n more
    ODEs for n tangent lanes, f's derivative by dual numbers; what ``jvp``
    and ``jacfwd`` use, and reverse mode too (from every sensitivity);
``"adjoint"``
    one backward ODE for a(t) = dL/dy(t) and the parameters' gradient, the
    forward trajectory recomputed from at most ``snapshots`` stored states
    by :mod:`adcompare.revolve`'s binomial schedule (``"sqrt"``: every
    ⌈√N⌉-th state; ``None``: every state); what ``grad`` and ``jacrev``
    use. Forward mode over it is refused.

The sensitivities and the adjoint solve continuous equations, so they agree
with the tape's derivative to the solver's tolerance, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.ode.rules import DIFFERENTIATED, ODEINT, OdeCall
from adcompare.ode.solvers import SOLVERS, Settings
from adcompare.ops import reshape, stack
from adcompare.ops.registry import Box, apply, raw, shape_of
from adcompare.pytree import is_differentiable_leaf

__all__ = ["METHODS", "odeint"]

#: How odeint is differentiated.
METHODS = ("tape", "forward", "adjoint")


def odeint(
    f: Callable,
    y0,
    t,
    *args,
    method: str = "tape",
    solver: str = "dopri5",
    rtol: float = 1.49012e-8,
    atol: float = 1.49012e-8,
    mxstep: int = 10_000,
    steps: int = 10,
    snapshots: int | str | None = 16,
    tfirst: bool = False,
):
    """Solve dy/dt = f(y, t, *args) from y(t[0]) = y0; the solution at every time in ``t``.

    ``y0`` is a number or a 1-D array (of numbers or boxes); ``t`` plain,
    strictly increasing times; ``args`` arrays or numbers (floating ones are
    differentiated, ints and strings passed as they are); ``tfirst`` as
    scipy's: f takes ``(t, y, *args)``. ``mxstep`` bounds ``"dopri5"``'s steps
    between two output times. See the module's docstring for ``method``,
    ``solver``, ``steps`` and ``snapshots``.

    >>> import numpy as np, adcompare as ad
    >>> decay = lambda y, t, k: -k * y
    >>> ys = ad.odeint(decay, [1.0], [0.0, 1.0], 0.5)
    >>> print(f"{ys[1, 0]:.8f} {np.exp(-0.5):.8f}")
    0.60653066 0.60653066
    >>> loss = lambda k, method: ad.odeint(decay, [1.0], [0.0, 1.0], k, method=method)[1, 0]
    >>> [f"{float(ad.grad(loss)(0.5, m)):.6f}" for m in ("tape", "forward", "adjoint")]
    ['-0.606531', '-0.606531', '-0.606531']
    >>> print(f"{-np.exp(-0.5):.6f}")  # d/dk e^(-k)
    -0.606531
    """
    times = _times(t)
    y0 = _initial_state(y0)
    _check_options(method, solver, steps, snapshots, mxstep)
    settings = Settings(SOLVERS[solver], float(rtol), float(atol), int(mxstep), int(steps))
    rhs = (lambda y, time, *a: f(time, y, *a)) if tfirst else f
    static = [DIFFERENTIATED if is_differentiable_leaf(a) else a for a in args]
    dynamic = [_argument(a, i) for i, a in enumerate(args) if is_differentiable_leaf(a)]
    call = OdeCall(rhs, times, settings, method=method, snapshots=snapshots, static=static)
    if method == "tape":
        return call.run(y0, dynamic)
    return apply(ODEINT, (y0, *dynamic), {"call": call})


def _times(t) -> np.ndarray:
    if isinstance(t, Box) or any(isinstance(v, Box) for v in np.ravel(np.asarray(t, object))):
        raise TypeError(
            "odeint differentiates y0 and args, not the times t; pass t as plain numbers"
        )
    times = np.asarray(t)
    if np.iscomplexobj(times):
        raise TypeError("odeint: the times t are complex; pass real, increasing times")
    times = times.astype(np.float64)
    if times.ndim != 1 or times.size == 0:
        raise ValueError(
            f"odeint: t must be a 1-D array of at least one time, not shape {times.shape}"
        )
    if not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
        raise ValueError(
            "odeint: t must be finite and strictly increasing (it integrates forward in "
            "time); sort the times and drop repeats"
        )
    return times


def _real(value, what: str):
    if np.iscomplexobj(raw(value)):
        raise TypeError(
            f"odeint integrates real ODEs, but {what} is complex; split it into its real "
            "and imaginary parts as separate real components"
        )


def _initial_state(y0):
    if isinstance(y0, (list, tuple)) and any(isinstance(v, Box) for v in y0):
        y0 = stack(list(y0))
    elif not isinstance(y0, Box):
        y0 = np.asarray(y0)
    _real(y0, "y0")
    shape = shape_of(y0)
    if len(shape) > 1:
        raise ValueError(
            f"odeint: y0 must be a number or a 1-D array, not shape {shape}; flatten it "
            "and reshape inside f"
        )
    if not isinstance(y0, Box):
        y0 = y0.astype(np.float64)
    return reshape(y0, (1,)) if not shape else y0


def _argument(value, position: int):
    _real(value, f"argument {position} of args")
    return value if isinstance(value, Box) else np.asarray(value, dtype=np.float64)


def _check_options(method, solver, steps, snapshots, mxstep) -> None:
    if method not in METHODS:
        raise ValueError(f"odeint: method must be one of {', '.join(METHODS)}, not {method!r}")
    if solver not in SOLVERS:
        raise ValueError(f"odeint: solver must be one of {', '.join(SOLVERS)}, not {solver!r}")
    if int(steps) != steps or steps < 1:
        raise ValueError(f"odeint: steps (rk4's steps per interval) must be ≥ 1, not {steps!r}")
    if int(mxstep) != mxstep or mxstep < 1:
        raise ValueError(f"odeint: mxstep must be a positive whole number, not {mxstep!r}")
    if (
        snapshots is not None
        and snapshots != "sqrt"
        and (int(snapshots) != snapshots or snapshots < 1)
    ):
        raise ValueError(
            f"odeint: snapshots must be a number ≥ 1, 'sqrt' or None (store every state), "
            f"not {snapshots!r}"
        )
