"""The memory study: loop problems, modes, sweep, figures, report and command."""

from __future__ import annotations

import json

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.memory import peers as memory_peers
from adcompare.bench.memory.analysis import budget_crossing, fit_memory, pareto_front
from adcompare.bench.memory.loops import LOOP_PROBLEMS, loop_instance
from adcompare.bench.memory.modes import MEMORY_MODES, gradient_error
from adcompare.bench.memory.peers import PEER_MEMORY_MODES
from adcompare.bench.memory.plots import memory_figure, schedule_figure
from adcompare.bench.memory.report import memory_report, parse_bytes
from adcompare.bench.memory.sweep import MemoryConfig, MemoryResults, run_memory_sweep
from adcompare.cli import main
from adcompare.revolve import revolve_advances


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    path = tmp_path_factory.mktemp("memory") / "results.json"
    config = MemoryConfig(
        problems=["heat"],
        modes=["f", "forward", "reverse", "block", "revolve:4", "revolve:sqrt"],
        steps=[3, 12],
        repeats=1,
    )
    return run_memory_sweep(config, MemoryResults(path))


@pytest.mark.parametrize("problem", list(LOOP_PROBLEMS))
def test_every_mode_computes_the_same_gradient(problem):
    instance = loop_instance(problem, 7)
    gradients = {
        name: mode.prepare(instance)() for name, mode in MEMORY_MODES.items() if mode.derivative
    }
    # the reference is an independent one: central differences of the plain loop
    params = instance.params
    direction = np.random.default_rng(0).standard_normal(params.size)

    def plain_loop(step, carry, xs, args):
        for t in range(instance.steps):
            carry = step(carry, None if xs is None else xs[t], *args)
        return carry

    def loss(p):
        return float(instance.loss(p, plain_loop))

    slope = (loss(params + 1e-6 * direction) - loss(params - 1e-6 * direction)) / 2e-6
    for name, gradient in gradients.items():
        assert abs(np.dot(np.reshape(gradient, -1), direction) - slope) < 1e-7 * max(1, abs(slope))
        assert gradient_error(gradient, gradients["reverse"]) < 1e-12, name


def test_the_sweep_counts_what_the_theory_says(tiny_results):
    cells = {(c["mode"], c["steps"]): c for c in tiny_results.cells}
    assert all(c["status"] == "ok" for c in cells.values())
    assert all(c["check"]["ok"] for c in cells.values() if c["mode"] != "f")
    for steps in (3, 12):
        revolve = cells["revolve:4", steps]["counts"]
        assert revolve["peak_snapshots"] <= 4
        assert revolve["recomputed_steps"] == revolve_advances(steps, 4) + 1
        assert cells["forward", steps]["counts"]["tape_records"] == 0
    full = [cells["reverse", t]["counts"]["peak_tape_bytes"] for t in (3, 12)]
    assert full[1] > 3.5 * full[0]  # the full tape grows like T
    assert cells["revolve:4", 12]["counts"]["peak_tape_bytes"] < full[1] / 2


def test_revolve_tape_does_not_grow_with_steps():
    def peak(steps):
        instance = loop_instance("heat", steps)
        with ad.count() as cost:
            MEMORY_MODES["revolve:4"].prepare(instance)()
        return cost.peak_tape_bytes

    assert peak(40) == peak(400)


def test_fits_crossings_and_the_pareto_front():
    cells = [{"steps": t, "memory": {"peak_bytes": 100 * t}} for t in (10, 100, 1000)]
    fit = fit_memory(cells, "reverse")
    assert fit == pytest.approx((100.0, 1.0))
    assert budget_crossing(fit, 2**30) == pytest.approx(2**30 / 100)
    assert budget_crossing((5e4, 0.0), 2**30) == float("inf")
    front = pareto_front([("reverse", 9e6, 0.2), ("revolve:4", 5e4, 0.7), ("block", 3e5, 0.3)])
    assert [name for name, *_ in front] == ["revolve:4", "block", "reverse"]
    assert [name for name, *_ in pareto_front([("a", 1, 1), ("b", 2, 2)])] == ["a"]


def test_memory_sizes_are_read_or_refused():
    assert parse_bytes("1GiB") == 2**30
    assert parse_bytes("1.5 kib") == 1536
    for bad in ("lots", "-3MiB", "1XB"):
        with pytest.raises(ValueError, match="memory size"):
            parse_bytes(bad)


def test_the_figure_has_its_three_panels(tiny_results):
    figure = memory_figure(tiny_results.cells, "heat", 2**30)
    memory_ax, time_ax, plane_ax = figure.axes
    labelled = [line.get_label() for line in memory_ax.get_lines()]
    assert MEMORY_MODES["reverse"].label in labelled
    assert memory_ax.get_xscale() == "log" and memory_ax.get_yscale() == "log"
    assert len(time_ax.get_lines()) == 6
    assert "T = 12" in plane_ax.get_title()


