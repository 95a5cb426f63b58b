"""Sweeps: cells written as they finish, interruption and resume, skips, errors."""

from __future__ import annotations

import io
import json

import pytest

from adcompare import symbolic
from adcompare.bench.harness import measure, sweep
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, load_results
from adcompare.bench.harness.sweep import budget_reason, plan, run_sweep, sizes_for
from adcompare.bench.problems import get_problem

from .benchcases import tiny_config


def statuses(results):
    return {
        (c["problem"], c["mode"], tuple(c["size"].values())): c["status"] for c in results.cells
    }


def test_a_sweep_measures_every_cell_with_time_counts_and_check(tmp_path):
    config = tiny_config(memory=True)
    results = run_sweep(config, Results(path=tmp_path / "r.json"))
    assert len(results.cells) == len(plan(config)) == 2 * 2 * 4
    on_disk = load_results(tmp_path / "r.json")
    assert on_disk.cells == results.cells
    for cell in results.cells:
        assert cell["status"] == "ok", cell
        assert cell["time"]["median"] > 0 and cell["time"]["repeats"] >= 1
        assert cell["counts"]["elements"], cell
        assert cell["memory"]["peak_bytes"] >= 0
        assert cell["env"] in results.data["environments"]
        if cell["mode"] != "f":
            assert cell["check"]["ok"], cell
    environment = results.data["environments"][results.cells[0]["env"]]
    assert environment["dtype"] == "float64"
    assert environment["threads"]["blas_pools"][0]["threads"] == 1
    assert environment["versions"]["numpy"]
    assert results.data["runs"][0]["config"]["sizes"] == [2, 4]


