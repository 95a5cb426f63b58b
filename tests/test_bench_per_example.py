"""The per_example bench problem: per-example gradients three ways, swept over the batch."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.harness.modes import expand_modes, get_mode
from adcompare.bench.harness.sweep import SweepConfig, run_sweep
from adcompare.bench.problems import default_problems, get_problem
from adcompare.bench.problems.per_example import example_loss


@pytest.mark.parametrize("mode", ["per-example:loop", "per-example:vmap", "forward", "reverse"])
def test_every_way_gives_the_per_example_gradients(mode):
    instance = get_problem("per_example").build(m=5)
    got = np.asarray(get_mode(mode).prepare(instance)()).reshape(instance.m, instance.n)
    inputs, targets = instance.f.examples
    for i in range(instance.m):
        want = ad.grad(lambda w, i=i: example_loss(ad, w, inputs[i], targets[i]))(instance.x)
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-14)
    mean_loss_gradient = ad.grad(lambda w: ad.mean(instance.f(ad, w)))(instance.x)
    np.testing.assert_allclose(got.mean(axis=0), mean_loss_gradient, rtol=0, atol=1e-12)


def test_vmap_does_a_constant_number_of_ops_while_the_loop_grows_with_the_batch():
    def ops(mode, m):
        work = get_mode(mode).prepare(get_problem("per_example").build(m=m))
        with ad.count() as cost:
            work()
        return cost.ops["numpy"]

    assert ops("per-example:vmap", 4) == ops("per-example:vmap", 64)
    assert ops("per-example:loop", 64) == 16 * ops("per-example:loop", 4)


def test_the_problem_is_opt_in_and_its_modes_need_examples():
    assert "per_example" not in default_problems()
    assert expand_modes(["per-example"]) == [
        "per-example:loop",
        "per-example:vmap",
        "forward",
        "reverse",
    ]
    reason = get_mode("per-example:vmap").unavailable(get_problem("rosenbrock").build(n=4))
    assert "made of examples" in reason


def test_a_sweep_measures_and_checks_every_cell():
    config = SweepConfig(
        problems=["per_example"],
        modes=["per-example"],
        sizes=[2, 8],
        repeats=1,
        budget=5.0,
        memory=False,
    )
    results = run_sweep(config)
    assert {c["status"] for c in results.cells} == {"ok"}
    assert all(c["check"]["ok"] for c in results.cells)
    assert {c["mode"] for c in results.cells} == set(expand_modes(["per-example"]))
