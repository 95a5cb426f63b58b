"""What mini-batches do to gradients, and the seeded mini-batch iterator."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare import nn
from adcompare.nn import functional


def test_linear_regression_gradient_is_two_over_n_xt_residual():
    # The minigrad blog's set-up: N = 64 points, X = [x, 1], MSE loss.
    n = 64
    rng = np.random.default_rng(0)
    x_values = rng.uniform(-1, 1, size=n)
    design = np.stack([x_values, np.ones(n)], axis=1)
    targets = (3.0 * x_values - 1.0 + 0.1 * rng.normal(size=n)).reshape(n, 1)
    weights = ad.Tensor([[0.5], [0.2]], requires_grad=True)
    predictions = design @ weights
    functional.mse_loss(predictions, targets).backward()
    residual = predictions.detach().numpy() - targets
    np.testing.assert_allclose(weights.grad.numpy(), 2 / n * design.T @ residual, rtol=1e-14)


def mlp_and_batch(n: int = 16):
    nn.init.manual_seed(4)
    model = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 3))
    rng = np.random.default_rng(1)
    return model, rng.normal(size=(n, 2)), rng.integers(0, 3, size=n)


def gradient_vector(model, inputs, labels, reduction):
    model.zero_grad()
    functional.cross_entropy(model(inputs), labels, reduction).backward()
    return np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])


def test_mean_loss_gradient_is_the_average_of_per_sample_gradients():
    model, inputs, labels = mlp_and_batch()
    per_sample = [
        gradient_vector(model, inputs[i : i + 1], labels[i : i + 1], "mean") for i in range(16)
    ]
    batch = gradient_vector(model, inputs, labels, "mean")
    np.testing.assert_allclose(batch, np.mean(per_sample, axis=0), rtol=1e-12, atol=1e-15)
    # The per-sample gradients really differ: the average is not trivially any one of them.
    assert np.ptp(np.array(per_sample), axis=0).max() > 0.1


def test_sum_reduction_gradient_is_n_times_the_mean_reduction_gradient():
    model, inputs, labels = mlp_and_batch()
    total = gradient_vector(model, inputs, labels, "sum")
    mean = gradient_vector(model, inputs, labels, "mean")
    np.testing.assert_allclose(total, 16 * mean, rtol=1e-12)
    assert functional.cross_entropy(model(inputs), labels, "sum").item() == pytest.approx(
        16 * functional.cross_entropy(model(inputs), labels).item(), rel=1e-13
    )


def test_the_graph_holds_one_operation_per_layer_not_per_sample():
    model, inputs, labels = mlp_and_batch(64)

    def tape_size(n):
        with ad.count() as cost:
            loss = functional.cross_entropy(model(inputs[:n]), labels[:n])
        return cost.tape_records, cost.by_op, loss

    one, _, _ = tape_size(1)
    many, many_ops, loss = tape_size(64)
    assert one == many
    # Each Linear is one matmul on the whole batch: two layers, two matmuls.
    assert many_ops["reverse", "matmul"] == 2
    with ad.count() as cost:
        loss.backward()
    assert cost.sweeps == 1


def test_minibatches_cover_every_sample_once_per_epoch_in_a_new_order():
    x = np.arange(20.0).reshape(10, 2)
    y = np.arange(10)
    batches = nn.MiniBatches(x, y, batch_size=3, seed=7)
    assert len(batches) == 4
    epochs = [[yb.copy() for _, yb in batches] for _ in range(2)]
    for epoch in epochs:
        assert [len(b) for b in epoch] == [3, 3, 3, 1]
        np.testing.assert_array_equal(np.sort(np.concatenate(epoch)), y)
    assert not np.array_equal(np.concatenate(epochs[0]), np.concatenate(epochs[1]))
    for xb, yb in batches:
        np.testing.assert_array_equal(xb, x[yb])  # rows stay aligned across arrays
    again = nn.MiniBatches(x, y, batch_size=3, seed=7)
    first_epoch_again = np.concatenate([yb for _, yb in again])
    np.testing.assert_array_equal(first_epoch_again, np.concatenate(epochs[0]))


def test_minibatches_drop_last_and_no_shuffle():
    y = np.arange(10)
    dropped = nn.MiniBatches(y, batch_size=4, drop_last=True, seed=0)
    assert len(dropped) == 2 and [len(b) for (b,) in dropped] == [4, 4]
    in_order = nn.MiniBatches(y, batch_size=4, shuffle=False)
    np.testing.assert_array_equal(np.concatenate([b for (b,) in in_order]), y)


@pytest.mark.parametrize(
    ("arrays", "batch_size", "message"),
    [
        ((np.zeros(3), np.zeros(4)), 2, "different lengths"),
        ((np.zeros(3),), 0, "positive integer"),
        ((), 2, "at least one array"),
    ],
)
def test_minibatches_refuse_bad_input(arrays, batch_size, message):
    with pytest.raises(ValueError, match=message):
        nn.MiniBatches(*arrays, batch_size=batch_size)
