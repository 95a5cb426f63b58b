"""The results file: schema, atomic saves, clear errors, pytest-benchmark's JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from adcompare.bench.harness.modes import get_mode
from adcompare.bench.harness.results import (
    SCHEMA,
    SCHEMA_VERSION,
    Results,
    ResultsError,
    load_any,
    load_results,
    merge,
)
from adcompare.bench.report.markdown import write_report

from .benchcases import synthetic_cell

ROOT = Path(__file__).resolve().parent.parent


def cell(mode="f", n=4, status="ok"):
    return synthetic_cell("rosenbrock", "many-inputs", mode, {"n": n}, n, 1, 1e-5, 10) | {
        "status": status
    }


def test_results_round_trip_with_their_schema(tmp_path):
    path = tmp_path / "results.json"
    results = Results(path=path)
    results.add_environment("env-test", {"machine": "test"})
    results.add(cell())
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA and data["schema_version"] == SCHEMA_VERSION
    loaded = load_results(path)
    assert loaded.cells == results.cells
    assert loaded.data["environments"] == {"env-test": {"machine": "test"}}


def test_a_cell_with_the_same_identity_replaces_the_old_one(tmp_path):
    results = Results(path=tmp_path / "r.json")
    results.add(cell(status="error"))
    results.add(cell(mode="reverse"))
    results.add(cell(status="ok"))
    assert [(c["mode"], c["status"]) for c in load_results(tmp_path / "r.json").cells] == [
        ("f", "ok"),
        ("reverse", "ok"),
    ]


def test_a_corrupt_file_gets_a_clear_error(tmp_path):
    path = tmp_path / "results.json"
    results = Results(path=path)
    results.add(cell())
    path.write_text(path.read_text()[:-40])
    with pytest.raises(ResultsError, match=r"not valid JSON.*corrupt"):
        load_results(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(ResultsError, match="not a text file"):
        load_results(path)


@pytest.mark.parametrize(
    "content, message",
    [
        ({"hello": "world"}, "not an adcompare results file"),
        ([1, 2, 3], "not an adcompare results file"),
        ({"schema": SCHEMA, "schema_version": SCHEMA_VERSION + 1}, "newer than this adcompare"),
        ({"schema": SCHEMA, "schema_version": "one"}, "not a whole number"),
        ({"schema": SCHEMA, "schema_version": 1, "cells": {}}, "'cells' is missing"),
    ],
)
def test_a_foreign_file_gets_a_clear_error(tmp_path, content, message):
    path = tmp_path / "other.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ResultsError, match=message):
        load_any(path)


MISSING = object()


@pytest.mark.parametrize(
    "corrupt, message",
    [
        ({"mode": MISSING, "size": MISSING}, "lacks 'mode', 'size'"),
        ({"time": MISSING}, "has time None"),
        ({"status": "done"}, "status 'done'"),
        ({"size": {"n": "64"}}, "size"),
        ({"size": {"n": True}}, "size"),
        ({"n": None}, "n = None"),
        ({"time": {"median": "0.1"}}, "median time '0.1'"),
        ({"time": {"median": 0}}, "median time 0"),
        ({"time": {"median": -1e-3}}, "median time -0.001"),
        ({"time": {"median": float("inf")}}, "median time inf"),
        ({"time": {"median": float("nan")}}, "median time nan"),
        ({"time": [1e-3]}, "has time [0.001]"),
        ({"problem": "a\nb"}, "control characters"),
        ({"check": {"ok": "yes"}}, "check"),
        ({"counts": {"elements": {"numpy": "many"}}}, "counts.elements"),
        ({"counts": {"elements": 0}}, "counts.elements 0; expected counts by name"),
    ],
)
def test_a_cell_that_does_not_fit_the_schema_is_left_out_by_name(tmp_path, corrupt, message):
    path = tmp_path / "results.json"
    results = Results(path=path)
    for n in (2, 4, 8):
        results.add(cell(n=n))
    results.close()
    data = json.loads(path.read_text())
    data["cells"][1].update(corrupt)
    data["cells"][1] = {k: v for k, v in data["cells"][1].items() if v is not MISSING}
    path.write_text(json.dumps(data))
    for loaded in (load_results(path), load_any(path)):
        assert [c["n"] for c in loaded.cells] == [2, 8]
        (sentence,) = loaded.rejected
        assert "cell 1" in sentence and message in sentence and "left out" in sentence


def test_a_missing_file_says_so(tmp_path):
    with pytest.raises(ResultsError, match="no such file"):
        load_results(tmp_path / "nope.json")


def test_merge_keeps_the_later_cell_and_every_environment():
    first, second = Results(), Results()
    first.add_environment("env-a", {})
    second.add_environment("env-b", {})
    first.add(cell(status="error"))
    second.add(cell())
    merged = merge([first, second])
    assert [c["status"] for c in merged.cells] == ["ok"]
    assert set(merged.data["environments"]) == {"env-a", "env-b"}


def pytest_benchmark_json(benchmarks):
    return {
        "machine_info": {"node": "box", "cpu": {"brand_raw": "cpu", "count": 2}},
        "commit_info": {},
        "benchmarks": benchmarks,
        "datetime": "2025-01-01T00:00:00",
        "version": "5.1.0",
    }


def test_pytest_benchmark_json_becomes_cells(tmp_path):
    bench = {
        "name": "test_cost[rosenbrock-n8-reverse]",
        "fullname": "benchmarks/test_cost.py::test_cost[rosenbrock-n8-reverse]",
        "extra_info": {
            "problem": "rosenbrock",
            "family": "many-inputs",
            "mode": "reverse",
            "size": {"n": 8},
            "n": 8,
            "m": 1,
            "counts": {"elements": {"numpy": 40}},
        },
        "stats": {"median": 0.001, "iqr": 0.0001, "min": 0.0009, "max": 0.002, "rounds": 9},
    }
    other = {"name": "test_other", "extra_info": {}, "stats": {"median": 1.0}}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(pytest_benchmark_json([bench, other])))
    (converted,) = load_any(path).cells
    assert converted["time"]["median"] == 0.001 and converted["n"] == 8
    assert converted["counts"]["elements"]["numpy"] == 40
    assert converted["source"].startswith("pytest-benchmark")

    path.write_text(json.dumps(pytest_benchmark_json([other])))
    with pytest.raises(ResultsError, match="extra_info"):
        load_any(path)


def test_the_benchmarks_suite_writes_json_that_reports(tmp_path):
    out = tmp_path / "bench.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "benchmarks",
        "-q",
        "-p",
        "no:cacheprovider",
        "--benchmark-enable",
        f"--benchmark-json={out}",
        "--benchmark-max-time=0.0001",
        "--benchmark-min-rounds=1",
        "--benchmark-warmup=off",
        "--bench-sizes=2,4",
        "-k",
        "rosenbrock or tanh_map",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = load_any(out)
    modes = {c["mode"] for c in results.cells if c["problem"] == "rosenbrock"}
    assert {"f", "forward1", "forward", "reverse", "fd"} <= modes
    # A replay applies no op through the dispatch, so its counts are not taken (as in the sweep).
    for measured in results.cells:
        counted = get_mode(measured["mode"]).counted
        assert bool(measured["counts"] and measured["counts"]["elements"]) == counted, measured
    assert all(c["memory"]["peak_bytes"] > 0 for c in results.cells)
    report = write_report(results, tmp_path / "report", sources=[str(out)])
    text = report.read_text()
    assert "## rosenbrock" in text and "reverse beats forward, 1 lane" in text
    assert (tmp_path / "report" / "rosenbrock.png").exists()


def test_the_regular_test_run_does_not_collect_the_benchmarks():
    settings = (ROOT / "pyproject.toml").read_text()
    (testpaths,) = [line for line in settings.splitlines() if line.startswith("testpaths")]
    (addopts,) = [line for line in settings.splitlines() if line.startswith("addopts")]
    assert "benchmarks" not in testpaths and "--benchmark-disable" in addopts
