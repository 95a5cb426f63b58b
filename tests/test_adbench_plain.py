"""The hand-written numpy objectives equal the op-set objectives they stand in for."""

from __future__ import annotations

import numpy as np
import pytest

from adcompare import adbench
from adcompare.adbench.gmm_format import GMMData
from adcompare.adbench.plain import plain_objective


def _op_set(problem):
    return problem.residuals if isinstance(problem, adbench.BAProblem) else problem.objective


@pytest.mark.parametrize("name", sorted(adbench.BUNDLED))
def test_each_bundled_objective_equals_its_plain_numpy_form(name):
    problem = adbench.bundled(name)
    rng = np.random.default_rng(0)
    for x in (problem.params, problem.params + 0.05 * rng.standard_normal(problem.n_params)):
        np.testing.assert_allclose(
            plain_objective(problem)(x), _op_set(problem)(x), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("convention", ["adbench", "gradbench"])
def test_a_four_dimensional_mixture_fills_its_triangles_alike(convention):
    # D = 4: six lower entries per component, whose column-by-column order matters.
    rng = np.random.default_rng(1)
    k, d = 3, 4
    data = GMMData(
        alpha=rng.standard_normal(k),
        mu=rng.standard_normal((k, d)),
        icf=0.3 * rng.standard_normal((k, d + d * (d - 1) // 2)),
        x=rng.standard_normal((20, d)),
        gamma=1.5,
        m=2,
    )
    problem = adbench.GMMProblem(data, convention)
    np.testing.assert_allclose(
        plain_objective(problem)(problem.params), problem.objective(problem.params), rtol=1e-12
    )
    swapped = problem.params.copy()
    swapped[-1], swapped[-2] = swapped[-2] + 1.0, swapped[-1]
    assert abs(plain_objective(problem)(swapped) - problem.objective(swapped)) < 1e-9


def test_a_problem_without_a_plain_form_is_refused():
    with pytest.raises(TypeError, match="no plain-numpy objective for a str"):
        plain_objective("gmm")


def test_plain_f_of_a_real_problem_runs_no_op_through_the_op_set():
    import adcompare as ad
    from adcompare.bench.problems import PROBLEMS

    inst = PROBLEMS["gradbench-gmm-1k"].build()
    with ad.count() as cost:
        plain = inst.on(np)(inst.x)
    assert sum(cost.ops.values()) == 0
    np.testing.assert_allclose(plain, inst.on(ad)(inst.x), rtol=1e-12)
