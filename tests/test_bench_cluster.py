"""The sweep on a Dask cluster: one LocalCluster of two worker processes on 127.0.0.1,
shared by the module, against the serial sweep on the same cells."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from adcompare.bench import problem
from adcompare.bench.harness.cluster import ClusterSpec, connect
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, cell_key, load_results, open_for_writing
from adcompare.bench.harness.sweep import SweepConfig, plan, run_sweep
from adcompare.bench.report import analysis
from adcompare.bench.report.machine import machine_section

NEEDS_DASK = "needs Dask's distributed (pip install -e '.[cluster]'; the dev extra has it)"


def _cumulative(x):
    return np.tanh(np.cumsum(x))[-2:]


def _config(problems, **overrides) -> SweepConfig:
    settings = {
        "modes": ["f", "forward", "reverse"],
        "sizes": [4, 16],
        "repeats": 1,
        "min_repeat_time": 1e-4,
    }
    return SweepConfig(problems=problems, memory=False, **(settings | overrides))


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed", reason=NEEDS_DASK)
    with connect(ClusterSpec(workers=2)) as client:
        yield client


@pytest.fixture
def two_workers(client):
    """The module's client once both workers run (one may restart after the fault test)."""
    client.wait_for_workers(2, timeout=60)
    return client


def _by_key(results: Results) -> dict:
    return {cell_key(cell): cell for cell in results.cells}


def test_cluster_cells_equal_serial_cells(two_workers):
    # A user's closure, from a module no installed package provides: pickled by value.
    mine = problem(lambda x: _cumulative(x) * 2.0, name="mine-on-workers")
    config = _config(["rosenbrock", "fourier", mine])
    clustered = _by_key(run_sweep(config, client=two_workers))
    serial = _by_key(run_sweep(config))
    assert set(clustered) == set(serial) == {cell_key(c) for c in _plan_cells(config)}
    for key, cell in serial.items():
        there = clustered[key]
        assert there["status"] == cell["status"] == "ok", key
        assert there["counts"] == cell["counts"], key
        assert (there["n"], there["m"]) == (cell["n"], cell["m"])
        if key[1] != "f":
            assert there["check"]["ok"] and cell["check"]["ok"], key
        assert there["worker"]["address"].startswith("tcp://127.0.0.1:")


def _plan_cells(config: SweepConfig) -> list[dict]:
    return [{"problem": p.name, "mode": mode, "size": size} for p, size, mode in plan(config)]


def test_each_cell_records_its_workers_machine(two_workers):
    results = run_sweep(_config(["fourier"], sizes=[4]), client=two_workers)
    machines = {cell["env"] for cell in results.cells}
    (env,) = machines
    description = results.data["environments"][env]
    assert description["machine"] and description["cpu"]
    assert description["cpus_total"] >= 1
    assert {pool["threads"] for pool in description["threads"]["blas_pools"]} <= {1}
    assert description["allocator"]["pinned"] is True
    assert results.data["runs"][-1]["config"]["cluster"]["workers"] == 2


def _slow(name: str, seconds: float):
    def inputs(n):
        time.sleep(seconds)
        return np.linspace(0.1, 1.0, n)

    return problem(lambda x: np.sum(np.sin(x)), name=name, inputs=inputs)


def _overlapping(results: Results) -> set[str]:
    spans = {c["problem"]: c["worker"]["measuring"] for c in results.cells}
    return {
        name
        for name, (start, end) in spans.items()
        for other, (o_start, o_end) in spans.items()
        if other != name and o_start < end and start < o_end
    }


@pytest.mark.parametrize("per_host", [1, 0])
def test_one_worker_per_machine_measures_at_a_time(two_workers, per_host):
    slow = [_slow(f"slow-{i}", 0.25) for i in range(4)]
    config = _config(slow, modes=["f"], sizes=[4], per_host=per_host)
    results = run_sweep(config, client=two_workers)
    overlapping = _overlapping(results)
    assert bool(overlapping) == (per_host == 0)
    for cell in results.cells:
        # A cell is flagged exactly when its span met another's, naming each it met.
        met = {
            other["problem"]
            for other in results.cells
            if other is not cell and _overlapping(Results(_with_cells(cell, other)))
        }
        assert analysis.flagged(cell) == bool(met)
        assert all("on the same machine" in flag for flag in cell.get("flags", []))
        assert {p for p in met if any(p in flag for flag in cell.get("flags", []))} == met


def _with_cells(*cells: dict) -> dict:
    return {"schema": "", "schema_version": 1, "runs": [], "environments": {}, "cells": list(cells)}


