"""Layers and losses: values against SymPy and hand formulas, gradients against
finite differences and hand-derived formulas, forward mode against reverse mode."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare import nn
from adcompare.nn.functional import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    linear,
    mse_loss,
)


def central_difference(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The gradient of scalar ``f`` at ``x`` by central differences, element by element."""
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        gradient[index] = (f(x + step) - f(x - step)) / (2 * h)
    return gradient


RNG = np.random.default_rng(0)
X = RNG.normal(size=(5, 3))
LABELS = np.array([0, 2, 1, 2, 0])
BINARY_TARGETS = (X > 0).astype(float)


def test_linear_gradients_equal_the_hand_formulas_and_finite_differences():
    layer = nn.Linear(3, 4, generator=np.random.default_rng(1))
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    upstream = RNG.normal(size=(5, 4))  # g = dL/dy for L = Σ g ⊙ y
    x = ad.Tensor(X, requires_grad=True)
    y = layer(x)
    np.testing.assert_allclose(y.detach().numpy(), X @ weight.T + bias, rtol=1e-14)
    (y * upstream).sum().backward()
    # y = x·Wᵀ + b, so dL/dW = gᵀx, dL/db = Σ over the batch of g, dL/dx = g·W.
    np.testing.assert_allclose(layer.weight.grad.numpy(), upstream.T @ X, rtol=1e-12)
    np.testing.assert_allclose(layer.bias.grad.numpy(), upstream.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), upstream @ weight, rtol=1e-12)

    def loss_of_weight(w):
        return float(np.sum(upstream * (X @ w.T + bias)))

    np.testing.assert_allclose(
        layer.weight.grad.numpy(), central_difference(loss_of_weight, weight), rtol=1e-7
    )


# --- every layer and loss: reverse against finite differences and forward mode ----

LAYERS = {
    "Linear": lambda: nn.Linear(3, 3, generator=np.random.default_rng(2)),
    "ReLU": nn.ReLU,
    "Tanh": nn.Tanh,
    "Sigmoid": nn.Sigmoid,
    "Flatten": nn.Flatten,
    "Sequential": lambda: nn.Sequential(
        nn.Linear(3, 4, generator=np.random.default_rng(3)),
        nn.Tanh(),
        nn.Linear(4, 3, generator=np.random.default_rng(4)),
    ),
}

LOSSES = {
    "mse_loss": lambda z, reduction: mse_loss(z, np.cos(X), reduction),
    "cross_entropy": lambda z, reduction: cross_entropy(z, LABELS, reduction),
    "binary_cross_entropy_with_logits": lambda z, reduction: binary_cross_entropy_with_logits(
        z, BINARY_TARGETS, reduction
    ),
}


def _scalar_functions() -> dict:
    functions = {}
    for name, make in LAYERS.items():
        layer = make()
        for parameter in layer.parameters():
            parameter.requires_grad_(False)  # the layer as a function of its input
        # A fixed non-linear read-out makes the scalar depend on every output.
        functions[f"layer {name}"] = lambda z, layer=layer: ad.sum(ad.sin(layer(z)) * X)
    for name, loss in LOSSES.items():
        for reduction in ("mean", "sum"):
            functions[f"loss {name} {reduction}"] = lambda z, loss=loss, r=reduction: loss(z, r)
        functions[f"loss {name} none"] = lambda z, loss=loss: ad.sum(
            ad.reshape(loss(z, "none"), (5, -1)) * X
        )
    return functions


SCALARS = _scalar_functions()


@pytest.mark.parametrize("name", list(SCALARS))
def test_reverse_gradient_matches_finite_differences_and_forward_mode(name):
    f = SCALARS[name]
    z = X + 0.1  # keeps ReLU away from its kink at 0
    reverse = ad.grad(f)(z)
    numeric = central_difference(lambda v: float(f(v)), z)
    np.testing.assert_allclose(reverse, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ad.grad(f, mode="forward")(z), reverse, rtol=1e-12, atol=1e-14)


