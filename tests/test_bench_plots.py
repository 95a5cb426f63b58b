"""The figures hold the lines and maps they promise (checked on the figure objects)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import QuadMesh

from adcompare.bench.harness.results import Results
from adcompare.bench.harness.sweep import run_sweep
from adcompare.bench.report import analysis
from adcompare.bench.report.markdown import write_report
from adcompare.bench.report.plots import (
    crossover_figure,
    figures,
    problem_figure,
    save_figures,
    summary_figure,
)

from .benchcases import synthetic_results, tiny_config

MODES = ["f", "forward1", "forward", "reverse"]


@pytest.fixture(scope="module")
def results():
    config = tiny_config(
        problems=["rosenbrock", "fourier", "tanh_map"],
        modes=MODES,
        sizes=[2, 4, 8],
        grid=[2, 4, 8],
        memory=True,
    )
    measured = run_sweep(config)
    # These tests are about what the figures hold; a burst of load on the machine flags
    # cells, which leaves them out of the slope fits (tested in test_bench_load.py).
    for cell in measured.cells:
        cell.pop("flags", None)
    return measured


def labels(ax):
    return ax.get_legend_handles_labels()[1]


def test_a_problem_figure_has_its_four_panels(results):
    figure = problem_figure(results, "rosenbrock")
    time_ax, ratio_ax, work_ax, memory_ax = figure.axes
    assert time_ax.get_xscale() == "log" and time_ax.get_yscale() == "log"
    assert "n, number of inputs" in time_ax.get_xlabel()
    assert "seconds" in time_ax.get_ylabel()
    time_labels = labels(time_ax)
    for label in ("f (numpy)", "forward, 1 lane", "forward, chunked", "reverse"):
        assert any(t.startswith(label + " (slope ") for t in time_labels), time_labels
    assert "f (numpy)" not in labels(ratio_ax)
    assert [
        line.get_ydata()[0] for line in ratio_ax.get_lines() if not line.get_label()[0].isalnum()
    ]
    # Each theory line says for which m it was drawn (issue 30): rosenbrock's m is 1.
    assert any(
        t.startswith("theory, forward, 1 lane: ") and t.endswith("·n·f, m = 1")
        for t in labels(work_ax)
    )
    assert any(
        t.startswith("theory, reverse: ") and t.endswith("·m·f, m = 1") for t in labels(work_ax)
    )
    assert "reverse: tape bytes" in labels(memory_ax)
    assert "rosenbrock" in figure.get_suptitle()


def test_the_plotted_points_are_the_measured_medians(results):
    figure = problem_figure(results, "rosenbrock")
    (line,) = [ln for ln in figure.axes[0].get_lines() if ln.get_label().startswith("reverse")]
    x, y = analysis.series(results, "rosenbrock", "reverse")
    np.testing.assert_array_equal(line.get_xdata(), x)
    np.testing.assert_array_equal(line.get_ydata(), y)
    assert list(x) == [2, 4, 8]


def test_one_input_problems_are_plotted_against_m(results):
    figure = problem_figure(results, "fourier")
    assert "m, number of outputs" in figure.axes[0].get_xlabel()
    assert any(t.endswith("·m·f, n = 1") for t in labels(figure.axes[2]))


def test_the_crossover_map_covers_the_grid_and_marks_the_diagonal(results):
    figure = crossover_figure(results, "tanh_map")
    maps = [ax for ax in figure.axes if ax.get_title()]
    titles = [ax.get_title() for ax in maps]
    assert titles == [
        "time: forward, 1 lane ÷ reverse",
        "time: forward, chunked ÷ reverse",
        "element work: forward, 1 lane ÷ reverse",
        "element work: forward, chunked ÷ reverse",
    ]
    for ax in maps:
        (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
        assert mesh.get_array().shape == (3, 3)
        (diagonal,) = [ln for ln in ax.get_lines() if ln.get_label() == "n = m"]
        np.testing.assert_array_equal(diagonal.get_xdata(), diagonal.get_ydata())
    ratios = analysis.grid_ratio(results, "tanh_map", "forward1", "reverse", "work")
    (mesh,) = [c for c in maps[2].collections if isinstance(c, QuadMesh)]
    assert mesh.get_array()[0, 2] == pytest.approx(np.log10(ratios[8, 2]))


def test_every_measured_problem_gets_its_figure_and_the_grid_its_crossover_map(results):
    assert set(figures(results)) == {"summary", "rosenbrock", "fourier", "tanh_map-crossover"}


def test_figures_are_written_as_png_and_svg(results, tmp_path):
    fourier = Results()
    for cell in results.cells:
        if cell["problem"] == "fourier":
            fourier.add(cell)
    written = save_figures(fourier, tmp_path, formats=("png", "svg"))
    assert written == {"fourier": tmp_path / "fourier.png"}
    assert (tmp_path / "fourier.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "fourier.svg").read_text().lstrip().startswith("<?xml")


def test_partial_results_still_plot():
    results = synthetic_results()
    for cell in results.cells:
        if cell["mode"] == "reverse" and cell["n"] > 4:
            cell["status"] = "skipped"
    figure = problem_figure(results, "rosenbrock")
    assert any(t.startswith("reverse") for t in labels(figure.axes[0]))
    assert figures(Results()) == {}


def test_the_summary_figure_shows_every_many_inputs_problems_ratios(results):
    (ax,) = summary_figure(results).axes
    lines = {line.get_label(): line for line in ax.get_lines() if line.get_label()[0] != "_"}
    assert set(lines) == {
        f"rosenbrock, {m}" for m in ("reverse", "forward, chunked", "forward, 1 lane")
    }
    _, y = analysis.series(results, "rosenbrock", "reverse", relative=True)
    np.testing.assert_allclose(lines["rosenbrock, reverse"].get_ydata(), y)
    assert "fourier" not in " ".join(lines), "one-input problems have their own figures"
    assert summary_figure(Results()) is None


def test_the_report_opens_with_the_summary_figure(results, tmp_path):
    text = write_report(results, tmp_path).read_text()
    assert text.index("](summary.png)") < text.index("## Summary")
    assert (tmp_path / "summary.png").exists()


def test_without_f_there_is_no_empty_cost_ratio_panel():
    results = synthetic_results()
    for cell in results.cells:
        if cell["mode"] == "f":
            cell["status"] = "skipped"
    figure = problem_figure(results, "rosenbrock")
    titles = [ax.get_title() for ax in figure.axes]
    assert len(figure.axes) == 3 and not any("Cost ratio" in t for t in titles)
    assert problem_figure(synthetic_results(), "rosenbrock").axes[1].get_title().startswith("Cost")


def test_titles_use_mathtext_and_theory_lines_sit_over_the_data(results):
    figure = problem_figure(results, "rosenbrock")
    assert "$x_{i+1}$" in figure._suptitle.get_text() and "x_{i+1} " not in (
        figure._suptitle.get_text().replace("$x_{i+1}$", "")
    )
    work_ax = figure.axes[2]
    theory = [line for line in work_ax.get_lines() if line.get_label().startswith("theory")]
    data = [line for line in work_ax.get_lines() if not line.get_label().startswith("theory")]
    assert len(theory) == 2 and {line.get_linestyle() for line in theory} == {"--", "-."}
    assert min(line.get_zorder() for line in theory) > max(line.get_zorder() for line in data)


def test_the_memory_panel_says_why_tape_bytes_exceed_the_peak():
    results = synthetic_results()
    for cell in results.cells:
        if cell["mode"] == "reverse":
            cell["counts"]["tape_bytes"] = 10 * cell["memory"]["peak_bytes"]
    memory_ax = problem_figure(results, "rosenbrock").axes[3]
    assert any(text.get_text().startswith("tape bytes > peak") for text in memory_ax.texts)
    quiet = problem_figure(synthetic_results(), "rosenbrock").axes[3]
    assert not quiet.texts