def _killer(marker: Path):
    """f that kills its worker process the first time it runs anywhere, noting each pid."""

    def f(x):
        with open(marker, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
        if len(marker.read_text().split()) == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return _cumulative(x)

    return problem(f, name="killer")


def test_a_cell_killed_with_its_worker_is_rerun_elsewhere(two_workers, tmp_path):
    marker = tmp_path / "pids"
    path = tmp_path / "results.json"
    config = _config([_killer(marker)], sizes=[4])
    results = open_for_writing(path, resume=False, overwrite=False)
    try:
        run_sweep(config, results, client=two_workers)
    finally:
        results.close()
    pids = [int(p) for p in marker.read_text().split()]
    killed, rerun = pids[0], set(pids[1:])
    assert rerun and killed not in rerun and os.getpid() not in pids
    saved = load_results(path)
    assert saved.rejected == []
    assert not list(tmp_path.glob("results.json.*.tmp"))
    serial = _by_key(run_sweep(config))
    assert set(_by_key(saved)) == set(serial)
    for key, cell in _by_key(saved).items():
        assert cell["status"] == "ok" and cell["counts"] == serial[key]["counts"]


class _CtrlC(Progress):
    """Ctrl-C on the client as the first finished cell is written."""

    def advance(self, label, *, measured=True, group=None):
        super().advance(label, measured=measured, group=group)
        raise KeyboardInterrupt


def test_ctrl_c_keeps_finished_cells_and_resume_continues(two_workers, tmp_path):
    path = tmp_path / "results.json"
    config = _config(["rosenbrock", "fourier"])
    results = open_for_writing(path, resume=False, overwrite=False)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, results, progress=_CtrlC(8, quiet=True), client=two_workers)
    results.close()
    kept = load_results(path)
    assert len(kept) == 1 and kept.rejected == []
    (first,) = kept.cells
    resumed = open_for_writing(path, resume=True, overwrite=False)
    try:
        run_sweep(config, resumed, client=two_workers)
    finally:
        resumed.close()
    final = _by_key(load_results(path))
    assert set(final) == {cell_key(c) for c in _plan_cells(config)}
    assert final[cell_key(first)] == first
    assert all(cell["status"] == "ok" for cell in final.values())


WITHOUT_DASK = """
import sys
from adcompare.cli import main
tiny = ["--problems", "fourier", "--modes", "f", "--sizes", "4", "--repeats", "1",
        "--no-memory", "--quiet"]
assert main(["bench", *tiny, "--out", sys.argv[1] + "/serial.json"]) == 0
print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
sys.modules["distributed"] = None  # as if it were not installed
print(main(["bench", *tiny, "--workers", "2", "--out", sys.argv[1] + "/cluster.json"]))
"""


def test_runs_without_dask_and_says_how_to_install_it(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_DASK, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported, status = done.stdout.split()[-2:]
    assert (imported, status) == ("[]", "2"), done.stderr
    (sentence,) = [line for line in done.stderr.splitlines() if "distributed" in line]
    assert sentence.endswith('pip install -e ".[cluster]"')
    assert not (tmp_path / "cluster.json").exists()


def test_the_report_compares_times_within_one_machine():
    # rosenbrock at n = 4, 16 on a machine twice as fast as the one that measured n = 64;
    # on each, reverse takes 3× f's time.
    results = Results()
    results.add_environment("env-fast", {"machine": "fast"})
    results.add_environment("env-slow", {"machine": "slow"})
    for n, env, f_time in ((4, "env-fast", 1.0), (16, "env-fast", 4.0), (64, "env-slow", 32.0)):
        for mode, factor in (("f", 1.0), ("reverse", 3.0)):
            results.add(
                {
                    "problem": "rosenbrock",
                    "family": "many-inputs",
                    "mode": mode,
                    "n": n,
                    "m": 1,
                    "size": {"n": n},
                    "status": "ok",
                    "env": env,
                    "time": {"median": f_time * factor},
                }
            )
    x, ratio = analysis.series(results, "rosenbrock", "reverse", relative=True)
    assert x.tolist() == [4, 16, 64] and ratio.tolist() == [3.0, 3.0, 3.0]
    x, seconds = analysis.series(results, "rosenbrock", "reverse")
    assert x.tolist() == [4, 16] and seconds.tolist() == [3.0, 12.0]
    text = "\n".join(machine_section(results))
    assert "2 machines (fast, slow)" in text and "rosenbrock: fast (also slow)" in text
