"""The replayed modes in the harness, and the report's interpretation section."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.harness.measure import measure_cell
from adcompare.bench.harness.modes import as_matrix, get_mode
from adcompare.bench.problems import get_problem
from adcompare.bench.report.markdown import render
from adcompare.bench.report.replay import interpretation_ratios

from .benchcases import synthetic_cell, synthetic_results


@pytest.mark.parametrize("mode", ["reverse-replay", "forward-replay"])
@pytest.mark.parametrize(("problem", "size"), [("rosenbrock", {"n": 5}), ("fourier", {"m": 4})])
def test_replayed_modes_give_the_eager_jacobian_and_record_once(mode, problem, size):
    inst = get_problem(problem).build(**size)
    work = get_mode(mode).prepare(inst)
    with ad.count() as cost:
        first = work()
    assert sum(cost.ops.values()) > 0  # the first call records f
    with ad.count() as cost:
        again = work()
    assert sum(cost.ops.values()) == 0  # later calls replay: no op through dispatch
    expected = ad.jacfwd(inst.on(ad))(inst.x)
    np.testing.assert_allclose(as_matrix(first, inst), as_matrix(expected, inst), rtol=1e-12)
    np.testing.assert_array_equal(as_matrix(again, inst), as_matrix(first, inst))


def test_a_replayed_cell_passes_its_derivative_check():
    cell = measure_cell(
        get_problem("logistic").build(n=6), get_mode("reverse-replay"), repeats=1, memory=False
    )
    assert cell["check"]["ok"] and cell["counts"] is None
    assert cell["time"]["warmup"] > 0


def _with_replays(eager_reverse=1e-3, replayed_reverse=2e-4):
    # forward 1e-4·n, replayed 1e-5·n: the eager crossover at n = 10, the replayed at 20.
    results = synthetic_results(forward_per_input=1e-4, reverse_time=eager_reverse)
    for n in (4, 16, 64, 256):
        for mode, seconds in (
            ("forward", 1e-4 * n),
            ("forward-replay", 1e-5 * n),
            ("reverse-replay", replayed_reverse),
        ):
            results.add(
                synthetic_cell("rosenbrock", "many-inputs", mode, {"n": n}, n, 1, seconds, n)
            )
    return results


def test_the_report_says_how_much_time_was_interpretation_and_where_modes_cross():
    results = _with_replays()
    ratios = interpretation_ratios(results, "rosenbrock", "reverse")
    assert ratios == {(n, 1): pytest.approx(5.0) for n in (4, 16, 64, 256)}
    text = render(results)
    assert "## Interpretation: eager time ÷ replayed time" in text
    assert (
        "| rosenbrock | 5× (n=4, m=1) → 5× (n=256, m=1) | 10× (n=4, m=1) → 10× (n=256, m=1) |"
        in text
    )
    assert (
        "| rosenbrock | reverse beats forward | from n ≈ 10 (between 4 and 16) | "
        "from n ≈ 20 (between 16 and 64) |" in text
    )
    assert "Interpretation" not in render(synthetic_results())