def test_cells_are_on_disk_as_soon_as_their_size_finishes(tmp_path, monkeypatch):
    # The modes at one size take their timed repeats in turn, so a size's cells are
    # written together, before the next size begins.
    path = tmp_path / "r.json"
    seen_on_disk = []
    real = measure.measure_cell

    def spy(*args, **kwargs):
        if path.exists():
            seen_on_disk.append(len(json.loads(path.read_text())["cells"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "measure_cell", spy)
    run_sweep(tiny_config(problems=["rosenbrock"], modes=["f", "reverse"]), Results(path=path))
    assert seen_on_disk == [0, 0, 2, 2]


def test_an_interrupted_sweep_keeps_its_cells_and_resumes(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    config = tiny_config()
    calls = []
    real = measure.measure_cell

    def interrupt_on_the_fifth_cell(*args, **kwargs):
        calls.append(args[1].name)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "measure_cell", interrupt_on_the_fifth_cell)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, Results(path=path))
    kept = load_results(path)
    assert len(kept.cells) == 4 and all(c["status"] == "ok" for c in kept.cells)
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"

    monkeypatch.setattr(sweep, "measure_cell", real)
    measured_again = []
    monkeypatch.setattr(
        sweep, "measure_cell", lambda *a, **k: measured_again.append(a[1].name) or real(*a, **k)
    )
    resumed = run_sweep(config, load_results(path))
    assert len(measured_again) == len(plan(config)) - 4
    assert len(resumed.cells) == len(plan(config))
    assert resumed.cells[:4] == kept.cells[:4]
    assert len(resumed.data["runs"]) == 2


def test_a_failing_cell_records_its_error_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from adcompare.bench.harness import modes

    broken = modes.Mode("reverse", "reverse", lambda instance: 1 / 0)
    monkeypatch.setitem(modes.MODES, "reverse", broken)
    results = run_sweep(tiny_config(problems=["rosenbrock"]), Results(path=tmp_path / "r.json"))
    failed = [c for c in results.cells if c["status"] == "error"]
    assert {c["mode"] for c in failed} == {"reverse"} and len(failed) == 2
    assert failed[0]["error"]["type"] == "ZeroDivisionError"
    assert "division by zero" in failed[0]["error"]["message"]
    assert "Traceback" in failed[0]["error"]["traceback"]
    assert sum(c["status"] == "ok" for c in results.cells) == 6

    monkeypatch.setitem(
        modes.MODES, "reverse", modes.Mode("reverse", "reverse", modes._reverse_chunked)
    )
    resumed = run_sweep(tiny_config(problems=["rosenbrock"]), load_results(tmp_path / "r.json"))
    assert all(c["status"] == "ok" for c in resumed.cells), "resume measures failed cells again"


def test_a_symbolic_refusal_is_recorded_as_a_skip_with_its_reason(tmp_path):
    config = tiny_config(problems=["rosenbrock"], modes=["symbolic"])
    with symbolic.size_limit(max_work=10):
        results = run_sweep(config, Results(path=tmp_path / "r.json"))
    cells = results.cells
    assert cells and all(c["status"] == "skipped" for c in cells)
    assert all("exceed the limit of 10" in c["reason"] for c in cells)


def fake_measure(seconds_per_call):
    """A measure_cell whose cells take ``seconds_per_call(n)`` a call, instantly."""

    def measure_cell(instance, mode, **kwargs):
        t = seconds_per_call(instance.n)
        return {"time": {"median": t}, "counts": {}, "memory": {}, "check": None, "seconds": 10 * t}

    return measure_cell


def test_a_mode_over_budget_skips_larger_sizes(monkeypatch):
    monkeypatch.setattr(sweep, "measure_cell", fake_measure(lambda n: 0.1 * n))
    config = tiny_config(problems=["rosenbrock"], modes=["forward1"], sizes=[2, 4, 8], budget=1.5)
    results = run_sweep(config)
    assert [c["status"] for c in results.cells] == ["ok", "skipped", "skipped"]
    assert "over the 1.5 s budget" in results.cells[1]["reason"]
    assert "n=2" in results.cells[1]["reason"]


def test_a_mode_predicted_over_budget_is_skipped(monkeypatch):
    # 0.01 s at n=2, 0.04 s at n=4: slope 2 predicts 0.16 s a call at n=8, and a cell
    # needs at least 4 calls: 0.64 s > 0.5 s.
    monkeypatch.setattr(sweep, "measure_cell", fake_measure(lambda n: 0.0025 * n * n))
    config = tiny_config(problems=["rosenbrock"], modes=["forward1"], sizes=[2, 4, 8], budget=0.5)
    results = run_sweep(config)
    assert [c["status"] for c in results.cells] == ["ok", "ok", "skipped"]
    assert "predicted to take 0.16 s a call" in results.cells[2]["reason"]
    assert "slope 2.00" in results.cells[2]["reason"]


def test_sizes_beyond_a_problems_limit_are_skipped_without_building():
    results = run_sweep(tiny_config(problems=["quadratic"], modes=["f"], sizes=[8192]))
    (cell,) = results.cells
    assert cell["status"] == "skipped" and "4096" in cell["reason"]


def test_budget_looks_along_each_axis_of_a_grid():
    problem = get_problem("tanh_map")
    results = Results()
    for (n, m), t in {(2, 2): 0.01, (2, 4): 0.04}.items():
        results.add(
            {
                "problem": "tanh_map",
                "mode": "reverse",
                "size": {"n": n, "m": m},
                "status": "ok",
                "time": {"median": t},
                "seconds": 0.1,
            }
        )
    assert budget_reason(results, problem, "reverse", {"n": 2, "m": 8}, 0.5) is not None
    assert budget_reason(results, problem, "reverse", {"n": 4, "m": 2}, 0.5) is None


def test_grid_sizes_come_after_both_neighbours():
    order = sizes_for(get_problem("tanh_map"), tiny_config(grid=[2, 4, 8]))
    for i, size in enumerate(order):
        for smaller in (
            {"n": size["n"] // 2, "m": size["m"]},
            {"n": size["n"], "m": size["m"] // 2},
        ):
            if smaller in order:
                assert order.index(smaller) < i


def test_progress_draws_only_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = Progress(2, stream=stream)
        bar.start("rosenbrock f n=2")
        bar.advance("rosenbrock f n=2")
        bar.close()
    assert "1/2 cells" in terminal.getvalue() and "ETA" in terminal.getvalue()
    assert pipe.getvalue() == ""
    quiet = Terminal()
    Progress(2, stream=quiet, quiet=True).advance("x")
    assert quiet.getvalue() == ""


def test_bad_configurations_say_what_is_wrong():
    with pytest.raises(ValueError, match="unknown problem"):
        tiny_config(problems=["nope"])
    with pytest.raises(ValueError, match="unknown mode"):
        tiny_config(modes=["sideways"])
    with pytest.raises(ValueError, match="budget"):
        tiny_config(budget=0)
    with pytest.raises(ValueError, match="sizes"):
        tiny_config(sizes=[0])
