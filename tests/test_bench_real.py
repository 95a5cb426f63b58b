"""ADBench and GradBench in the harness: derivative ÷ objective time beside published ratios."""

from __future__ import annotations

import numpy as np

from adcompare import adbench
from adcompare.bench.harness.results import Results
from adcompare.bench.harness.sweep import SweepConfig, budget_reason, preset, run_sweep
from adcompare.bench.problems import PROBLEMS, default_problems, get_problem
from adcompare.bench.problems.real import REAL_PROBLEMS
from adcompare.bench.report.markdown import render
from adcompare.bench.report.published import PUBLISHED, SOURCES, published_for
from adcompare.bench.report.real import derivative_ratios

from .benchcases import synthetic_cell


def test_the_published_table_cites_its_sources_and_names_measured_problems():
    for entry in PUBLISHED:
        assert entry.problem in PROBLEMS and entry.source in SOURCES and entry.ratio > 1
    ratios = [p.ratio for p in published_for("adbench-gmm-1k")]
    assert ratios == sorted(ratios) and len(ratios) == 5


def test_real_problems_are_the_bundled_instances_and_lstm_is_opt_in():
    for real in REAL_PROBLEMS:
        instance = get_problem(real.name).build()
        bundled = adbench.bundled(real.name)
        assert instance.n == bundled.n_params and instance.size == {}
        np.testing.assert_array_equal(instance.x, bundled.params)
    assert "adbench-lstm" not in default_problems()
    assert "adbench-lstm" not in preset("quick").problems
    assert "adbench-lstm" in preset("full").problems


def test_bundle_adjustment_jacobian_by_both_modes_in_the_harness():
    results = run_sweep(
        SweepConfig(
            problems=["adbench-ba-test"],
            modes=["f", "forward", "reverse1", "reverse"],
            repeats=1,
            min_repeat_time=0.0,
            memory=False,
        )
    )
    cells = {c["mode"]: c for c in results.cells}
    assert all(c["status"] == "ok" for c in cells.values())
    assert (cells["reverse"]["n"], cells["reverse"]["m"]) == (62, 30)
    assert cells["reverse1"]["counts"]["sweeps"] == 30  # one sweep per residual
    # or the 30 residuals as the cotangent lanes of one sweep
    assert (
        cells["reverse"]["counts"]["sweeps"],
        cells["reverse"]["counts"]["cotangent_seeds"],
    ) == (
        1,
        30,
    )
    assert 1 <= cells["forward"]["counts"]["passes"] <= 62
    assert all(cells[mode]["check"]["ok"] for mode in ("forward", "reverse1", "reverse"))
    assert set(derivative_ratios(results, "adbench-ba-test")) == {"forward", "reverse1", "reverse"}


def synthetic_gmm(reverse_seconds: float) -> Results:
    results = Results()
    for mode, seconds, ops in (("f", 1.0, 50), ("reverse", reverse_seconds, 150)):
        cell = synthetic_cell("adbench-gmm-1k", "fixed", mode, {}, 30, 1, seconds, 1000)
        cell["counts"].update(ops={"numpy": ops}, tape_records=50, sweeps=1)
        results.add(cell)
    return results


def test_the_report_places_reverse_mode_among_the_published_ratios():
    text = render(synthetic_gmm(5.0))
    assert derivative_ratios(synthetic_gmm(5.0), "adbench-gmm-1k") == {"reverse": 5.0}
    assert (
        "5× the objective's time, 2.66× the fastest published ratio (hand-written, 1.88): "
        "slower than hand-written (1.88), Tapenade (3.74); faster than Theano (6.2), "
        "autograd (22.2), finite differences (~31)."
    ) in text
    assert "150 op applications in all: 3.0× the objective's, each 1.7× as dear" in text
    assert "ADBench paper: hand-written 1.88×" in text
    assert "(5×) |" in text
    assert "adbench-lstm was not measured in this run: it is opt-in" in text


def test_finite_differences_are_skipped_when_plain_f_says_they_cannot_fit():
    results = Results()
    problem = get_problem("adbench-gmm-1k")
    results.add(synthetic_cell(problem.name, "fixed", "f", {}, 30, 1, 0.01, 10))
    reason = budget_reason(results, problem, "fd", {}, budget=1.0)
    assert "at least 60 calls of f" in reason and "0.6 s a call" in reason
    assert budget_reason(results, problem, "fd", {}, budget=10.0) is None
    assert budget_reason(results, problem, "reverse", {}, budget=1.0) is None
