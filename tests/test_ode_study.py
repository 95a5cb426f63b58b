"""The ODE study: odeint's three methods in the harness, and the page and figure drawn."""

from __future__ import annotations

import numpy as np
import pytest

from adcompare.bench.harness.measure import count_work
from adcompare.bench.harness.modes import expand_modes, get_mode
from adcompare.bench.harness.results import Results
from adcompare.bench.harness.sweep import SweepConfig, run_sweep
from adcompare.bench.ode.study import write_ode_report
from adcompare.bench.problems import get_problem, problems_of
from adcompare.check import finite_differences


def test_the_study_measures_both_problems_registered_like_the_others():
    assert {p.name for p in problems_of("ode")} == {"ode-params", "ode-trajectory"}
    assert expand_modes(["ode"]) == ["ode:tape", "ode:forward", "ode:adjoint"]
    params, trajectory = get_problem("ode-params").build(20), get_problem("ode-trajectory").build(8)
    assert (params.n, params.m, trajectory.n, trajectory.m) == (20, 1, 4, 8)
    rosenbrock = get_problem("rosenbrock").build(4)
    assert "odeint problem" in get_mode("ode:adjoint").unavailable(rosenbrock)


@pytest.mark.parametrize("mode", ["ode:tape", "ode:forward", "ode:adjoint"])
def test_each_mode_matches_finite_differences_and_reports_its_error(mode):
    instance = get_problem("ode-params").build(6)
    work = get_mode(mode).prepare(instance)
    found = np.asarray(work()).reshape(-1)
    expected = finite_differences(instance.on(np))(instance.x).reshape(-1)
    np.testing.assert_allclose(found, expected, rtol=1e-5)
    assert 0 < work.counts["error"] < 1e-6  # against the rtol = 1e-12 reference


def _work_over_plain(mode: str, size: int) -> float:
    instance = get_problem("ode-params").build(size)
    counts = count_work(instance, get_mode(mode), get_mode(mode).prepare(instance))
    plain = count_work(instance, get_mode("f"), get_mode("f").prepare(instance))
    return sum(counts["elements"].values()) / sum(plain["elements"].values())


def test_over_plain_f_the_adjoint_stays_flat_in_n_and_sensitivities_grow():
    forward = [_work_over_plain("ode:forward", n) for n in (6, 20)]
    adjoint = [_work_over_plain("ode:adjoint", n) for n in (6, 20)]
    assert adjoint[1] / adjoint[0] < 1.2
    assert forward[1] / forward[0] > 2.0
    assert adjoint[1] < forward[1]


def test_the_report_draws_every_method(tmp_path):
    results = Results(path=tmp_path / "ode.json")
    config = SweepConfig(
        problems=["ode-params"],
        modes=["f", "ode"],
        sizes=[6],
        repeats=1,
        memory=False,
        budget=600.0,
    )
    run_sweep(config, results)
    page = write_ode_report(tmp_path / "ode.json", tmp_path)
    text = page.read_text()
    assert (tmp_path / "ode.png").stat().st_size > 10_000
    for method in ("tape", "forward", "adjoint"):
        assert f"| 6 | {method} |" in text
