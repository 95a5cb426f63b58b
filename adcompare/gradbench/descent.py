"""The gradient descent GradBench's nested evals (particle, saddle) are defined
with, and the shape both evals share: four functions, one per pair of modes.

GradBench fixes the solver, not just the problem, so that every tool runs
the same iterations: a step starts at ``1e-5``; a step that lowers ``f`` is
taken, and after ten taken in a row the step doubles; a step that does not
lower ``f`` halves it (and restarts the count). The descent stops when the
gradient's norm or the step's length falls to ``1e-5``.

``f`` and ``gradient`` are the caller's: in the nested evals both take
derivatives themselves, and ``x0`` or what ``f`` closes over may carry an
outer transform's derivative. The stopping tests and the comparison of
``f`` values read primal values only (a derivative cannot change which
branch is taken), so they are computed on those values with numpy, and the
solver runs unchanged under every transform.

>>> import numpy as np
>>> bowl = lambda x: (x[0] - 1.0) ** 2
>>> print(np.round(argmin(bowl, lambda x: 2.0 * (x - 1.0), np.array([0.0])), 4))
[1.]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.gradbench.evals import Eval, Workload
from adcompare.ops.registry import raw

__all__ = ["VARIANTS", "argmax", "argmin", "maximum", "nested_eval"]

#: GradBench's function names for the nested evals: the outer mode, then the inner one.
VARIANTS = {
    "rr": ("reverse", "reverse"),
    "ff": ("forward", "forward"),
    "fr": ("forward", "reverse"),
    "rf": ("reverse", "forward"),
}

#: Where the descent stops: a gradient norm or a step length at most this.
TOLERANCE = 1e-5
#: The first step size.
FIRST_STEP = 1e-5
#: After this many lowering steps in a row the step size doubles.
RUN_TO_DOUBLE = 10


def _norm(v) -> float:
    v = raw(v)
    return np.sqrt(np.sum(v * v))


def argmin(f: Callable, gradient: Callable, x0) -> np.ndarray:
    """The point GradBench's descent reaches from ``x0`` on ``f``, given its gradient.

    >>> print(argmin(lambda x: np.sum(x * x), lambda x: 2.0 * x, np.array([1.0, -1.0])))
    [ 8.24632483e-06 -8.24632483e-06]
    """
    x, fx, gx = x0, f(x0), gradient(x0)
    step, run = FIRST_STEP, 0
    while _norm(gx) > TOLERANCE:
        if run == RUN_TO_DOUBLE:
            step, run = 2.0 * step, 0
            continue
        x_next = x - step * gx
        if _norm(raw(x) - raw(x_next)) <= TOLERANCE:
            break
        f_next = f(x_next)
        if raw(f_next) < raw(fx):
            x, fx, gx, run = x_next, f_next, gradient(x_next), run + 1
        else:
            step, run = step / 2.0, 0
    return x


def argmax(f: Callable, gradient: Callable, x0) -> np.ndarray:
    """:func:`argmin` of ``-f``: the descent climbing ``f``.

    >>> print(argmax(lambda x: -np.sum(x * x), lambda x: -2.0 * x, np.array([1.0, -1.0])))
    [ 8.24632483e-06 -8.24632483e-06]
    """
    return argmin(lambda x: -f(x), lambda x: -gradient(x), x0)


def maximum(f: Callable, gradient: Callable, x0):
    """``f`` at :func:`argmax`: the largest value the climb from ``x0`` finds.

    >>> print(maximum(lambda x: 3.0 - np.sum(x * x), lambda x: -2.0 * x, np.array([1.0])))
    2.999999999931998
    """
    return f(argmax(f, gradient, x0))


def nested_eval(name: str, prepare: Callable, solve: Callable, workload: Workload) -> Eval:
    """A nested eval: its functions are :data:`VARIANTS`, each ``solve(prepared, outer,
    inner)`` (they name their modes, so the protocol's mode is ignored), its one
    input ``workload``, its output ``solve``'s result as it is.

    >>> toy = nested_eval("toy", float, lambda x, outer, inner: f"{outer}/{inner}", None)
    >>> toy.functions["rf"](toy.prepare(1), "auto"), toy.primal, toy.modes
    ('reverse/forward', None, ())
    """
    return Eval(
        name=name,
        prepare=prepare,
        functions={
            variant: lambda prepared, mode, modes=modes: solve(prepared, *modes)
            for variant, modes in VARIANTS.items()
        },
        encode=lambda function, result: result,
        modes=(),
        workloads=lambda: (workload,),
    )
