"""The performance targets: their problems, hand-written gradients, checks, rounds and table.

Nothing here asserts on time: the tests check the mathematics of the target
problems, that a wrong derivative is refused a time, that entries are warmed
up and sampled in interleaved rounds (counted calls, not clocks), and that the
table and its limits are read off the measured numbers, real or synthetic.
Peers are hidden where the shape of the table is checked, so the tests read
the same with and without them.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare.bench import peers
from adcompare.bench.harness import env
from adcompare.bench.harness.modes import MODES, Mode, plain_cost
from adcompare.bench.harness.results import SCHEMA_VERSION, Results, load_results
from adcompare.bench.problems.mlp import make_mlp
from adcompare.bench.targets import measure as target_measure
from adcompare.bench.targets import problems as target_problems
from adcompare.bench.targets import rounds
from adcompare.bench.targets.cases import RATIO_TARGETS, SMALL, TargetCase
from adcompare.bench.targets.measure import Settings, measure_entry, measure_row, measure_targets
from adcompare.bench.targets.report import render_markdown, write_targets
from adcompare.bench.targets.view import (
    CHAIN_REPLAY_LIMIT,
    CHAIN_TORCH_LIMIT,
    RATIO_LIMITS,
    target_rows,
)
from adcompare.check import complex_step, finite_differences
from adcompare.cli import main

QUICK = Settings(rounds=1, sample_time=0.0)
IDS = ["a", "b", "c", "d", "e1", "e2", "e3", "f", "g"]


# --- the target problems ---------------------------------------------------------------


@pytest.mark.parametrize("ops", [2, 7, 200])
def test_chain_is_exactly_ops_ops(ops):
    counts = plain_cost(target_problems.chain(ops)).as_dict()
    assert counts["ops"]["numpy"] == ops
    assert counts["by_op"]["numpy.sum"] == 1


def test_chain_follows_its_pattern():
    x = 0.3
    y = x
    for step in target_problems.CHAIN_PATTERN * 2:
        y = {
            "sin": np.sin,
            "cos": np.cos,
            "tanh": np.tanh,
            "exp": np.exp,
            "mul": lambda v: v * x,
            "add": lambda v: v + x,
        }[step](y)
    instance = target_problems.chain(13, x=x)
    assert float(instance.on(np)(instance.x)) == pytest.approx(y, rel=1e-15)


def test_chain_gradient_matches_the_complex_step():
    instance = target_problems.chain(200)
    exact = complex_step(instance.on(np))(instance.x)
    np.testing.assert_allclose(ad.grad(instance.on(ad))(instance.x), exact, rtol=1e-12)


def test_chain_refuses_too_few_ops():
    with pytest.raises(ValueError, match="at least 2 ops"):
        target_problems.chain(1)


def test_rosenbrock_gradient_by_hand_matches_sympy():
    symbols = sympy.symbols("x0:5")
    f = sum(100 * (b - a**2) ** 2 + (1 - a) ** 2 for a, b in itertools.pairwise(symbols))
    x = np.array([-1.2, 1.0, 0.3, -0.7, 2.0])
    exact = [float(sympy.diff(f, s).subs(dict(zip(symbols, x)))) for s in symbols]
    np.testing.assert_allclose(target_problems.rosenbrock_gradient(x), exact, rtol=1e-14)


def test_rosenbrock_gradient_by_hand_matches_adcompare_reverse():
    instance = target_problems.rosenbrock(1001)
    by_hand = target_problems.rosenbrock_gradient(instance.x)
    np.testing.assert_allclose(by_hand, ad.grad(instance.on(ad))(instance.x), rtol=1e-13)


def test_mlp_backprop_by_hand_matches_adcompare_and_finite_differences():
    instance, gradient = make_mlp(batch=5, inputs=7, hidden=4, classes=3)
    by_hand = gradient(instance.x)
    np.testing.assert_allclose(by_hand, ad.grad(instance.on(ad))(instance.x), atol=1e-14)
    numeric = finite_differences(instance.on(np))(instance.x)
    np.testing.assert_allclose(by_hand, numeric, rtol=1e-6, atol=1e-8)


def test_mlp_loss_is_the_softmax_cross_entropy():
    instance, _ = make_mlp(batch=3, inputs=4, hidden=2, classes=5)
    # With every weight zero the logits are equal: the loss is log(classes).
    zero = np.zeros(instance.n)
    assert float(instance.on(np)(zero)) == pytest.approx(np.log(5.0), rel=1e-15)


def test_mlp_has_the_full_target_size():
    instance, _ = make_mlp()
    assert instance.n == 784 * 128 + 128 + 128 * 10 + 10 and instance.m == 1


def test_the_short_lstm_is_the_full_one_cut_short():
    full, short = target_problems.lstm(), target_problems.lstm(4)
    assert full.size == {"characters": 1024} and full.problem == "adbench-lstm"
    np.testing.assert_array_equal(full.x, short.x)
    for instance in (full, short):  # the plain-numpy form is the op-set objective
        assert instance.on(np)(instance.x) == pytest.approx(instance.on(ad)(instance.x), 1e-12)
    with pytest.raises(ValueError, match="between 2 and 1024 characters"):
        target_problems.lstm(1)


def test_gmm_is_the_gradbench_problem():
    instance = target_problems.gmm()
    assert instance.problem == "gradbench-gmm-1k" and (instance.n, instance.m) == (30, 1)


# --- interleaved rounds ------------------------------------------------------------------


def _counting(log: list, name: str):
    def work():
        log.append(name)

    return work


def test_rounds_take_one_sample_of_every_entry_in_turn():
    log = []
    samplers = [
        rounds.Sampler(_counting(log, name), sample_time=0.0) for name in ("f", "rev", "replay")
    ]
    log.clear()  # the calibrations
    assert rounds.take_rounds(samplers, 3) == 3
    assert log == ["f", "rev", "replay"] * 3
    assert all(s.summary()["repeats"] == 3 for s in samplers)


def test_a_sampler_warms_up_to_its_calls_then_calibrates():
    log = []
    sampler = rounds.Sampler(_counting(log, "x"), sample_time=0.0, warm_up=10, calls_made=2)
    # 8 more calls make 10 in all, then one call calibrates (a sample of zero seconds: 1 call).
    assert len(log) == 9 and sampler.calls == 1 and sampler.warm_up_calls == 10


def test_samples_hold_enough_calls_for_the_sample_time(monkeypatch):
    clock = [0.0]

    def work():  # 1 ms of "CPU" a call
        clock[0] += 0.001

    monkeypatch.setattr(rounds, "cpu_clock", lambda: clock[0])
    assert rounds.calls_per_sample(work, 0.02) == 20
    assert rounds.calls_per_sample(work, 0.0005) == 1


def test_replayed_entries_are_warmed_up_and_every_entry_sampled_each_round():
    choices = [("adcompare", MODES["reverse"]), ("adcompare", MODES["reverse-replay"])]
    settings = Settings(rounds=2, sample_time=0.0, warm_up=12)
    cells = measure_row(target_problems.chain(5), choices, settings, "a")
    warmed = {c["mode"]: c["time"]["warm_up_calls"] for c in cells}
    assert warmed == {"reverse": 2, "reverse-replay": 12}
    assert all(c["time"]["repeats"] == 2 and len(c["time"]["cpu_samples"]) == 2 for c in cells)
    assert all(c["time"]["clock"] == "time.process_time" for c in cells)


def test_interrupted_rounds_keep_the_samples_taken():
    calls = [0]

    def interrupted(instance):
        def work():
            calls[0] += 1
            if calls[0] == 6:  # 2 first calls, 1 calibration, then round 3's sample
                raise KeyboardInterrupt
            return 0.0

        return work

    choices = [
        ("numpy", MODES["f"]),
        ("numpy", Mode("stops", "stops", interrupted, derivative=False, order=0, counted=False)),
    ]
    kept = []
    with pytest.raises(KeyboardInterrupt):
        measure_row(
            target_problems.rosenbrock(4),
            choices,
            Settings(rounds=5, sample_time=0.0),
            "b",
            keep=kept.append,
        )
    assert [(c["mode"], c["time"]["repeats"]) for c in kept] == [("f", 3), ("stops", 2)]


def test_an_interrupted_preparation_keeps_the_cells_already_final():
    def broken(instance):
        raise RuntimeError("no gradient today")

    def interrupted(instance):
        def work():
            raise KeyboardInterrupt

        return work

    choices = [
        ("numpy", Mode("broken", "broken", broken)),
        ("numpy", MODES["f"]),  # prepared, but interrupted before its first sample
        ("numpy", Mode("stops", "stops", interrupted, derivative=False, order=0)),
    ]
    kept = []
    with pytest.raises(KeyboardInterrupt):
        measure_row(target_problems.rosenbrock(4), choices, QUICK, "b", keep=kept.append)
    assert [(c["mode"], c["status"]) for c in kept] == [("broken", "error")]


# --- entries: checked before timed -----------------------------------------------------


def test_a_wrong_derivative_gets_no_time():
    instance = target_problems.rosenbrock(6)
    wrong = Mode(
        "handwritten",
        "off by 1 %",
        lambda inst: lambda: 1.01 * target_problems.rosenbrock_gradient(inst.x),
    )
    entry = measure_entry(instance, wrong, "numpy", QUICK)
    assert entry["status"] == "wrong" and not entry["check"]["ok"]
    assert "seconds" not in entry and "value" not in entry


def test_an_entry_that_raises_is_recorded_not_fatal():
    def broken(instance):
        raise RuntimeError("no gradient today")

    entry = measure_entry(target_problems.chain(3), Mode("x", "x", broken), "numpy", QUICK)
    assert entry["status"] == "error" and "no gradient today" in entry["error"]


def test_the_replayed_tape_is_measured_and_checked():
    entry = measure_entry(target_problems.chain(10), MODES["reverse-replay"], "adcompare", QUICK)
    assert entry["status"] == "ok" and entry["check"]["ok"]
    assert entry["check"]["error"] < 1e-12


# --- the table, adcompare only ------------------------------------------------------------


@pytest.fixture(scope="module")
def measured():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(peers, "is_installed", lambda library: False)
        return measure_targets(SMALL, QUICK)


def _entry(row: dict, mode: str) -> dict:
    return next(e for e in row["entries"] if e["mode"] == mode)


def test_every_target_is_measured_and_checked(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    assert list(rows) == IDS
    for row in rows.values():
        ours = [e for e in row["entries"] if e["library"] in ("adcompare", "numpy")]
        assert ours and all(e["status"] == "ok" for e in ours)
        assert all(e["check"]["ok"] for e in ours if e["check"] is not None)
        skipped = [e for e in row["entries"] if e["library"] in peers.LIBRARIES]
        assert all(e["status"] == "skipped" for e in skipped)
        assert all(
            "pip install" in e["reason"] or "array namespace" in e["reason"] for e in skipped
        )


def test_ratios_are_computed_from_the_same_run(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    for row_id in RATIO_TARGETS:
        row = rows[row_id]
        for mode, _ in RATIO_LIMITS[row_id]:
            read = _entry(row, mode)
            assert read["value"] == read["seconds"] / row["baseline"]["seconds"]
            assert read["wall_value"] == read["wall_seconds"] / row["baseline"]["wall_seconds"]
        assert [c["met"] for c in row["claims"]] == [
            _entry(row, mode)["value"] <= limit for mode, limit in RATIO_LIMITS[row_id]
        ]
    chain = _entry(rows["a"], "reverse")
    assert chain["value"] == pytest.approx(1e6 * chain["seconds"] / SMALL.chain_ops)
    for row_id in ("e1", "e2", "e3"):
        row = rows[row_id]
        fastest = min(_entry(row, "forward")["seconds"], _entry(row, "reverse")["seconds"])
        assert row["ratio"] == _entry(row, "auto")["seconds"] / fastest
        assert row["claims"][0]["met"] == (row["ratio"] <= 1.10)


def test_claims_against_peers_wait_for_the_peers(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    # Without torch the chain's eager claim is not measured; the replayed limits are absolute.
    assert [c["met"] is None for c in rows["a"]["claims"]] == [True, False, False]
    assert rows["c"]["claims"] == []


def _cell(target: str, mode: str, cpu: float, *, library="adcompare", **extra) -> dict:
    return {
        "problem": extra.pop("problem", "p"),
        "mode": mode,
        "size": extra.pop("size", {}),
        "n": extra.pop("n", 30),
        "m": 1,
        "target": target,
        "library": library,
        "label": mode,
        "status": "ok",
        "check": None,
        "time": {"median": 2 * cpu, "iqr": 0.0, "repeats": 5, "cpu_median": cpu, "cpu_iqr": 0.0},
    }


def _synthetic(cells: list[dict]) -> dict:
    results = Results()
    for cell in cells:
        results.add(cell)
    return {row["id"]: row for row in target_rows(results)["rows"]}


def test_the_limits_apply_to_cpu_time_ratios():
    gmm = {"problem": "gradbench-gmm-1k"}
    lstm = {"problem": "adbench-lstm", "size": {"characters": 1024}, "n": 266}
    rows = _synthetic(
        [
            _cell("f", "f", 1.0, library="numpy", **gmm),
            _cell("f", "reverse", 3.5, **gmm),  # on the limit: met
            _cell("f", "reverse-replay", 1.76, **gmm),  # PyTorch's published ratio: not met
            _cell("g", "f", 2.0, library="numpy", **lstm),
            _cell("g", "reverse", 60.0, **lstm),  # shown, no limit
            _cell("g", "reverse-replay", 8.2, **lstm),
        ]
    )
    gmm_row, lstm_row = rows["f"], rows["g"]
    assert [c["met"] for c in gmm_row["claims"]] == [True, False]
    assert gmm_row["target"] == "eager reverse ≤ 3.5; replayed reverse ≤ 1.75"
    assert _entry(gmm_row, "reverse")["wall_value"] == 3.5  # wall time ÷ wall time
    assert {p["tool"] for p in gmm_row["published"]} >= {"PyTorch", "hand-written", "JAX"}
    assert [c["met"] for c in lstm_row["claims"]] == [False]
    assert _entry(lstm_row, "reverse")["value"] == 30.0 and "1024 characters" in lstm_row["what"]
    assert RATIO_LIMITS["b"] == (("reverse", 3.0), ("reverse-replay", 2.3))
    assert RATIO_LIMITS["d"][0] == ("reverse-replay", 2.0)


def test_the_chain_is_held_to_torch_eager_and_jax_jits_replay_figure():
    chain = {"problem": "chain", "size": {"ops": 200}, "n": 1}
    us = 200e-6  # one µs an op
    rows = _synthetic(
        [
            _cell("a", "reverse", 1.0 * us, **chain),
            _cell("a", "reverse-replay", 0.14 * us, **chain),
            _cell("a", "reverse-replay:grad", 0.12 * us, **chain),
            _cell("a", "torch:reverse", 1.0 * us / CHAIN_TORCH_LIMIT, library="torch", **chain),
        ]
    )
    claims = rows["a"]["claims"]
    assert [c["met"] for c in claims] == [True, False, True]
    assert "1.00 × torch eager" in claims[0]["claim"]
    assert f"limit {CHAIN_REPLAY_LIMIT:g} µs" in claims[2]["claim"]
    assert "plain compiled.grad call" in claims[2]["claim"]


def test_the_report_says_how_it_measured_and_why_the_replayed_figures_differ(measured):
    text = render_markdown(measured)
    for phrase in (
        "interleaved rounds",
        "CPU time",
        "time.process_time",
        "called 10 times",
        "eighth call",
        "Allocator: ",
    ):
        assert phrase in text
    note = next(line for line in text.splitlines() if line.startswith("Why the chain's"))
    for phrase in (
        "compiled.program.run(x)",
        "compiled.value_and_grad(x)",
        "compiled.grad(x)",
        "reverse-replay",
    ):
        assert phrase in note
    assert "GradBench 2026-03-14" in text and "PyTorch 1.76" in text


def test_markdown_has_one_line_per_target_and_names_the_missing_peers(measured):
    text = render_markdown(measured)
    summary = text.split("\n\n")[1].splitlines()[2:]
    assert [line.split(" | ")[0] for line in summary] == [
        f"| {row['id']}" for row in measured["rows"]
    ]
    assert 'pip install -e ".[peers]"' in text


def test_a_wrong_entry_is_shown_as_wrong():
    row = {
        "id": "b",
        "what": "w",
        "unit": "× numpy f",
        "target": "≤ 2.5",
        "claims": [],
        "entries": [
            {
                "mode": "torch:reverse",
                "label": "torch eager backward",
                "library": "torch",
                "status": "wrong",
                "first_call": 0.1,
                "check": {"error": 0.25, "ok": False},
            }
        ],
    }
    assert "torch eager backward WRONG derivative (error 2.5e-01)" in render_markdown(
        {"rows": [row]}
    )


def test_written_json_round_trips(measured, tmp_path):
    markdown, data = write_targets(measured, tmp_path)
    document = json.loads(data.read_text(encoding="utf-8"))
    assert document["schema"] == "adcompare-targets"
    assert [row["id"] for row in document["rows"]] == [row["id"] for row in measured["rows"]]
    assert markdown.read_text(encoding="utf-8") == render_markdown(measured)


def test_the_command_reads_its_table_off_the_versioned_results_it_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(peers, "is_installed", lambda library: False)
    assert main(["targets", "--small", "--rounds", "1", "--out", str(tmp_path)]) == 0
    results = load_results(tmp_path / "results.json")
    assert results.data["schema_version"] == SCHEMA_VERSION and not results.rejected
    assert {cell["target"] for cell in results.cells} == set(IDS)
    table = target_rows(results)
    document = json.loads((tmp_path / "targets.json").read_text(encoding="utf-8"))
    assert document["rows"] == table["rows"]
    assert (tmp_path / "targets.md").read_text(encoding="utf-8") == render_markdown(table)


@pytest.mark.parametrize("flag", ["--rounds", "--repeats"])
def test_command_rejects_zero_rounds(capsys, flag):
    assert main(["targets", flag, "0"]) == 2
    assert "--rounds must be at least 1" in capsys.readouterr().err


def test_the_command_exits_1_when_a_derivative_disagrees(tmp_path, monkeypatch, capsys):
    wrong = Mode(
        "handwritten",
        "off by 1 %",
        lambda inst: lambda: 1.01 * target_problems.rosenbrock_gradient(inst.x),
    )
    case = TargetCase(target_problems.rosenbrock(6), [("numpy", MODES["f"]), ("numpy", wrong)])
    monkeypatch.setattr(target_measure, "target_cases", lambda sizes: {"b": case})
    assert main(["targets", "--small", "--rounds", "1", "--out", str(tmp_path)]) == 1
    assert "b off by 1 %" in capsys.readouterr().err


def test_the_targets_pin_the_allocator_and_say_so(measured, tmp_path):
    assert measured["allocator"] == env.pin_allocator()
    _, data = write_targets(measured, tmp_path)
    document = json.loads(data.read_text(encoding="utf-8"))
    assert document["allocator"] == document["environment"]["allocator"] == measured["allocator"]
    assert f"Allocator: {env.allocator_text(measured['allocator'])}." in render_markdown(measured)


def test_reverse_and_forward_entries_are_the_harness_modes(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    assert _entry(rows["b"], "reverse")["label"] == MODES["reverse"].label
    assert _entry(rows["c"], "forward")["label"] == MODES["forward"].label
