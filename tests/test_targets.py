"""The performance targets: their problems, hand-written gradients, checks and table.

Nothing here asserts on time: the tests check the mathematics of the target
problems, that a wrong derivative is refused a time, and that the table is
assembled from the measured numbers. Peers are hidden where the shape of
the table is checked, so the tests read the same with and without them.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare.bench import peers
from adcompare.bench.harness.modes import MODES, Mode, plain_cost
from adcompare.bench.problems.mlp import make_mlp
from adcompare.bench.targets import measure as targets
from adcompare.bench.targets import problems as target_problems
from adcompare.bench.targets.measure import SMALL, Settings, measure_entry, measure_targets
from adcompare.bench.targets.report import render_markdown, write_targets
from adcompare.check import complex_step, finite_differences
from adcompare.cli import main

QUICK = Settings(repeats=1, budget=0.05, min_repeat_time=0.0)


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


def test_mlp_has_the_issues_size():
    instance, _ = make_mlp()
    assert instance.n == 784 * 128 + 128 + 128 * 10 + 10 and instance.m == 1


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
    entry = measure_entry(target_problems.chain(10), targets.replay_mode(), "adcompare", QUICK)
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
    assert list(rows) == ["a", "b", "c", "d", "e1", "e2", "e3"]
    for row in rows.values():
        ours = [e for e in row["entries"] if e["library"] in ("adcompare", "numpy")]
        assert ours and all(e["status"] == "ok" and e["check"]["ok"] for e in ours)
        skipped = [e for e in row["entries"] if e["library"] in peers.LIBRARIES]
        assert all(e["status"] == "skipped" and "pip install" in e["reason"] for e in skipped)


def test_ratios_are_computed_from_the_same_run(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    for row_id in ("b", "d"):
        row = rows[row_id]
        reverse = _entry(row, "reverse")
        assert reverse["value"] == reverse["seconds"] / row["baseline"]["seconds"]
        assert row["claims"][0]["met"] == (reverse["value"] <= float(row["target"][2:]))
    chain = _entry(rows["a"], "reverse")
    assert chain["value"] == pytest.approx(1e6 * chain["seconds"] / SMALL.chain_ops)
    for row_id in ("e1", "e2", "e3"):
        row = rows[row_id]
        fastest = min(_entry(row, "forward")["seconds"], _entry(row, "reverse")["seconds"])
        assert row["ratio"] == _entry(row, "auto")["seconds"] / fastest
        assert row["claims"][0]["met"] == (row["ratio"] <= 1.10)


def test_claims_against_peers_wait_for_the_peers(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    # Only the replayed tape's limit is absolute (2 µs an op); the rest compare with torch.
    assert [c["claim"].split(" ")[0] for c in rows["a"]["claims"]] == ["replayed"]
    assert rows["c"]["claims"] == []


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


def test_command_rejects_zero_repeats(capsys):
    assert main(["targets", "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err


def test_reverse_and_forward_entries_are_the_harness_modes(measured):
    rows = {row["id"]: row for row in measured["rows"]}
    assert _entry(rows["b"], "reverse")["label"] == MODES["reverse"].label
    assert _entry(rows["c"], "forward")["label"] == MODES["forward"].label
