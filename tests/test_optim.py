"""Optimizers against PyTorch's update formulas, computed here by hand."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare import nn, optim

TARGET = np.array([1.0, -2.0, 0.5])


def quadratic_gradient(w: np.ndarray) -> np.ndarray:
    """The gradient of L(w) = Σ (w − target)⁴ / 4 + Σ w: (w − target)³ + 1."""
    return (w - TARGET) ** 3 + 1.0


def run_steps(optimizer_factory, steps: int = 4):
    w = ad.Tensor([0.3, 0.1, -0.4], requires_grad=True)
    optimizer = optimizer_factory([w])
    path = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ad.sum((w - TARGET) ** 4) / 4 + ad.sum(w)
        loss.backward()
        optimizer.step()
        path.append(w.detach().numpy().copy())
    return path


def sgd_by_hand(lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False, steps=4):
    w = np.array([0.3, 0.1, -0.4])
    buffer = None
    path = []
    for _ in range(steps):
        g = quadratic_gradient(w) + weight_decay * w
        if momentum:
            buffer = g.copy() if buffer is None else momentum * buffer + (1 - dampening) * g
            g = g + momentum * buffer if nesterov else buffer
        w = w - lr * g
        path.append(w)
    return path


def adam_by_hand(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, steps=4):
    w = np.array([0.3, 0.1, -0.4])
    m = np.zeros(3)
    v = np.zeros(3)
    path = []
    for t in range(1, steps + 1):
        g = quadratic_gradient(w) + weight_decay * w
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat = m / (1 - betas[0] ** t)
        v_hat = v / (1 - betas[1] ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        path.append(w)
    return path


SGD_SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.1},
    {"lr": 0.05, "momentum": 0.8, "dampening": 0.3},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
]


@pytest.mark.parametrize("settings", SGD_SETTINGS, ids=lambda s: ",".join(s))
def test_sgd_reproduces_the_hand_computed_updates(settings):
    ours = run_steps(lambda params: optim.SGD(params, **settings))
    np.testing.assert_allclose(ours, sgd_by_hand(**settings), rtol=1e-14)


def test_sgd_momentum_first_steps_by_hand():
    # w = 1, L = w², g = 2w. Step 1: b = 2, w = 1 − 0.1·2 = 0.8.
    # Step 2: g = 1.6, b = 0.9·2 + 1.6 = 3.4, w = 0.8 − 0.34 = 0.46.
    w = ad.Tensor([1.0], requires_grad=True)
    optimizer = optim.SGD([w], lr=0.1, momentum=0.9)
    for expected in (0.8, 0.46):
        optimizer.zero_grad()
        (w * w).sum().backward()
        optimizer.step()
        assert w.item() == pytest.approx(expected, rel=1e-15)
    assert optimizer.state[w]["momentum_buffer"].item() == pytest.approx(3.4, rel=1e-15)


ADAM_SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.05, "betas": (0.5, 0.9)},
    {"lr": 0.05, "eps": 0.1, "weight_decay": 0.2},
]


@pytest.mark.parametrize("settings", ADAM_SETTINGS, ids=lambda s: ",".join(s))
def test_adam_reproduces_the_hand_computed_updates(settings):
    ours = run_steps(lambda params: optim.Adam(params, **settings))
    np.testing.assert_allclose(ours, adam_by_hand(**settings), rtol=1e-13)


def test_adam_bias_correction_makes_the_first_step_lr_times_the_sign():
    # m̂₁ = g and v̂₁ = g², so the first step is lr·g/(|g| + eps) ≈ lr·sign(g).
    w = ad.Tensor([0.3, -5.0], requires_grad=True)
    optimizer = optim.Adam([w], lr=0.01)
    (w * w * w).sum().backward()
    gradient = 3 * np.array([0.3, -5.0]) ** 2
    optimizer.step()
    expected = np.array([0.3, -5.0]) - 0.01 * gradient / (np.abs(gradient) + 1e-8)
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-15)
    assert optimizer.state[w]["step"] == 1


def test_step_updates_in_place_records_nothing_and_leaves_other_parameters_alone():
    nn.init.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    frozen = [p.detach().numpy().copy() for p in model[1].parameters()]
    optimizer = optim.SGD(model[0].parameters(), lr=0.5)
    weight = model[0].weight
    weight_array = weight.data
    before = weight_array.copy()
    model(np.ones((4, 2))).sum().backward()
    with ad.count() as cost:
        optimizer.step()
    assert cost.tape_records == 0 and cost.ops["reverse"] == 0
    assert weight.is_leaf and weight.grad_fn is None and weight.requires_grad
    assert weight.data is weight_array  # updated in place, as PyTorch's optimizers do
    np.testing.assert_allclose(weight_array, before - 0.5 * weight.grad.numpy(), rtol=1e-15)
    for array, p in zip(frozen, model[1].parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), array)
        assert p.grad is not None  # it has a gradient; it is just not this optimizer's


def test_a_graph_that_saved_a_parameter_refuses_backward_after_the_step():
    w = ad.Tensor([2.0], requires_grad=True)
    loss = (w * w).sum()
    (w * 3).sum().backward()
    optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_parameters_without_gradient_are_skipped():
    used, unused = ad.Tensor([1.0], requires_grad=True), ad.Tensor([5.0], requires_grad=True)
    optimizer = optim.Adam([used, unused], lr=0.1)
    (used * 2).sum().backward()
    optimizer.step()
    assert unused.item() == 5.0 and used.item() == pytest.approx(0.9)
    assert optimizer.state[unused] == {}


def test_optimizer_zero_grad_both_ways():
    w = ad.Tensor([1.0, 2.0], requires_grad=True)
    optimizer = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])  # accumulated onto zeros
    optimizer.zero_grad()
    assert w.grad is None


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda: optim.SGD([ad.Tensor([1.0])], lr=0.1), TypeError, "requires grad"),
        (lambda: optim.SGD([nn.Parameter([1.0]) * 2], lr=0.1), TypeError, "leaf"),
        (lambda: optim.SGD([nn.Parameter([1.0])], lr=-1.0), ValueError, "lr must be"),
        (lambda: optim.SGD([nn.Parameter([1.0])], lr=0.1, nesterov=True), ValueError, "nesterov"),
        (lambda: optim.Adam([nn.Parameter([1.0])], betas=(0.9, 1.0)), ValueError, "betas"),
    ],
)
def test_bad_optimizer_settings_are_explained(make, error, message):
    with pytest.raises(error, match=message):
        make()
