"""The benchmark problems: families of functions indexed by their sizes.

Every problem is defined by :func:`problem`, the one way in, which a user's
own function takes too (:mod:`~adcompare.bench.problems.define`); they live
in one registry (:mod:`~adcompare.bench.problems.registry`), which the
``adcompare.problems`` entry points extend and every study reads. The
benchmark's own are written once against an array namespace ``xp``: with
``xp=numpy`` each is plain f, the baseline; with ``xp=adcompare`` the same
code runs on dual numbers and tensors. Building a problem at a size gives
an :class:`Instance`: the function, a point, the input count ``n`` and the
output count ``m``.

Five families:

``"many-inputs"``
    n inputs, one output (a loss over its parameters); swept over ``n``.
``"one-input"``
    one input, m outputs (a trajectory, features of a scalar); swept over ``m``.
``"jacobian"``
    n inputs, m outputs; swept over a grid of ``(n, m)``.
``"batch"``
    a loss per example of a batch of m, over n fixed weights: the Jacobian is
    the matrix of per-example gradients; swept over the batch size ``m``.
``"fixed"``
    one instance at its published size, not swept: the ADBench and
    GradBench problems (:mod:`~adcompare.bench.problems.real`).

An ``opt_in`` problem (one that takes seconds a call) is measured only when
named, or by the full preset; :func:`default_problems` leaves it out.

Data inside a problem (matrices, samples) is drawn from a generator seeded
by the problem's name and size, so every run measures the same function.
"""

from __future__ import annotations

import zlib

import numpy as np

from adcompare.bench.problems.define import (
    FAMILIES,
    Instance,
    Problem,
    ProblemError,
    problem,
    ravel,
    size_text,
)
from adcompare.bench.problems.elimination import ELIMINATION_PROBLEMS
from adcompare.bench.problems.gradbench import GRADBENCH_PROBLEMS
from adcompare.bench.problems.loops import LOOP_PROBLEMS, LoopInstance, loop_problem
from adcompare.bench.problems.ode import ODE_PROBLEMS
from adcompare.bench.problems.per_example import make_per_example
from adcompare.bench.problems.real import REAL_PROBLEMS
from adcompare.bench.problems.registry import (
    REGISTRY,
    available_problems,
    get_problem,
    problems_of,
    register,
)
from adcompare.bench.problems.sparse import SPARSE_PROBLEMS
from adcompare.train.mlp import MLP, mean_squared_error
from adcompare.train.step import hidden_for, training_step

__all__ = [
    "FAMILIES",
    "PROBLEMS",
    "REGISTRY",
    "Instance",
    "LoopInstance",
    "Problem",
    "ProblemError",
    "available_problems",
    "default_problems",
    "get_problem",
    "loop_problem",
    "problem",
    "problems_of",
    "ravel",
    "register",
    "size_text",
]


def _rng(name: str, *size: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(name.encode()), *size])


# --- many inputs, one output ----------------------------------------------------------


