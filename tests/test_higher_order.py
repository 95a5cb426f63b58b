"""Second and third derivatives in every composition of the two modes."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.transforms import HESSIAN_MODES

from .opcases import case_id, draw, op_cases

CASES = list(op_cases())


def positions(op, shapes):
    return range(len(shapes)) if op.nargs is None else op.differentiable


def central_hvp(f, x, v, h=1e-5):
    return (ad.grad(f)(x + h * v) - ad.grad(f)(x - h * v)) / (2 * h)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_has_consistent_second_derivatives_in_all_four_modes(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=11)
    rng = np.random.default_rng(12)
    u = rng.standard_normal(np.shape(op.fn(*args, **params)))
    complex_output = np.iscomplexobj(op.fn(*args, **params))
    for i in positions(op, shapes):

        def scalar(x, i=i):
            parts = list(args)
            parts[i] = x
            total = ad.sum(op.fn(*parts, **params) * u)
            return ad.real(total) if complex_output else total  # a real loss, as in test_ops

        v = rng.standard_normal(np.shape(args[i]))
        products = {mode: ad.hvp(scalar, args[i], v, mode) for mode in HESSIAN_MODES}
        reference = products["fwd-over-rev"]
        for mode, product in products.items():
            np.testing.assert_allclose(product, reference, rtol=1e-10, atol=1e-12, err_msg=mode)
        np.testing.assert_allclose(reference, central_hvp(scalar, args[i], v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_second_derivatives_match_sympy_in_all_four_modes(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=21)
    u = np.random.default_rng(22).standard_normal(np.shape(op.fn(*args, **params)))
    complex_output = np.iscomplexobj(op.fn(*args, **params))
    for i in positions(op, shapes):

        def scalar(x, i=i):
            parts = list(args)
            parts[i] = x
            total = ad.sum(op.fn(*parts, **params) * u)
            return ad.real(total) if complex_output else total  # a real loss, as in test_ops

        exact = ad.hessian(scalar, mode="symbolic")(args[i])
        for mode in HESSIAN_MODES:
            np.testing.assert_allclose(
                ad.hessian(scalar, mode=mode)(args[i]),
                exact,
                rtol=1e-10,
                atol=1e-11,
                err_msg=f"{op.name}, argument {i}, {mode}",
            )


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """Hand-derived: tridiagonal."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * x[i]
    return h


@pytest.mark.parametrize("mode", HESSIAN_MODES)
def test_hessians_match_hand_formulas(mode):
    x = np.random.default_rng(0).uniform(-1.2, 1.2, size=6)
    np.testing.assert_allclose(ad.hessian(rosenbrock, mode=mode)(x), rosenbrock_hessian(x))
    a = np.random.default_rng(1).standard_normal((4, 4))
    quadratic = lambda y: ad.sum(y * ad.matmul(a, y))
    np.testing.assert_allclose(ad.hessian(quadratic, mode=mode)(np.ones(4)), a + a.T, atol=1e-14)


def mlp_loss(weights, inputs, labels, hidden=4):
    d = inputs.shape[1]
    w1 = ad.reshape(weights[: d * hidden], (d, hidden))
    w2 = ad.reshape(weights[d * hidden :], (hidden, 2))
    logits = ad.matmul(ad.tanh(ad.matmul(inputs, w1)), w2)
    return -ad.mean(ad.log_softmax(logits, axis=1)[np.arange(len(labels)), labels])


@pytest.fixture(scope="module")
def small_mlp():
    """A 2-3-2 MLP on 3 samples (12 weights) and its exact Hessian from SymPy."""
    rng = np.random.default_rng(3)
    inputs, labels = rng.standard_normal((3, 2)), np.array([0, 1, 1])
    weights = rng.standard_normal(12) * 0.5
    loss = lambda w: mlp_loss(w, inputs, labels, hidden=3)
    return loss, weights, ad.hessian(loss, mode="symbolic")(weights)


@pytest.mark.parametrize("mode", HESSIAN_MODES)
def test_mlp_loss_hessian_matches_sympy_and_differences(mode, small_mlp):
    loss, weights, exact = small_mlp
    h = ad.hessian(loss, mode=mode)(weights)
    np.testing.assert_allclose(h, exact, rtol=1e-10, atol=1e-12)
    numeric = np.stack([central_hvp(loss, weights, e) for e in np.eye(weights.size)])
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-7)


def test_third_derivatives_in_any_nesting():
    x = 0.7
    expected = -np.cos(x)  # d³/dx³ sin
    nestings = [
        ad.grad(ad.grad(ad.grad(ad.sin))),
        ad.grad(ad.grad(ad.grad(ad.sin, mode="forward")), mode="forward"),
        ad.grad(ad.grad(ad.grad(ad.sin), mode="forward")),
        ad.grad(ad.grad(ad.grad(ad.sin, mode="forward"), mode="forward")),
    ]
    for third in nestings:
        assert third(x) == pytest.approx(expected, rel=1e-14)
    cube = lambda y: ad.sum(y**3) / 6  # third derivative tensor: δ_ijk
    tensor = ad.jacfwd(ad.jacrev(ad.grad(cube)))(np.array([1.0, 2.0]))
    expected_tensor = np.zeros((2, 2, 2))
    expected_tensor[0, 0, 0] = expected_tensor[1, 1, 1] = 1.0
    np.testing.assert_allclose(tensor, expected_tensor)


def test_create_graph_gives_the_hessian_row_by_row():
    x = ad.Tensor([0.3, -0.8, 1.1], requires_grad=True)
    (g,) = ad.autograd_grad(rosenbrock(x), [x], create_graph=True)
    rows = [ad.autograd_grad(g[i], [x], retain_graph=True)[0].numpy() for i in range(3)]
    np.testing.assert_allclose(np.stack(rows), rosenbrock_hessian(x.detach().numpy()))


def test_hvp_argument_errors():
    with pytest.raises(ValueError, match="unknown mode 'rev-over-sideways'"):
        ad.hvp(rosenbrock, np.ones(3), np.ones(3), mode="rev-over-sideways")
    with pytest.raises(ValueError, match=r"v has shape \(2,\) but x has shape \(3,\)"):
        ad.hvp(rosenbrock, np.ones(3), np.ones(2))


SIZES = [8, 32, 128]


def numpy_work(fn, *args) -> int:
    with ad.count() as cost:
        fn(*args)
    return cost.elements["numpy"]


@pytest.mark.parametrize("mode", HESSIAN_MODES)
def test_one_hvp_costs_a_constant_multiple_of_one_gradient(mode):
    ratios = []
    for n in SIZES:
        x, v = np.linspace(-1, 1, n), np.linspace(1, 2, n)
        ratios.append(
            numpy_work(ad.hvp, rosenbrock, x, v, mode) / numpy_work(ad.grad(rosenbrock), x)
        )
    growth = np.polyfit(np.log(SIZES), np.log(ratios), 1)[0]
    if mode == "fwd-over-fwd":
        assert growth > 0.8, ratios  # the inner forward gradient needs n lanes
    else:
        assert abs(growth) < 0.1 and max(ratios) < 8, ratios
