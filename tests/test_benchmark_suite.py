"""The pytest-benchmark suite's JSON stays small, and its report folder is git-ignored."""

from __future__ import annotations

import subprocess
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