def _rosenbrock(n: int):
    """Extended Rosenbrock from its standard start (-1.2, 1, -1.2, 1, ...)."""

    def f(xp, x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.where(np.arange(max(n, 2)) % 2 == 0, -1.2, 1.0)
    return f, x


def _quadratic(n: int):
    # The Kac-Murdock-Szegő matrix A_ij = ρ^|i−j| (ρ = 0.9) is dense, positive definite
    # and free of subnormals up to n = 4096; it costs n² to build (a product B·Bᵀ would cost n³).
    rng = _rng("quadratic", n)
    index = np.arange(n)
    matrix = 0.9 ** np.abs(index[:, None] - index[None, :])
    shift = rng.standard_normal(n)

    def f(xp, x):
        return 0.5 * xp.sum(x * (matrix @ x)) - xp.sum(shift * x)

    return f, rng.standard_normal(n)


_SAMPLES = 32


def _logistic(n: int):
    rng = _rng("logistic", n)
    features = rng.standard_normal((_SAMPLES, n)) / np.sqrt(n)
    labels = np.where(rng.random(_SAMPLES) < 0.5, -1.0, 1.0)

    def f(xp, w):
        return xp.mean(xp.log1p(xp.exp(-labels * (features @ w))))

    return f, rng.standard_normal(n)


_MLP_INPUTS = 4


def _mlp(n: int):
    # Weights of a 4-h-1 tanh network, flattened: n = 4h + h + h + 1 = 6h + 1.
    d = _MLP_INPUTS
    net = MLP((d, max(1, round((n - 1) / (d + 2))), 1), "tanh")
    rng = _rng("mlp", n)
    inputs = rng.standard_normal((_SAMPLES, d))
    targets = np.sin(inputs.sum(axis=1, keepdims=True))

    def f(xp, w):
        return mean_squared_error(xp, net.forward(xp, w, inputs), targets)

    return f, rng.standard_normal(net.n_params) / np.sqrt(d)


def _training_step(n: int):
    step = training_step(hidden_for(n))
    return step.loss, step.theta


# --- one input, many outputs ------------------------------------------------------------


def _trajectory(m: int):
    times = np.linspace(0.0, 10.0, m)

    def f(xp, x):
        return xp.exp(-0.2 * times) * xp.sin(x * times)

    return f, np.array([1.3])


def _fourier(m: int):
    half = max(1, m // 2)
    frequencies = np.arange(1, half + 1, dtype=np.float64)

    def f(xp, x):
        phase = frequencies * x
        return xp.concatenate([xp.sin(phase), xp.cos(phase)])

    return f, np.array([0.7])


# --- n inputs, m outputs ------------------------------------------------------------------


def _tanh_map(n: int, m: int):
    rng = _rng("tanh_map", n, m)
    weights = rng.standard_normal((m, n)) / np.sqrt(n)

    def f(xp, x):
        return xp.tanh(weights @ (x * xp.sin(x)))

    return f, rng.standard_normal(n)


_MILLION = 2**20

_LIMIT_N = {"n": (_MILLION, "the sweep stops at 2²⁰ inputs")}
_LIMIT_M = {"m": (_MILLION, "the sweep stops at 2²⁰ outputs")}

_BUILT_IN = [
    problem(
        build=_rosenbrock,
        name="rosenbrock",
        description="extended Rosenbrock Σ 100(x_{i+1} − x_i²)² + (1 − x_i)²",
        xp=True,
        limits=_LIMIT_N,
        sizing="each term couples neighbours x_i and x_{i+1}, so it needs n ≥ 2",
    ),
    problem(
        build=_quadratic,
        name="quadratic",
        description="quadratic form ½ xᵀAx − bᵀx, A dense positive definite (A_ij = 0.9^|i−j|)",
        xp=True,
        limits={"n": (4096, "the dense 4096×4096 matrix is the largest quadratic builds")},
    ),
    problem(
        build=_logistic,
        name="logistic",
        description=f"logistic-regression loss over its n weights, {_SAMPLES} samples",
        xp=True,
        limits=_LIMIT_N,
    ),
    problem(
        build=_mlp,
        name="mlp",
        description=f"mean squared error of a {_MLP_INPUTS}-h-1 tanh MLP over its weights, "
        f"{_SAMPLES} samples",
        xp=True,
        limits=_LIMIT_N,
        sizing=f"its weights number n = {_MLP_INPUTS + 2}h + 1 for h hidden units, so n "
        "is the nearest such count",
    ),
    problem(
        build=_training_step,
        name="training_step",
        description="softmax cross-entropy of a 2-h-h-2 ReLU MLP on 64 spiral points over its "
        "weights (adcompare train --step-cost)",
        xp=True,
        limits={"n": (2**17, "a 2-h-h-2 MLP stops at h = 358, about 2¹⁷ weights")},
        opt_in=True,
        sizing="its weights number n = h² + 6h + 2 for h hidden units a layer, so n is "
        "the nearest such count",
    ),
    problem(
        build=_trajectory,
        name="trajectory",
        sweep=("m",),
        description="damped oscillation y_k = e^(−0.2 t_k) sin(ω t_k) at m times, over ω",
        xp=True,
        limits=_LIMIT_M,
    ),
    problem(
        build=_fourier,
        name="fourier",
        sweep=("m",),
        description="Fourier features sin(kx), cos(kx), k = 1..m/2, of a scalar x",
        xp=True,
        limits=_LIMIT_M,
        sizing="its outputs come in sin and cos pairs, so m is even and at least 2",
    ),
    problem(
        build=make_per_example,
        name="per_example",
        sweep=("m",),
        family="batch",
        description="squared error of a 4-8-1 tanh network, one loss per example: per-example "
        "gradients (measure with --modes per-example)",
        xp=True,
        limits={"m": (4096, "a loop of 4096 reverse passes is where the sweep stops")},
        opt_in=True,
    ),
    problem(
        build=_tanh_map,
        name="tanh_map",
        sweep=("n", "m"),
        description="the map x ↦ tanh(W·(x·sin x)) from n inputs to m outputs",
        xp=True,
        limits={
            "n": (8192, "the dense m×n matrix stops at 8192 columns"),
            "m": (8192, "the dense m×n matrix stops at 8192 rows"),
        },
    ),
    *(
        problem(
            build=real.make,
            name=real.name,
            sweep=(),
            description=real.description,
            xp=True,
            opt_in=real.opt_in,
        )
        for real in REAL_PROBLEMS
    ),
]
register(
    *_BUILT_IN,
    *SPARSE_PROBLEMS,
    *LOOP_PROBLEMS.values(),
    *ELIMINATION_PROBLEMS,
    *GRADBENCH_PROBLEMS,
    *ODE_PROBLEMS,
)
#: The benchmark's own problems (the sweep's), by name; :data:`REGISTRY` holds every study's.
PROBLEMS: dict[str, Problem] = {p.name: p for p in _BUILT_IN}


def default_problems() -> list[str]:
    """The problems measured when none are named: every one but the opt-in ones.

    >>> "adbench-lstm" in default_problems(), "adbench-lstm" in PROBLEMS
    (False, True)
    """
    return [name for name, problem in PROBLEMS.items() if not problem.opt_in]
