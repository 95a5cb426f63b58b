"""The pytest-benchmark suite passes, its JSON stays small, and its report folder is git-ignored."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from benchmarks.conftest import pytest_benchmark_update_json

ROOT = Path(__file__).resolve().parent.parent


class Options:
    def __init__(self, save_data: bool):
        self.save_data = save_data

    def getoption(self, name):
        assert name == "benchmark_save_data"
        return self.save_data


def output(rounds: int) -> dict:
    stats = {"median": 1e-5, "iqr": 1e-6, "rounds": rounds, "data": [1e-5] * rounds}
    return {"machine_info": {}, "benchmarks": [{"name": "test_cost[a]", "stats": stats}]}


def test_the_json_keeps_statistics_not_every_round():
    kept = output(50_000)
    pytest_benchmark_update_json(Options(save_data=False), [], kept)
    assert kept["benchmarks"][0]["stats"] == {"median": 1e-5, "iqr": 1e-6, "rounds": 50_000}
    asked = output(3)
    pytest_benchmark_update_json(Options(save_data=True), [], asked)
    assert asked["benchmarks"][0]["stats"]["data"] == [1e-5] * 3


def test_the_folders_the_readme_writes_into_are_git_ignored():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "--benchmark-json reports/benchmarks/bench.json" in readme
    for path in ("reports/benchmarks/bench.json", "reports/latest/report.md"):
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", path], cwd=ROOT, capture_output=True, check=False
        )
        assert ignored.returncode == 0, f"{path} is not git-ignored"


def test_the_benchmark_suite_passes_with_a_tiny_time_budget():
    """Every benchmark of ``benchmarks/`` runs once, at one size, timed for one round: the
    regular test run does not collect the folder, so this is what keeps it from breaking
    unseen (a mode that cannot take a size must skip with its reason, not fail)."""
    command = [
        *(sys.executable, "-m", "pytest", "benchmarks", "-q", "-p", "no:cacheprovider"),
        *("--benchmark-enable", "--benchmark-max-time=0.0001", "--benchmark-min-rounds=1"),
        *("--benchmark-warmup=off", "--bench-sizes=8", "--targets-small"),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) > 0, done.stdout[-2000:]
