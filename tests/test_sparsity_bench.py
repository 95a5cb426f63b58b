"""The sparse sweep, its figures and report, and the ``adcompare sparse`` command."""

from __future__ import annotations

import json

import pytest

from adcompare.bench.sparse import asdex_peer
from adcompare.bench.sparse.report import crossover, sparse_report, write_sparse_report
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
        if mode in SPARSE_MODES and not SPARSE_MODES[mode].dense:
            assert cell["seeds"] + cell["cotangent_seeds"] >= cell["colours"]
    arrow = cells["arrowhead", "bidirectional"]
    assert (arrow["seeds"], arrow["sweeps"], arrow["cotangent_seeds"]) == (2, 1, 1)
    # Dense reverse mode: the 8 rows as the cotangent lanes of one sweep.
    dense_reverse = cells["arrowhead", "dense-reverse"]
    assert (dense_reverse["sweeps"], dense_reverse["cotangent_seeds"]) == (1, 8)
    assert cells["bundle-adjustment", "sparse-forward"]["seeds"] == 14
    ba = next(r for r in results["colours"] if r["problem"] == "bundle-adjustment")
    assert (ba["nnz"], ba["max_row"]) == (290, 14)


def test_report_and_figures_are_written(swept, tmp_path):
    report = write_sparse_report(swept, tmp_path)
    text = report.read_text()
    assert "## arrowhead" in text and "Crossovers" in text and "asdex" in text
    for name in ("colours", "time", "spy"):
        assert (tmp_path / f"sparse_{name}.png").stat().st_size > 10_000


def test_colour_tables_use_each_modes_default_ordering(swept):
    results = json.loads(swept.read_text())
    arrow = next(r for r in results["colours"] if r["problem"] == "arrowhead")
    assert arrow["defaults"]["forward"] == "saturation-degree"
    assert arrow["counts"]["bidirectional"][arrow["defaults"]["bidirectional"]] == 3
    assert "| 8 | 8 | 8 | 22 | 8 | 8 (8) | 8 (8) | 3 (3)" in sparse_report(results, FIGURES)


FIGURES = {"colours": "c.png", "time": "t.png", "spy": "s.png"}


def test_the_report_says_why_asdex_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(asdex_peer, "missing", lambda: "asdex is not installed: pip install asdex")
    out = tmp_path / "sparse.json"
    results = run_sparse_sweep(
        out, problems=["arrowhead"], sizes={"arrowhead": (4,)}, log=lambda _: None, budget=0.01
    )
    assert results["asdex"] == "asdex is not installed: pip install asdex"
    assert not any(c["mode"].startswith("asdex") for c in results["cells"])
    assert "not in these tables: asdex is not installed" in sparse_report(results, FIGURES)


def test_asdex_is_measured_beside_adcompare_where_installed(tmp_path):
    pytest.importorskip("asdex")
    out = tmp_path / "sparse.json"
    sizes = {"laplacian-2d": (5,), "arrowhead": (6,)}
    results = run_sparse_sweep(
        out, problems=list(sizes), sizes=sizes, log=lambda _: None, budget=0.01
    )
    cells = {(c["problem"], c["mode"]): c for c in results["cells"]}
    assert cells["arrowhead", "asdex"]["error"] <= 1e-12
    colours = {r["problem"]: r for r in results["colours"]}
    assert colours["arrowhead"]["asdex"]["forward"] == 6  # no bicolouring: n
    assert colours["laplacian-2d"]["asdex"]["forward"] > 5  # largest-first


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
