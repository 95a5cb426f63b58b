"""GradBench's primals run on NumPy itself: the yardstick for adcompare's own.

Issue 32 forbids slowing a primal to improve a derivative ÷ primal ratio, so
each eval's primal is timed beside the same formula in plain NumPy. The
classic evals write their primals with adcompare's op set (``ad.exp``,
``ad.matmul``, …) on plain arrays, which reach numpy through the registry's
dispatch; :func:`numpy_twin` executes an eval module's functions again with
``ad`` bound to numpy, so the two differ by the dispatch and nothing else:
the same operations in the same order. gmm, ba and lstm need no twin: their
primals are already plain NumPy (:mod:`adcompare.adbench.plain`).

>>> from adcompare.gradbench import lse
>>> twin = numpy_twin(lse)
>>> twin["ad"] is np and twin["logsumexp"] is not lse.logsumexp
True
"""

from __future__ import annotations

import importlib
import inspect
import textwrap
from collections.abc import Callable
from types import ModuleType

import numpy as np

__all__ = ["PRIMALS", "numpy_twin", "twin_primal"]

#: Per eval: the module whose functions the primal calls, and the primal as a call of
#: those functions on the eval's prepared input (as the eval's own primal makes it).
PRIMALS: dict[str, tuple[str, Callable]] = {
    "lse": ("lse", lambda ns, prepared: ns["logsumexp"](prepared[0], prepared[0].max())),
    "llsq": ("llsq", lambda ns, prepared: ns["llsq"](*prepared)),
    "ode": ("ode", lambda ns, prepared: ns["rk4"](*prepared)),
    "det": ("det", lambda ns, prepared: ns["det_by_minors"](*prepared)),
    "kmeans": ("kmeans", lambda ns, prepared: float(ns["cost"](*prepared))),
    "ht": (
        "ht_model",
        lambda ns, problem: np.reshape(
            ns["hand_residuals"](problem.theta, problem.us, problem.data), -1
        ),
    ),
}


def numpy_twin(module: ModuleType) -> dict:
    """The module's namespace with each function it defines executed again from its
    source with ``ad`` bound to numpy (helpers calling helpers stay within the twin).

    >>> from adcompare.gradbench import det
    >>> print(numpy_twin(det)["det_by_minors"](np.array([2.0, 1.0, 1.0, 3.0]), 2))
    5.0
    """
    namespace = dict(vars(module), ad=np)
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            source = textwrap.dedent(inspect.getsource(value))
            exec(compile(source, module.__file__, "exec"), namespace)
    return namespace


def twin_primal(name: str) -> Callable:
    """The eval's primal on NumPy: a function of the eval's prepared input.

    >>> from adcompare.gradbench import get_eval
    >>> prepared = get_eval("lse").prepare({"x": [0.0, 0.0]})
    >>> print(round(float(twin_primal("lse")(prepared)), 12))
    0.69314718056
    """
    module, primal = PRIMALS[name]
    namespace = numpy_twin(importlib.import_module(f"adcompare.gradbench.{module}"))
    return lambda prepared: primal(namespace, prepared)
