"""The training demonstration: data, the spirals run, the command, the step benchmark."""

from __future__ import annotations

import json

import numpy as np
import pytest

import adcompare as ad
from adcompare import cli, nn
from adcompare.bench.harness.sweep import SweepConfig, run_sweep
from adcompare.train import datasets
from adcompare.train.loop import TrainingConfig, train
from adcompare.train.mlp import MLP
from adcompare.train.step import MODES, parameter_counts, step_rows, training_step


def test_two_spirals_lie_on_their_spiral():
    x, y = datasets.two_spirals(80, turns=1.5, seed=0)
    assert x.shape == (160, 2) and np.bincount(y).tolist() == [80, 80]
    radius = np.hypot(x[:80, 0], x[:80, 1])
    np.testing.assert_allclose(radius, np.linspace(0.1, 1.0, 80), rtol=1e-12)
    angle = np.unwrap(np.arctan2(x[:80, 1], x[:80, 0]))
    np.testing.assert_allclose(angle, np.linspace(0, 3 * np.pi, 80), atol=1e-12)
    np.testing.assert_allclose(x[80:], -x[:80])  # class 1 is class 0 turned by half a turn


def test_moons_and_noise_are_seeded():
    x, _ = datasets.moons(50, noise=0.0)
    np.testing.assert_allclose(np.hypot(x[:50, 0], x[:50, 1]), 1.0)
    np.testing.assert_allclose(np.hypot(x[50:, 0] - 1.0, x[50:, 1] - 0.5), 1.0)
    a, b = datasets.moons(50, noise=0.1, seed=3), datasets.moons(50, noise=0.1, seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], datasets.moons(50, noise=0.1, seed=4)[0])
    with pytest.raises(ValueError, match="noise"):
        datasets.two_spirals(10, noise=-1.0)


def test_spirals_training_reaches_the_target_with_the_fixed_seed():
    # The command's configuration, stopped early: it first reaches 97 % near epoch 45.
    run = train(TrainingConfig(epochs=80))
    assert run.final_accuracy >= 0.97
    assert run.epoch_target_reached is not None
    assert run.epoch_losses[-1] < 0.5 * run.epoch_losses[0]
    again = train(TrainingConfig(epochs=3))
    np.testing.assert_array_equal(again.step_losses, run.step_losses[: len(again.step_losses)])


def test_training_config_refuses_unknown_choices():
    with pytest.raises(ValueError, match="unknown dataset 'mnist'"):
        TrainingConfig(dataset="mnist")
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        TrainingConfig(epochs=0)


def test_train_command_writes_the_pictures_and_the_summary(tmp_path, capsys):
    status = cli.main(["train", "--dataset", "moons", "--epochs", "5", "--out", str(tmp_path)])
    assert status == 0
    for name in ("loss_curve.png", "decision_boundary.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "train.json").read_text())
    assert summary["config"]["epochs"] == 5 and len(summary["epoch_accuracies"]) == 5
    assert "training accuracy" in capsys.readouterr().out


def test_training_step_costs_reverse_one_sweep_and_forward_work_grows_with_p():
    config = SweepConfig(
        problems=["training_step"], modes=list(MODES), sizes=parameter_counts((2, 8)), repeats=1
    )
    small, large = step_rows(run_sweep(config).cells)
    for row in (small, large):
        assert row["check_error"] < 1e-12  # both modes give the same gradient
        assert row["reverse"]["sweeps"] == 1 and row["reverse"]["passes"] == 0
    p_ratio = large["n_params"] / small["n_params"]  # 114 / 18
    forward_growth = large["forward"]["elements"] / small["forward"]["elements"]
    reverse_growth = large["reverse"]["elements"] / small["reverse"]["elements"]
    # Forward carries P lanes through a pass that itself widens: growth beyond P's.
    assert forward_growth > p_ratio
    assert reverse_growth < p_ratio
    assert large["forward"]["elements"] > 20 * large["reverse"]["elements"]


def test_train_checks_its_output_folder_before_training(tmp_path, capsys, monkeypatch):
    from adcompare.cli import train as train_command

    monkeypatch.setattr(train_command, "train", lambda config: pytest.fail("trained first"))
    (tmp_path / "taken").write_text("a file, not a folder")
    assert cli.main(["train", "--out", str(tmp_path / "taken")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("adcompare train: cannot write into ") and err.count("\n") == 1


def test_the_training_step_is_the_loss_of_the_module_it_trains():
    step = training_step(4)
    model = step.net.module()
    labels = step.one_hot.argmax(axis=1)

    def by_module(theta):
        parameters = step.net.module_parameters(theta)
        return nn.functional.cross_entropy(nn.functional_call(model, parameters, step.x), labels)

    assert float(step.loss(np, step.theta)) == pytest.approx(
        float(by_module(step.theta).item()), rel=1e-14
    )
    np.testing.assert_allclose(
        ad.grad(lambda theta: step.loss(ad, theta))(step.theta),
        ad.grad(by_module)(step.theta),
        rtol=1e-12,
        atol=1e-15,
    )


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid"])
def test_mlp_backprop_by_hand_matches_reverse_mode(activation):
    rng = np.random.default_rng(3)
    net = MLP((3, 5, 4, 2), activation)
    inputs, targets = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    w = net.scaled_normal(rng) + 0.1 * rng.standard_normal(net.n_params)

    def loss(xp, w):
        return xp.sum((net.forward(xp, w, inputs) - targets) ** 2) / 2

    by_hand = net.backprop(w, inputs, lambda z: z - targets)
    np.testing.assert_allclose(by_hand, ad.grad(lambda w: loss(ad, w))(w), rtol=1e-12, atol=1e-14)
