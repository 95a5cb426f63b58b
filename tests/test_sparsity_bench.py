"""The sparse sweep, its figures and report, and the ``adcompare sparse`` command."""

from __future__ import annotations

import json

import pytest

from adcompare.bench.sparse.report import crossover, write_sparse_report
from adcompare.bench.sparse.sweep import SPARSE_MODES, run_sparse_sweep
from adcompare.cli import main

TINY = {"arrowhead": (8,), "rosenbrock-hessian": (6,), "bundle-adjustment": ("test",)}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sparse") / "sparse.json"
    run_sparse_sweep(out, problems=list(TINY), sizes=TINY, log=lambda line: None, budget=0.01)
    return out


def test_every_mode_matches_the_dense_derivative_with_one_pass_per_colour(swept):
    results = json.loads(swept.read_text())
    cells = {(c["problem"], c["mode"]): c for c in results["cells"]}
    for (problem, mode), cell in cells.items():
        assert cell["error"] <= 1e-12, (problem, mode)
        if not SPARSE_MODES[mode].dense:
            assert cell["seeds"] + cell["sweeps"] >= cell["colours"]
    arrow = cells["arrowhead", "bidirectional"]
    assert (arrow["seeds"], arrow["sweeps"]) == (2, 1)
    assert cells["arrowhead", "dense-reverse"]["sweeps"] == 8
    assert cells["bundle-adjustment", "sparse-forward"]["seeds"] == 14
    ba = next(r for r in results["colours"] if r["problem"] == "bundle-adjustment")
    assert (ba["nnz"], ba["max_row"]) == (290, 14)


def test_report_and_figures_are_written(swept, tmp_path):
    report = write_sparse_report(swept, tmp_path)
    text = report.read_text()
    assert "## arrowhead" in text and "Crossovers" in text and "asdex" in text
    for name in ("colours", "time", "spy"):
        assert (tmp_path / f"sparse_{name}.png").stat().st_size > 10_000


def test_crossover_needs_every_later_size_to_win():
    cells = [
        {"problem": "p", "n": n, "mode": mode, "time": t}
        for n, mode, t in [
            (4, "dense-forward", 1.0),
            (4, "sparse-forward", 0.5),
            (16, "dense-forward", 1.0),
            (16, "sparse-forward", 2.0),
            (64, "dense-forward", 4.0),
            (64, "sparse-forward", 3.0),
        ]
    ]
    assert crossover({"cells": cells}, "p", "sparse-forward") == "n ≥ 64"
    assert crossover({"cells": cells[:4]}, "p", "sparse-forward") == "never up to n = 16"


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert main(["sparse", "--problems", "nope"]) == 2
    assert main(["sparse", "--report-only", "--out", str(tmp_path)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and "bratu-1d" in errors[0] and "--report-only" in errors[1]
