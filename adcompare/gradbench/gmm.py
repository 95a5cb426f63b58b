"""GradBench's ``gmm`` eval: the Gaussian mixture log posterior and its gradient.

The mathematics is :mod:`adcompare.adbench.gmm` under GradBench's convention
(the prior subtracted); this module reads GradBench's input object, picks the
engine and writes the gradient as GradBench's object ``{alpha, mu, q, l}``.
``objective`` is the hand-written numpy form
(:func:`~adcompare.adbench.plain.gmm_objective_numpy`, the fastest primal
adcompare has); ``jacobian`` answers in reverse mode (one sweep), forward mode
(one lane per parameter: 214,500 lanes at d = 64, k = 100, so only the small
workloads finish in time) or replay (:func:`adcompare.compile`, recorded once
per size, in the first call); ``auto`` picks replay but at the largest size
(:func:`_auto`). Workloads are generated (:func:`~adcompare.adbench.generate.generate_gmm`),
at GradBench's default list of sizes with n = 1000 points.

>>> prepared = EVAL.prepare(EVAL.workloads()[0].make())
>>> gradient = EVAL.encode("jacobian", EVAL.functions["jacobian"](prepared, "reverse"))
>>> sorted(gradient), len(gradient["l"]), len(gradient["l"][0])
(['alpha', 'l', 'mu', 'q'], 5, 1)
"""

from __future__ import annotations

import numpy as np

from adcompare.adbench.generate import generate_gmm
from adcompare.adbench.gmm import GMMProblem, gmm_objective
from adcompare.adbench.gmm_format import gmm_input, gradbench_gmm_input
from adcompare.adbench.plain import gmm_objective_numpy
from adcompare.gradbench.evals import Workload
from adcompare.gradbench.inputs import RUNS, flat_gradient, objective_and_jacobian

__all__ = ["EVAL", "SIZES"]

#: GradBench's default (d, k) pairs, in its order; every workload has n = 1000.
SIZES = (
    (2, 5), (2, 10), (2, 25), (10, 5), (2, 50), (10, 10), (20, 5), (32, 5), (2, 100),
    (20, 10), (10, 25), (32, 10), (64, 5), (10, 50), (20, 25), (64, 10), (32, 25),
    (10, 100), (20, 50), (32, 50), (64, 25), (20, 100), (32, 100), (64, 50), (64, 100),
)  # fmt: skip
POINTS = 1000

_REPLAYS: dict = {}


def _prepare(value) -> GMMProblem:
    return GMMProblem(gmm_input(value, "gmm"), "gradbench", name="gmm")


def _objective(problem: GMMProblem, mode: str) -> float:
    return float(gmm_objective_numpy(problem, problem.params))


def _gradient(problem: GMMProblem, mode: str) -> np.ndarray:
    data = problem.data

    def objective(params, x):
        return gmm_objective(*problem.split(params), x, data.gamma, data.m, "gradbench")

    key = (*data.sizes, data.gamma, data.m)
    return flat_gradient(problem, mode, _REPLAYS, key, objective, data.x)


def _jacobian(problem: GMMProblem, mode: str) -> dict:
    """The gradient as GradBench's object of arrays (views of the flat gradient)."""
    d, k, _ = problem.data.sizes
    gradient = _gradient(problem, mode)
    icf = gradient[k + k * d :].reshape(k, -1)
    return {
        "alpha": gradient[:k],
        "mu": gradient[k : k + k * d].reshape(k, d),
        "q": icf[:, :d],
        "l": icf[:, d:],
    }


def _encode(function: str, result):
    if function == "objective":
        return float(result)
    return {name: part.tolist() for name, part in result.items()}


def _workloads() -> tuple[Workload, ...]:
    return tuple(
        Workload(
            f"{d}_{k}_{POINTS}",
            lambda d=d, k=k: {**gradbench_gmm_input(generate_gmm(d, k, POINTS)), **RUNS},
        )
        for d, k in SIZES
    )


def _harness_objective(problem):
    """The objective of the flat parameter vector, as the harness measures it."""
    return problem.objective, (problem.params,)


#: Where ``auto`` turns from replay to reverse: k·d²·n, the size of the products over
#: the points. Below it the recording in the first call is a small part of a second of
#: calls and replay runs 1.3–2.4× the primal against reverse's 2–4×; above it (d = 64,
#: k = 100 alone) the recording takes most of that second.
REPLAY_WORK = 3 * 10**8


def _auto(problem: GMMProblem) -> str:
    """Replay, but reverse where the recording would outweigh the replays.

    >>> _auto(EVAL.prepare(EVAL.workloads()[0].make()))
    'replay'
    """
    d, k, n = problem.data.sizes
    return "replay" if k * d * d * n <= REPLAY_WORK else "reverse"


EVAL = objective_and_jacobian(
    "gmm", _prepare, _objective, _jacobian, _encode, _workloads, _harness_objective, _auto
)
