"""Running an eval's workloads, the report beside GradBench's published ratios, and the
evals as harness problems."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import adcompare as ad
from adcompare import bench
from adcompare.bench.problems import ProblemError, get_problem
from adcompare.bench.problems.gradbench import gradbench_problem
from adcompare.cli import main
from adcompare.durations import format_duration
from adcompare.gradbench import Eval, Workload, evals, get_eval, published
from adcompare.gradbench.report import geometric_mean, report_markdown
from adcompare.gradbench.runner import load_results, measure_workload, merge, select_workloads
from tests.shared_data import shared_file


def test_a_run_measures_each_workload_and_the_report_reads_it(tmp_path, capsys):
    command = ["gradbench", "--run", "hello", "--workloads", "4.0", "--out", str(tmp_path)]
    assert main([*command, "--repeat", "2"]) == 0
    records = load_results(tmp_path / "results.json")
    assert [(r["index"], r["workload"], r["repeat"]) for r in records] == [
        (3, "4.0", 0),
        (3, "4.0", 1),
    ]
    assert main(command) == 0  # one run again replaces the first run's record only
    assert len(load_results(tmp_path / "results.json")) == 2
    records = [r for r in load_results(tmp_path / "results.json") if r["repeat"] == 0]
    for r in records:
        assert r["status"] == "ok" and r["runs"] == {"square": 1, "double": 1}
        assert r["ratio"] == r["seconds"]["double"] / r["seconds"]["square"]
        assert 2**20 < r["baseline_bytes"] <= r["peak_bytes"] < 2**32  # MiB of Python and numpy
    runs = (tmp_path / "runs.md").read_text()
    assert runs.count("| hello | reverse | 4.0 (run 1) |") == runs.count("(run 2) |") == 1
    assert main(["gradbench", "--report", "--out", str(tmp_path)]) == 0
    both = sorted(r["ratio"] for r in load_results(tmp_path / "results.json"))
    report = (tmp_path / "report.md").read_text()
    assert f"| hello | reverse | 1 | **{both[0]:.2f}** |" in report  # the lower of the two
    assert (tmp_path / "report.html").exists()
    assert "hello 4.0 (reverse): square" in capsys.readouterr().out


def test_workloads_of_one_description_are_kept_apart(tmp_path):
    # hello's chain starts 1.0, 1.0: two workloads of one description.
    chosen = select_workloads(get_eval("hello"), ["small"])
    assert [(i, w.description) for i, w in chosen] == [(0, "1.0"), (1, "1.0")]
    for index, workload in chosen:
        record = {"eval": "hello", "workload": workload.description, "mode": "reverse"}
        records = merge(tmp_path / "results.json", {**record, "index": index, "status": "ok"})
    assert [r["index"] for r in records] == [0, 1]
    records = merge(tmp_path / "results.json", {**record, "index": 0, "status": "timeout"})
    assert [(r["index"], r["status"]) for r in records] == [(0, "timeout"), (1, "ok")]


def test_a_response_slower_than_the_timeout_stops_its_workload():
    # No Python process starts and answers `start` within a millisecond.
    record = measure_workload("hello", Workload("2.0", lambda: 2.0), "reverse", 0.001)
    assert record["status"] == "timeout"
    assert record["error"] == "start: no response within 0.001 s"
    assert record["seconds"] == {} and "ratio" not in record


def _records(name: str, ratios: dict[str, float]) -> list[dict]:
    return [
        {"eval": name, "workload": w, "index": i, "mode": "reverse", "status": "ok",
         "seconds": {"primal": 1.0, "gradient": ratio}, "ratio": ratio, "peak_bytes": 2**27,
         "spread": {"primal": 0.01 * (i + 1), "gradient": 0.02 * (i + 1)}}
        for i, (w, ratio) in enumerate(ratios.items())
    ]  # fmt: skip


def test_the_report_sets_each_tool_s_ratio_over_the_same_workloads(monkeypatch):
    monkeypatch.setenv("ADCOMPARE_SHARED_DATA", str(shared_file("gradbench").parent))
    data = published.load_published()
    ours = {"n=2500": 2.0, "n=5000": 8.0}
    times = data["evals"]["lse"]["tools"]["manual"]["workloads"]
    manual = math.sqrt(
        math.prod(times[w]["derivative"] / times[w]["primal"] for w in ("n=2500", "n=5000"))
    )
    report = report_markdown(_records("lse", ours), data)
    row = next(line for line in report.splitlines() if line.startswith("| lse | reverse |"))
    assert row.startswith(f"| lse | reverse | 2 | **4.00** | 1 s | 4 % | – | {manual:.2f} |")
    # Every row of each table has as many cells as its header.
    for table in report.split("\n\n"):
        rows = [line for line in table.splitlines() if line.startswith("|")]
        assert len({line.count(" | ") for line in rows if not line.startswith("|---")}) <= 1
    assert "GradBench nightly of 2026-03-14" in report


def test_several_runs_give_each_workload_its_median_run_and_their_range():
    runs = [{"n=2500": 2.0, "n=5000": 4.0}, {"n=2500": 8.0, "n=5000": 4.0}, {"n=2500": 3.0,
            "n=5000": 5.0}]  # fmt: skip
    records = [
        {**r, "repeat": k, "seconds": {"primal": 1.0 + k, "gradient": r["ratio"] * (1.0 + k)}}
        for k, ratios in enumerate(runs)
        for r in _records("lse", ratios)
    ]
    row = next(line for line in report_markdown(records, None).splitlines() if "| lse |" in line)
    # Medians 3.0 (run 2: primal 3 s) and 4.0 (the middle of runs 0, 1 and 2 sorted by
    # ratio, 4.0, 4.0, 5.0: run 1, primal 2 s); ranges (8 − 2)/3 and (5 − 4)/4.
    primal = format_duration(math.sqrt(3.0 * 2.0))
    assert row.startswith(f"| lse | reverse | 2 | **{math.sqrt(12):.2f}** | {primal} |")
    assert "| 200 % (3 runs) |" in row


def test_the_standing_takes_the_best_mode_over_the_workloads_each_tool_ran(monkeypatch):
    monkeypatch.setenv("ADCOMPARE_SHARED_DATA", str(shared_file("gradbench").parent))
    data = published.load_published()
    # PyTorch published ba for two of its fourteen workloads: the standing compares there.
    names = list(data["evals"]["ba"]["tools"]["manual"]["workloads"])
    pytorch = published.published_ratios(data["evals"]["ba"], "pytorch")
    assert 0 < len(pytorch) < len(names)
    reverse = dict.fromkeys(names, 3.0)
    forward = {w: (1.5 if w in pytorch else 100.0) for w in names}
    records = _records("ba", reverse) + [{**r, "mode": "forward"} for r in _records("ba", forward)]
    rows = {
        tuple(line.split(" | ")[1:3]): line
        for line in report_markdown(records, data).splitlines()
        if line.startswith("| ba | ")
    }
    theirs = geometric_mean(pytorch.values())
    # Our primal took 1 s and forward mode's Jacobian 1.5 s on each of PyTorch's workloads.
    times = published.published_times(data["evals"]["ba"], "pytorch").values()
    slower = [geometric_mean(t[1] / 1.5 for t in times), geometric_mean(t[0] for t in times)]
    assert rows[("pytorch", f"{len(pytorch)}")].endswith(
        f"| {theirs:.2f} | forward | **1.50** | {'yes' if theirs > 1.5 else 'no'} "
        f"| {slower[0]:.3g}× | {slower[1]:.3g}× |"
    )
    manual = geometric_mean(published.published_ratios(data["evals"]["ba"], "manual").values())
    verdict = "yes" if manual > 3.0 else f"no: {3.0 / manual:.2f}× theirs"
    assert f"| reverse | **3.00** | {verdict} |" in rows[("manual", f"{len(names)}")]


def test_without_the_published_file_the_report_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPARE_SHARED_DATA", str(tmp_path))
    with pytest.raises(published.PublishedUnavailableError) as raised:
        published.load_published()
    assert str(tmp_path / "gradbench" / "published.json") in str(raised.value)
    report = report_markdown(_records("lse", {"n=2500": 3.0}), None, str(raised.value))
    assert f"unavailable: GradBench's published timings are not at {tmp_path}" in report
    assert "| lse | reverse | 1 | **3.00** | 1 s | 2 % | – | n/a |" in report
    assert "## Standing" not in report


def test_an_eval_is_a_harness_problem_measured_by_each_mode(tmp_path):
    problem = get_problem("gradbench-hello")
    instance = problem.build()
    x = float(instance.x[0])
    assert x == float(get_eval("hello").workloads()[0].make())
    results = bench.measure(problem, modes=["reverse", "forward"], out=None, repeats=1)
    cells = {cell["mode"]: cell for cell in results.cells}
    assert set(cells) == {"reverse", "forward"}
    assert all(c["status"] == "ok" and c["check"]["ok"] for c in cells.values()), cells


def test_an_eval_without_an_objective_refuses_to_build(monkeypatch):
    stub = Eval("stub", float, {"rr": lambda x, mode: x}, lambda f, r: r)
    monkeypatch.setattr("adcompare.bench.problems.gradbench.get_eval", lambda name: stub)
    with pytest.raises(ProblemError, match="gives no objective"):
        gradbench_problem("stub").build()


def test_an_eval_s_objective_is_what_its_derivative_differentiates(monkeypatch):
    # A stub eval whose objective is Σ sin: the problem's point is the workload's input,
    # and its value the objective there.
    point = [0.5, -1.0, 2.0]
    stub = Eval(
        "stub",
        prepare=lambda value: np.asarray(value["x"]),
        functions={},
        encode=lambda f, r: r,
        workloads=lambda: (Workload("n=3", lambda: {"x": point}),),
        objective=lambda x: (lambda v: np.sum(np.sin(v)), (x,)),
    )
    monkeypatch.setattr("adcompare.bench.problems.gradbench.get_eval", lambda name: stub)
    instance = gradbench_problem("stub").build()
    assert instance.x.tolist() == point and instance.m == 1
    assert float(instance.f(np, instance.x)) == pytest.approx(sum(map(math.sin, point)))
    assert json.dumps(evals.EVAL_NAMES)  # the registry is untouched by the stub


def test_a_nested_eval_is_reported_per_variant_beside_each_tool_s_time(monkeypatch):
    monkeypatch.setenv("ADCOMPARE_SHARED_DATA", str(shared_file("gradbench").parent))
    data = published.load_published()
    record = {"eval": "particle", "workload": "w=0", "index": 0, "mode": "auto", "status": "ok"}
    record.update(seconds={"rr": 0.5, "ff": 0.25}, peak_bytes=2**27)
    report = report_markdown([record], data)
    rows = [line for line in report.splitlines() if line.startswith("| particle | ")]
    variants = data["evals"]["particle"]["tools"]["enzyme"]["variants"]
    assert rows[0].startswith("| particle | rr | 500 ms | ")
    assert format_duration(variants["rr"]) in rows[0].split(" | ")[4]
    haskell = data["evals"]["particle"]["tools"]["haskell"]["variants"]["rr"]
    assert rows[0].endswith(f" | {format_duration(haskell)} | {0.5 / haskell:.2f} |")
    assert "## Classic evals" not in report


def test_run_all_leaves_out_an_eval_without_the_mode_and_naming_it_is_refused(monkeypatch, capsys):
    from adcompare.cli import gradbench as command

    stub = Eval("stub", float, {"f": None, "df": None}, None, "f", "df", modes=("reverse",))
    monkeypatch.setattr(command, "implemented", lambda: ("stub",))
    monkeypatch.setattr(command, "get_eval", lambda name: stub)
    assert command._plan(["all"], "forward", ["small"]) == []
    assert "stub: left out, it answers in reverse" in capsys.readouterr().err
    with pytest.raises(ValueError, match="answers in modes reverse, not forward; pick one"):
        command._plan(["stub"], "forward", ["small"])
    assert command._plan(["stub"], "auto", ["all"]) == [("stub", "reverse", [])]


#: The classic evals whose derivative is the gradient of their objective.
GRADIENT_EVALS = ("lse", "llsq", "det", "ode")


@pytest.mark.parametrize("name", [n for n in evals.EVAL_NAMES if n not in ("particle", "saddle")])
def test_each_classic_eval_s_objective_is_its_primal_and_its_derivative_s_function(name):
    # The harness measures an eval through its objective: at the first workload, the
    # objective's value is the eval's own primal, and (for the gradient evals) reverse
    # mode's gradient of it is the eval's derivative.
    if name not in evals.implemented():
        pytest.skip(f"the {name} eval is not in this branch")
    ev = evals.get_eval(name)
    prepared = ev.prepare(ev.workloads()[0].make())
    instance = gradbench_problem(name).build()
    value = ev.encode(ev.primal, ev.functions[ev.primal](prepared, "reverse"))
    if name == "ba":  # one observation's residuals; the eval sends one of the p copies
        value = [*value["reproj_error"]["elements"], value["w_err"]["element"]]
    value = np.ravel(value)
    if name == "ode":  # the primal is y(2); the gradient is the last element's
        value = value[-1:]
    assert np.allclose(np.ravel(instance.f(np, instance.x)), value, rtol=1e-12, atol=0)
    if name in GRADIENT_EVALS:
        expected = ev.functions[ev.derivative](prepared, "reverse")
        gradient = ad.grad(instance.on(ad))(instance.x)
        assert np.allclose(gradient, expected, rtol=1e-10, atol=1e-300)


def test_a_workload_s_peak_memory_is_its_server_s_not_the_runner_s():
    # Linux's ru_maxrss of a child counts its parent's size at the fork: a runner grown
    # by the inputs it built must not make a small workload look as large.
    ballast = np.ones(2**29 // 8)  # 512 MiB of touched pages in the runner
    workload = get_eval("hello").workloads()[0]
    record = measure_workload("hello", workload, "reverse", timeout=120)
    assert record["status"] == "ok"
    assert record["baseline_bytes"] <= record["peak_bytes"] < ballast.nbytes // 2
