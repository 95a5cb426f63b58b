"""Second-order cells: HVPs and Hessians in every composition, their costs and their report."""

from __future__ import annotations

import numpy as np
import pytest

from adcompare.bench.harness.measure import check_derivative, count_work
from adcompare.bench.harness.modes import MODE_GROUPS, expand_modes, get_mode
from adcompare.bench.harness.results import Results
from adcompare.bench.harness.second_order import HESSIAN_MAX_N, direction
from adcompare.bench.harness.sweep import SweepConfig, plan, run_sweep
from adcompare.bench.problems import get_problem
from adcompare.bench.report import second_order_analysis as second
from adcompare.bench.report.markdown import render
from adcompare.bench.report.plots import figures
from adcompare.transforms import HESSIAN_MODES

from .benchcases import synthetic_cell
from .test_higher_order import rosenbrock_hessian

SECOND_ORDER = MODE_GROUPS["second-order"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_every_second_order_mode_matches_the_hand_derived_hessian(name):
    instance = get_problem("rosenbrock").build(n=6)
    mode = get_mode(name)
    result = mode.prepare(instance)()
    hessian = rosenbrock_hessian(instance.x)
    expected = hessian if name.startswith("hessian:") else hessian @ direction(instance)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    check = check_derivative(instance, mode, result)
    assert check["ok"] and check["error"] < 1e-12
    assert name.split(":")[1] not in check["against"]


def test_a_wrong_hvp_fails_its_check():
    instance = get_problem("mlp").build(n=13)
    check = check_derivative(instance, get_mode("hvp:rev-over-fwd"), np.zeros(instance.n))
    assert not check["ok"] and check["error"] > 1e-3


@pytest.mark.parametrize("composition", ["rev-over-rev", "rev-over-fwd"])
def test_a_hessian_by_an_outer_reverse_mode_sweeps_its_n_rows_as_lanes(composition):
    mode = get_mode(f"hessian:{composition}")
    inner_sweeps = 1 if composition == "rev-over-rev" else 0
    for n in (4, 8):
        instance = get_problem("rosenbrock").build(n=n)
        counted = count_work(instance, mode, mode.prepare(instance))
        # The outer jacrev carries the Hessian's n rows as the lanes of one sweep.
        assert counted["sweeps"] == 1 + inner_sweeps
        assert counted["cotangent_seeds"] == n + inner_sweeps


def test_modes_that_cannot_run_say_why():
    hvp, hessian = get_mode("hvp:fwd-over-rev"), get_mode("hessian:fwd-over-rev")
    assert "m > 1" in hvp.unavailable(get_problem("fourier").build(m=8))
    assert "many-inputs" in hvp.unavailable(get_problem("adbench-gmm-1k").build())
    big = get_problem("logistic").build(n=HESSIAN_MAX_N + 1)
    assert hvp.unavailable(big) is None
    assert f"n ≤ {HESSIAN_MAX_N}" in hessian.unavailable(big)


def test_groups_expand_and_second_order_modes_come_only_at_their_sizes():
    assert expand_modes(["hvp", "hvp:fwd-over-rev", "f"]) == [*MODE_GROUPS["hvp"], "f"]
    with pytest.raises(ValueError, match="the groups hvp, hessian, second-order"):
        get_mode("hvp")
    config = SweepConfig(
        problems=["rosenbrock"], modes=["reverse", "hessian"], sizes=[4, 8], second_order_sizes=[8]
    )
    planned = [(size["n"], mode) for _, size, mode in plan(config)]
    assert planned == [(4, "reverse"), (8, "reverse")] + [(8, m) for m in MODE_GROUPS["hessian"]]


def test_one_hvp_costs_a_constant_multiple_of_one_gradient_except_fwd_over_fwd():
    sizes = [4, 16, 64]
    results = run_sweep(
        SweepConfig(
            problems=["rosenbrock"],
            modes=["reverse", "hvp"],
            sizes=sizes,
            repeats=1,
            min_repeat_time=0.0,
            memory=False,
            # The per-cell time budget predicts from measured times: under load it could
            # skip a cell, and this test is about counts, so no cell may be skipped.
            budget=1e6,
        )
    )
    assert all(c["status"] == "ok" and c["check"]["ok"] for c in results.cells), [
        (c["mode"], c["size"], c.get("reason")) for c in results.cells if c["status"] != "ok"
    ]
    for composition in HESSIAN_MODES:
        n, ratio = second.hvp_ratio(results, "rosenbrock", composition, "work")
        assert list(n) == sizes
        growth = np.polyfit(np.log(n), np.log(ratio), 1)[0]
        if composition == "fwd-over-fwd":
            assert growth > 0.8, ratio  # its inner forward gradient carries n lanes
        else:
            assert abs(growth) < 0.1 and ratio.max() < 8, ratio


def synthetic_second_order() -> Results:
    """rev-over-fwd is the cheapest HVP at every n, by 1.5× over fwd-over-rev."""
    hvp_times = {"fwd-over-rev": 3.0, "rev-over-rev": 4.0, "fwd-over-fwd": 6.0, "rev-over-fwd": 2.0}
    results = Results()
    for n in (4, 64):
        results.add(synthetic_cell("toy", "many-inputs", "reverse", {"n": n}, n, 1, 1.0, 10))
        for composition, seconds in hvp_times.items():
            results.add(
                synthetic_cell(
                    "toy", "many-inputs", f"hvp:{composition}", {"n": n}, n, 1, seconds, 30
                )
            )
            results.add(
                synthetic_cell(
                    "toy",
                    "many-inputs",
                    f"hessian:{composition}",
                    {"n": n},
                    n,
                    1,
                    n * seconds,
                    30 * n,
                )
            )
    return results


def test_the_report_names_the_cheapest_composition_from_the_results():
    results = synthetic_second_order()
    cheapest = second.cheapest_hvps(results, "toy")
    assert [(c.winner, c.runner_up, c.margin, c.slowest, c.spread) for c in cheapest] == [
        ("rev-over-fwd", "fwd-over-rev", 1.5, "fwd-over-fwd", 3.0)
    ] * 2
    text = render(results)
    assert "cheapest HVP composition was rev-over-fwd at 2 of 2 measured" in text
    assert "by 1.5× (median 1.5×)" in text and "up to 3× the cheapest's time" in text
    assert "1.5×–1.5×" not in text, "a range of one value reads as that value"
    assert "rev-over-fwd 1 (about n HVPs)" in text
    assert "| 64 | 1 s | 3 s (3×; 3×) |" in text


def test_the_second_order_figure_is_drawn_only_when_there_are_second_order_cells():
    drawn = figures(synthetic_second_order())
    assert set(drawn) == {"toy", "toy-second-order"}
    titles = [ax.get_title() for ax in drawn["toy-second-order"].axes]
    assert "One HVP ÷ one gradient, by composition" in titles
    assert "toy-second-order" not in figures(Results())
