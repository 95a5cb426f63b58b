"""The benchmark problems: families of functions indexed by their sizes.

Each problem is written once against an array namespace ``xp``: with
``xp=numpy`` it is plain f, the baseline; with ``xp=adcompare`` the same
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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from adcompare.bench.problems.per_example import make_per_example
from adcompare.bench.problems.real import REAL_PROBLEMS

__all__ = ["FAMILIES", "PROBLEMS", "Instance", "Problem", "default_problems", "get_problem"]

#: The size parameters each family is swept over.
FAMILIES: dict[str, tuple[str, ...]] = {
    "many-inputs": ("n",),
    "one-input": ("m",),
    "jacobian": ("n", "m"),
    "batch": ("m",),
    "fixed": (),
}


@dataclass(frozen=True)
class Instance:
    """One problem at one size: ``f(xp, x)`` at the point ``x``.

    ``x`` is a 1-D float64 array of ``n`` entries; ``f`` returns a scalar
    (``m == 1``) or a 1-D array of ``m`` entries.
    """

    problem: str
    size: dict
    f: Callable
    x: np.ndarray
    n: int
    m: int
    family: str | None = None

    def on(self, xp) -> Callable:
        """The function of ``x`` alone, with ``xp`` as its array namespace.

        >>> import numpy as np
        >>> inst = get_problem("rosenbrock").build(n=4)
        >>> float(inst.on(np)(np.ones(4)))
        0.0
        """
        f = self.f
        return lambda x: f(xp, x)


@dataclass(frozen=True)
class Problem:
    """A family of functions: ``build(**size)`` gives an :class:`Instance`.

    ``make(**size)`` returns ``(f, x)``; ``limits`` caps each size parameter
    (a dense n×n matrix cannot reach n = 10⁶). ``sizing`` says why a built
    instance may have another size than the one asked for.
    """

    name: str
    family: str
    description: str
    make: Callable
    limits: dict = field(default_factory=dict)
    opt_in: bool = False
    sizing: str = ""

    @property
    def sweeps(self) -> tuple[str, ...]:
        """The size parameters this problem is swept over."""
        return FAMILIES[self.family]

    def too_large(self, size: dict) -> str | None:
        """Why ``size`` is beyond this problem's limits, or ``None``.

        >>> get_problem("quadratic").too_large({"n": 10**6})
        'the dense 4096×4096 matrix is the largest quadratic builds (n ≤ 4096)'
        """
        for key, (limit, why) in self.limits.items():
            if size.get(key, 0) > limit:
                return f"{why} ({key} ≤ {limit})"
        return None

    def build(self, **size) -> Instance:
        """The problem at ``size`` (keywords: the family's size parameters).

        >>> inst = get_problem("tanh_map").build(n=3, m=5)
        >>> inst.n, inst.m
        (3, 5)
        """
        if set(size) != set(self.sweeps):
            raise ValueError(
                f"{self.name} is sized by {', '.join(self.sweeps)}; got {', '.join(size) or 'none'}"
            )
        f, x = self.make(**size)
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        out = np.asarray(f(np, x))
        return Instance(self.name, dict(size), f, x, x.size, out.size, self.family)


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
    hidden = max(1, round((n - 1) / (d + 2)))
    rng = _rng("mlp", n)
    inputs = rng.standard_normal((_SAMPLES, d))
    targets = np.sin(inputs.sum(axis=1))
    sizes = np.cumsum([d * hidden, hidden, hidden])

    def f(xp, w):
        w1 = xp.reshape(w[: sizes[0]], (d, hidden))
        b1 = w[sizes[0] : sizes[1]]
        w2 = w[sizes[1] : sizes[2]]
        hidden_out = xp.tanh(inputs @ w1 + b1)
        prediction = hidden_out @ w2 + w[sizes[2]]
        return xp.mean((prediction - targets) ** 2)

    return f, rng.standard_normal(int(sizes[2]) + 1) / np.sqrt(d)


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

PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in [
        Problem(
            "rosenbrock",
            "many-inputs",
            "extended Rosenbrock Σ 100(x_{i+1} − x_i²)² + (1 − x_i)²",
            _rosenbrock,
            {"n": (_MILLION, "the sweep stops at 2²⁰ inputs")},
            sizing="each term couples neighbours x_i and x_{i+1}, so it needs n ≥ 2",
        ),
        Problem(
            "quadratic",
            "many-inputs",
            "quadratic form ½ xᵀAx − bᵀx, A dense positive definite (A_ij = 0.9^|i−j|)",
            _quadratic,
            {"n": (4096, "the dense 4096×4096 matrix is the largest quadratic builds")},
        ),
        Problem(
            "logistic",
            "many-inputs",
            f"logistic-regression loss over its n weights, {_SAMPLES} samples",
            _logistic,
            {"n": (_MILLION, "the sweep stops at 2²⁰ inputs")},
        ),
        Problem(
            "mlp",
            "many-inputs",
            f"mean squared error of a {_MLP_INPUTS}-h-1 tanh MLP over its weights, "
            f"{_SAMPLES} samples",
            _mlp,
            {"n": (_MILLION, "the sweep stops at 2²⁰ inputs")},
            sizing=f"its weights number n = {_MLP_INPUTS + 2}h + 1 for h hidden units, so n "
            "is the nearest such count",
        ),
        Problem(
            "trajectory",
            "one-input",
            "damped oscillation y_k = e^(−0.2 t_k) sin(ω t_k) at m times, over ω",
            _trajectory,
            {"m": (_MILLION, "the sweep stops at 2²⁰ outputs")},
        ),
        Problem(
            "fourier",
            "one-input",
            "Fourier features sin(kx), cos(kx), k = 1..m/2, of a scalar x",
            _fourier,
            {"m": (_MILLION, "the sweep stops at 2²⁰ outputs")},
            sizing="its outputs come in sin and cos pairs, so m is even and at least 2",
        ),
        Problem(
            "per_example",
            "batch",
            "squared error of a 4-8-1 tanh network, one loss per example: per-example "
            "gradients (measure with --modes per-example)",
            make_per_example,
            {"m": (4096, "a loop of 4096 reverse passes is where the sweep stops")},
            opt_in=True,
        ),
        Problem(
            "tanh_map",
            "jacobian",
            "the map x ↦ tanh(W·(x·sin x)) from n inputs to m outputs",
            _tanh_map,
            {
                "n": (8192, "the dense m×n matrix stops at 8192 columns"),
                "m": (8192, "the dense m×n matrix stops at 8192 rows"),
            },
        ),
    ]
}
PROBLEMS.update(
    (real.name, Problem(real.name, "fixed", real.description, real.make, opt_in=real.opt_in))
    for real in REAL_PROBLEMS
)


def default_problems() -> list[str]:
    """The problems measured when none are named: every one but the opt-in ones.

    >>> "adbench-lstm" in default_problems(), "adbench-lstm" in PROBLEMS
    (False, True)
    """
    return [name for name, problem in PROBLEMS.items() if not problem.opt_in]


def get_problem(name: str) -> Problem:
    """The problem called ``name``, with a clear error for an unknown one.

    >>> get_problem("mlp").family
    'many-inputs'
    """
    try:
        return PROBLEMS[name]
    except KeyError:
        raise ValueError(
            f"unknown problem {name!r}; the problems are {', '.join(PROBLEMS)}"
        ) from None