def test_the_schedule_figure_draws_every_action():
    figure = schedule_figure(10, 3)
    assert len(figure.axes) == 1
    assert "10 steps" in figure.axes[0].get_title()


def test_the_command_writes_the_report_and_refuses_bad_input(tiny_results, tmp_path, capsys):
    assert main(["memory", "--report", str(tiny_results.path), "--out", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "stops fitting the budget" in report
    assert (tmp_path / "memory-heat.png").exists()
    assert main(["memory", "--memory-budget", "plenty", "--out", str(tmp_path)]) == 2
    assert "cannot read the memory size" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something-else"}))
    assert main(["memory", "--report", str(other), "--out", str(tmp_path)]) == 2


def test_missing_peers_are_skipped_with_a_note(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(memory_peers, "is_installed", lambda library: False)
    config = MemoryConfig(
        problems=["heat"], modes=["reverse", "torch:checkpoint", "jax:blocks"], steps=[4]
    )
    cells = {c["mode"]: c for c in run_memory_sweep(config).cells}
    assert cells["reverse"]["status"] == "ok"
    for mode, library in (("torch:checkpoint", "torch"), ("jax:blocks", "jax")):
        assert cells[mode]["status"] == "skipped"
        assert f"{library} is not installed" in cells[mode]["reason"]
        assert 'pip install -e ".[peers]"' in cells[mode]["reason"]
    out = tmp_path / "peers"
    args = ["memory", "--peers", "--modes", "f", "--steps", "3", "--quiet", "--out", str(out)]
    assert main(args) == 0
    assert "torch and jax are not installed" in capsys.readouterr().err
    assert {c["mode"] for c in json.loads((out / "results.json").read_text())["cells"]} == {"f"}


def _peer_peak(mode: str, steps: int) -> int:
    """A peer's peak bytes on heat at ``steps``, by its own tool, once its gradient agrees."""
    instance = loop_instance("heat", steps)
    peer = PEER_MEMORY_MODES[mode]
    work = peer.prepare(instance)
    assert gradient_error(work(), MEMORY_MODES["revolve:sqrt"].prepare(instance)()) < 1e-12
    return peer.peak_bytes(work)


@pytest.mark.parametrize(
    ("library", "tape", "checkpointed"),
    [("torch", "torch:tape", "torch:checkpoint"), ("jax", "jax:scan", "jax:blocks")],
)
def test_peers_agree_and_their_checkpoints_grow_like_the_root(library, tape, checkpointed):
    pytest.importorskip(library)
    instance = loop_instance("lstm", 9)  # heat is checked in _peer_peak
    expected = MEMORY_MODES["reverse"].prepare(instance)()
    for name, mode in PEER_MEMORY_MODES.items():
        if mode.library == library:
            assert gradient_error(mode.prepare(instance)(), expected) < 1e-12, name
    # four times the steps: the full tape holds about four times the bytes,
    # blocks of √T steps about twice (√4)
    assert _peer_peak(tape, 256) > 3.5 * _peer_peak(tape, 64)
    assert _peer_peak(checkpointed, 256) < 2.2 * _peer_peak(checkpointed, 64)


def test_the_report_and_figure_show_peers_beside_adcompare(tiny_results, tmp_path):
    peers = [
        {
            "problem": "heat",
            "mode": mode,
            "steps": steps,
            "status": "ok",
            "time": {"median": 1e-3 * steps},
            "counts": {},
            "memory": {"peak_bytes": 600 * steps, "tool": PEER_MEMORY_MODES[mode].tool},
            "check": {"against": "adcompare", "error": 0.0, "ok": True},
        }
        for mode in ("torch:tape", "jax:scan")
        for steps in (3, 12)
    ]
    wrong = {**peers[0], "status": "error", "steps": 12, "mode": "jax:blocks"}
    cells = [*tiny_results.cells, *peers, wrong]
    report = memory_report(cells, 2**30, {"heat": "memory-heat.png"})
    assert PEER_MEMORY_MODES["torch:tape"].tool in report
    assert "| jax lax.scan | 3 ms, 1.76 KiB | 12 ms, 7.03 KiB |" in report
    assert "| torch, full tape | O(T) | 600 B · T^1 | T ≈ 1.8e+06 |" in report
    assert "✗ not timed" in report
    assert "| jax lax.scan | 12 | 7.03 KiB | – |" in report  # no resident set recorded
    memory_ax = memory_figure(cells, "heat", 2**30).axes[0]
    dotted = [
        line
        for line in memory_ax.get_lines()
        if line.get_linestyle() == ":" and not line.get_label().startswith("_")
    ]
    assert [line.get_label() for line in dotted] == ["torch, full tape", "jax lax.scan"]
    assert "by their own tools" in memory_ax.get_title()
