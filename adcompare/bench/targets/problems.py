"""The problems of the performance targets, each written once against ``xp``.

- :func:`chain`: a fixed pattern of elementwise ops on a size-1 array, the
  per-op overhead of an engine with nothing else to hide it;
- Rosenbrock (:data:`~adcompare.bench.problems.PROBLEMS`) with its
  gradient written by hand, :func:`rosenbrock_gradient`;
- the MLP loss, :mod:`~adcompare.bench.problems.mlp`;
- GradBench's GMM (:func:`gmm`) and ADBench's LSTM (:func:`lstm`, on the first
  ``characters`` of its sequence), whose plain f is their hand-written numpy form.

Each is a problem defined by :func:`~adcompare.bench.problems.problem`, as
every problem is, built into an :class:`~adcompare.bench.problems.Instance`,
so adcompare's modes and the peers' run them alike.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from adcompare import adbench
from adcompare.bench.problems import Instance, get_problem, problem
from adcompare.bench.problems.real import problem_function

__all__ = [
    "CHAIN_PATTERN",
    "GMM",
    "LSTM",
    "chain",
    "gmm",
    "lstm",
    "rosenbrock",
    "rosenbrock_gradient",
]

#: The GMM instance of the targets, a problem of :data:`~adcompare.bench.problems.PROBLEMS`.
GMM = "gradbench-gmm-1k"
#: The LSTM instance of the targets, a problem of :data:`~adcompare.bench.problems.PROBLEMS`.
LSTM = "adbench-lstm"

#: The chain's ops, repeated in this order: each bounded, so 200 of them stay finite.
CHAIN_PATTERN = ("sin", "mul", "cos", "add", "tanh", "exp")

_STEPS = {
    "sin": lambda xp, y, x: xp.sin(y),
    "cos": lambda xp, y, x: xp.cos(y),
    "tanh": lambda xp, y, x: xp.tanh(y),
    "exp": lambda xp, y, x: xp.exp(y),
    "mul": lambda xp, y, x: y * x,
    "add": lambda xp, y, x: y + x,
}


def chain(ops: int = 200, x: float = 0.5) -> Instance:
    """``ops`` ops on a size-1 array: ``ops − 1`` elementwise ones in the pattern
    :data:`CHAIN_PATTERN` (``mul`` and ``add`` take the input again), then a sum.

    >>> import numpy as np
    >>> inst = chain(3)
    >>> bool(float(inst.on(np)(np.array([0.5]))) == np.sin(0.5) * 0.5)
    True
    """
    if ops < 2:
        raise ValueError(
            f"a chain needs at least 2 ops (one elementwise op and the sum), not {ops}"
        )

    def make(ops: int):
        steps = [_STEPS[CHAIN_PATTERN[i % len(CHAIN_PATTERN)]] for i in range(ops - 1)]

        def f(xp, x):
            y = x
            for step in steps:
                y = step(xp, y, x)
            return xp.sum(y)

        return f, np.array([x])

    chained = problem(
        build=make, name="chain", sweep=("ops",), family="many-inputs", xp=True, studies=()
    )
    return chained.build(ops=ops)


def rosenbrock(n: int) -> Instance:
    """The benchmark's extended Rosenbrock at ``n`` inputs.

    >>> rosenbrock(4).n
    4
    """
    return get_problem("rosenbrock").build(n=n)


def rosenbrock_gradient(x: np.ndarray) -> np.ndarray:
    """The gradient of Σ 100(x_{i+1} − x_i²)² + (1 − x_i)², by hand, in numpy.

    With r_i = x_{i+1} − x_i²: ∂/∂x_i gets −400 x_i r_i − 2(1 − x_i) from term i
    and 200 r_{i−1} from term i − 1.

    >>> print(rosenbrock_gradient(np.array([0.0, 1.0])))
    [ -2. 200.]
    """
    head, tail = x[:-1], x[1:]
    residual = tail - head**2
    gradient = np.zeros_like(x)
    gradient[:-1] = -400.0 * head * residual - 2.0 * (1.0 - head)
    gradient[1:] += 200.0 * residual
    return gradient


def gmm() -> Instance:
    """GradBench's GMM at d = 2, k = 5, n = 1000 (:data:`GMM`): 30 parameters.

    >>> gmm().n, gmm().family
    (30, 'fixed')
    """
    return get_problem(GMM).build()


def lstm(characters: int | None = None) -> Instance:
    """ADBench's LSTM (:data:`LSTM`: 2 layers, 14 bits, 266 parameters) on the first
    ``characters`` of its 1024-character sequence; all of it by default.

    >>> import numpy as np
    >>> short = lstm(3)
    >>> short.n, short.size, bool(abs(short.on(np)(short.x) - short.on(None)(short.x)) < 1e-12)
    (266, {'characters': 3}, True)
    """
    lstm = adbench.bundled(LSTM)
    total = lstm.data.sizes[1]
    characters = total if characters is None else characters
    if not 2 <= characters <= total:
        raise ValueError(
            f"the LSTM's loss needs between 2 and {total} characters of its sequence, "
            f"not {characters}"
        )

    def make(characters: int):
        data = dataclasses.replace(lstm.data, sequence=lstm.data.sequence[:characters])
        cut = dataclasses.replace(lstm, data=data, reference=None)  # the full sequence's
        return problem_function(cut), cut.params

    prefix = problem(
        build=make, name=LSTM, sweep=("characters",), family="fixed", xp=True, studies=()
    )
    return prefix.build(characters=characters)