def test_parameter_gradients_of_a_network_match_finite_differences_and_forward_mode():
    model = LAYERS["Sequential"]()
    shapes = {name: p.shape for name, p in model.named_parameters()}
    theta = nn.parameters_to_vector(model.parameters())

    def loss(vector):
        logits = nn.functional_call(model, nn.vector_to_parameters(vector, shapes), X)
        return cross_entropy(logits, LABELS)

    reverse = ad.grad(loss)(theta)
    np.testing.assert_allclose(
        reverse, central_difference(lambda v: float(loss(v)), theta), rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(ad.grad(loss, mode="forward")(theta), reverse, rtol=1e-12)
    # The same gradient as backward() into the parameters' .grad, in registration order.
    cross_entropy(model(X), LABELS).backward()
    np.testing.assert_allclose(
        np.concatenate([p.grad.numpy().ravel() for p in model.parameters()]), reverse, rtol=1e-13
    )


# --- losses against SymPy and hand formulas ----------------------------------------


def test_cross_entropy_matches_sympy_and_its_gradient_is_softmax_minus_onehot():
    n, classes = X.shape
    symbols = sympy.Matrix(n, classes, lambda i, j: sympy.Symbol(f"z{i}{j}"))
    per_sample = [
        sympy.log(sum(sympy.exp(symbols[i, j]) for j in range(classes))) - symbols[i, LABELS[i]]
        for i in range(n)
    ]
    mean_loss = sum(per_sample) / n
    values = {symbols[i, j]: X[i, j] for i in range(n) for j in range(classes)}
    z = ad.Tensor(X, requires_grad=True)
    loss = cross_entropy(z, LABELS)
    assert loss.item() == pytest.approx(float(mean_loss.subs(values)), rel=1e-13)
    np.testing.assert_allclose(
        cross_entropy(X, LABELS, reduction="none"),
        [float(term.subs(values)) for term in per_sample],
        rtol=1e-13,
    )
    loss.backward()
    sympy_gradient = np.array(
        [
            [float(sympy.diff(mean_loss, symbols[i, j]).subs(values)) for j in range(classes)]
            for i in range(n)
        ]
    )
    softmax = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    onehot = np.eye(classes)[LABELS]
    np.testing.assert_allclose(z.grad.numpy(), sympy_gradient, rtol=1e-12)
    np.testing.assert_allclose(z.grad.numpy(), (softmax - onehot) / n, rtol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = ad.Tensor([[1000.0, -1000.0, 0.0], [0.0, 2000.0, 0.0]], requires_grad=True)
    loss = cross_entropy(logits, np.array([1, 1]), reduction="sum")
    assert loss.item() == pytest.approx(2000.0)  # the first sample: 1000 - (-1000)
    loss.backward()
    expected = [[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]]  # softmax − onehot, exp underflows to 0
    np.testing.assert_allclose(logits.grad.numpy(), expected, atol=1e-300)


def test_binary_cross_entropy_with_logits_matches_its_definition_and_sympy():
    z, y = sympy.symbols("z y")
    sigma = 1 / (1 + sympy.exp(-z))
    expression = -(y * sympy.log(sigma) + (1 - y) * sympy.log(1 - sigma))
    logits = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    targets = np.array([0.0, 1.0, 1.0, 0.25, 1.0])
    ours = binary_cross_entropy_with_logits(logits, targets, reduction="none")
    expected = [float(expression.subs({z: a, y: b})) for a, b in zip(logits, targets)]
    np.testing.assert_allclose(ours, expected, rtol=1e-13)
    # Its derivative in the logit is σ(z) − y.
    gradient = ad.grad(lambda v: binary_cross_entropy_with_logits(v, targets, "sum"))(logits)
    np.testing.assert_allclose(gradient, 1 / (1 + np.exp(-logits)) - targets, rtol=1e-13)
    huge = binary_cross_entropy_with_logits(np.array([800.0]), np.array([0.0]))
    assert float(huge) == pytest.approx(800.0)


def test_mse_loss_values_and_reductions():
    prediction, target = np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[0.0, 2.0], [1.0, 1.0]])
    squares = np.array([[1.0, 0.0], [4.0, 16.0]])
    np.testing.assert_array_equal(mse_loss(prediction, target, "none"), squares)
    assert float(mse_loss(prediction, target)) == 21.0 / 4
    assert float(nn.MSELoss(reduction="sum")(prediction, target)) == 21.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mse_loss(np.zeros(3), np.zeros((3, 1))), "shapes agree"),
        (lambda: mse_loss(np.zeros(3), np.zeros(3), reduction="avg"), "reduction='avg'"),
        (lambda: cross_entropy(np.zeros(3), np.array([0])), r"shape \(N, C\)"),
        (lambda: cross_entropy(np.zeros((2, 3)), np.array([0.0, 1.0])), "integer class"),
        (lambda: cross_entropy(np.zeros((2, 3)), np.array([0, 3])), r"lie in 0\.\.2"),
        (lambda: binary_cross_entropy_with_logits(np.zeros(2), np.zeros(3)), "must agree"),
        (lambda: linear(np.zeros((2, 4)), np.zeros((3, 5))), "in_features=5"),
        (lambda: nn.CrossEntropyLoss(reduction="total"), "reduction='total'"),
    ],
)
def test_bad_loss_and_layer_inputs_are_explained(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_loss_modules_equal_the_functional_losses():
    z = X + 0.3
    np.testing.assert_array_equal(
        nn.MSELoss(reduction="none")(z, np.cos(X)), mse_loss(z, np.cos(X), "none")
    )
    np.testing.assert_array_equal(
        nn.CrossEntropyLoss(reduction="sum")(z, LABELS), cross_entropy(z, LABELS, "sum")
    )
    np.testing.assert_array_equal(
        nn.BCEWithLogitsLoss()(z, BINARY_TARGETS),
        binary_cross_entropy_with_logits(z, BINARY_TARGETS),
    )
