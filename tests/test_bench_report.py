"""The report: every conclusion is computed from the results, partial results included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adcompare.bench.harness.results import Results, load_results
from adcompare.bench.report.analysis import crossover, fit_slope
from adcompare.bench.report.markdown import render, write_report
from adcompare.durations import format_duration

from .benchcases import synthetic_cell, synthetic_results


def test_slopes_and_crossovers_come_from_the_data():
    # forward 1e-4·n against a constant 1e-3: they cross at n = 10.
    text = render(synthetic_results(forward_per_input=1e-4, reverse_time=1e-3))
    assert "| rosenbrock | n | 0.00 (n 64–256) | 1.00 (n 64–256) | 0.00 (n 64–256) |" in text
    assert "| reverse beats forward, 1 lane from n ≈ 10 (between 4 and 16);" in text
    assert text.count("from n ≈ 10 (between 4 and 16)") == 1, "a conclusion is stated once"
    # Other data, other conclusions: nothing is hard-coded.
    text = render(synthetic_results(forward_per_input=1e-6, reverse_time=1e-3))
    assert "from n ≈ 1e+03" not in text
    assert "| reverse beats forward, 1 lane not within n ≤ 256;" in text


def test_the_report_names_the_machine_and_the_measures():
    text = render(synthetic_results())
    assert "## Machine" in text and "machine: test" in text
    assert "## How to read the measurements" in text
    assert "| n | f (numpy) | forward, 1 lane | reverse |" in text
    assert "4 of 4" not in text
    assert "8 of 8 derivative checks passed" in text


def test_a_report_from_partial_results_lists_what_is_missing(tmp_path):
    results = synthetic_results()
    results.add(
        {
            "problem": "rosenbrock",
            "mode": "fd",
            "size": {"n": 1024},
            "status": "skipped",
            "reason": "fd took 3 s at n=256, over the 1 s budget per cell",
        }
    )
    results.add(
        {
            "problem": "rosenbrock",
            "mode": "forward",
            "size": {"n": 4},
            "status": "error",
            "error": {"type": "MemoryError", "message": "out of memory"},
        }
    )
    failed = synthetic_cell("rosenbrock", "many-inputs", "forward", {"n": 16}, 16, 1, 1e-3, 99)
    failed["check"] = {
        "against": "one reverse sweep uᵀJ",
        "error": 0.5,
        "tolerance": 1e-8,
        "ok": False,
    }
    results.add(failed)
    path = write_report(results, tmp_path)
    text = path.read_text()
    assert "## Skipped cells (1)" in text and "over the 1 s budget" in text
    assert "## Cells that failed (1)" in text and "MemoryError: out of memory" in text
    assert "**failed**: rosenbrock forward, chunked at n = 16" in text
    assert "![rosenbrock: each mode's time per call, its time ÷ plain f's" in text
    assert "](rosenbrock.png)" in text
    assert (tmp_path / "rosenbrock.png").exists()


def test_an_empty_report_says_so():
    assert "No cell was measured" in render(Results())


def test_fit_slope_uses_the_upper_half():
    x = [4, 16, 64, 256, 1024]
    y = [1.0, 1.0, 1.0, 4.0, 16.0]  # overhead first, then linear
    assert fit_slope(x, y).slope == pytest.approx(1.0, abs=0.05)
    assert fit_slope(x, y, upper=False).slope < 0.9


@pytest.mark.parametrize(
    "forward_per_input, kind", [(1e-2, "always"), (1e-4, "at"), (1e-7, "never")]
)
def test_a_crossover_is_at_a_size_or_always_or_never(forward_per_input, kind):
    results = synthetic_results(forward_per_input=forward_per_input, reverse_time=1e-3)
    found = crossover(results, "rosenbrock", "reverse", "forward1")
    assert found.kind == kind
    if kind == "at":
        assert found.value == pytest.approx(10.0)
        assert (found.below, found.above) == (4, 16)


def test_a_pytest_benchmark_reports_machine_section_says_what_is_unknown(tmp_path):
    from adcompare.bench.harness.results import load_any

    machine_info = {  # the keys pytest-benchmark 5 writes
        "node": "ci-box",
        "processor": "x86_64",
        "machine": "x86_64",
        "python_implementation": "CPython",
        "python_version": "3.11.7",
        "release": "6.1.0",
        "system": "Linux",
        "cpu": {"brand_raw": "AMD EPYC", "count": 2, "arch_string_raw": "x86_64"},
    }
    bench = {
        "name": "test_cost[rosenbrock-n8-reverse]",
        "extra_info": {
            "problem": "rosenbrock",
            "family": "many-inputs",
            "mode": "reverse",
            "size": {"n": 8},
            "n": 8,
            "m": 1,
        },
        "stats": {"median": 0.001, "iqr": 0.0001, "min": 0.0009, "max": 0.002, "rounds": 9},
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"machine_info": machine_info, "benchmarks": [bench]}))
    text = render(load_any(path))
    machine = text[text.index("## Machine") : text.index("\n## ", text.index("## Machine") + 1)]
    assert "None" not in machine
    assert "CPU: AMD EPYC, 2 cores (how many were available: unknown)" in machine
    assert "Python 3.11.7; library versions unknown" in machine
    assert "BLAS: unknown; threads: unknown" in machine
    assert "machine: ci-box, Linux" in machine


def test_the_quick_reference_report_is_short_and_keeps_every_median():
    """The committed quick run's report reads in a minute (at most 193 lines, half the
    386 it once had) and still gives every measured (problem, mode, size) median."""
    folder = Path(__file__).resolve().parent.parent / "reports" / "quick"
    results = load_results(folder / "results.json")
    figures = {path.stem: path for path in folder.glob("*.png")}
    text = render(results, figures, sources=["reports/quick/results.json"])
    assert len(text.splitlines()) <= 193
    measured = [c for c in results.cells if c["status"] == "ok" and c.get("time")]
    assert len(measured) > 300
    missing = [
        (c["problem"], c["mode"], c["size"])
        for c in measured
        if format_duration(c["time"]["median"]) not in text
    ]
    assert not missing
    assert all(f"![{stem}" in text or f"({path.name})" in text for stem, path in figures.items())
