"""Pytrees, has_aux, stop_gradient and the transforms' refusals.

Every transform takes nested tuples, lists, dicts and NamedTuples; the
result has the argument's structure, and Jacobians nest the output's
structure over the input's, as JAX does. Values are checked against the
same derivative taken on one flat vector, and against SymPy.
"""

from __future__ import annotations

import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest

import adcompare as ad
from adcompare import nn

MODES = ["reverse", "forward", "symbolic"]


class Layer(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


def params():
    rng = np.random.default_rng(0)
    return {
        "layers": [Layer(rng.standard_normal((3, 2)), rng.standard_normal(3))],
        "scale": 0.7,
        "name": "static",
        "steps": 3,
        "unused": None,
    }


def model_loss(p, x):
    layer = p["layers"][0]
    hidden = ad.tanh(layer.weight @ x + layer.bias)
    return p["scale"] * ad.sum(hidden * hidden) * p["steps"]


X = np.array([0.4, -1.1])


def as_vector(p):
    layer = p["layers"][0]
    return np.concatenate([layer.weight.ravel(), layer.bias, [p["scale"]]])


def vector_loss(v, x):
    layer = Layer(ad.reshape(v[:6], (3, 2)), v[6:9])
    return model_loss({**params(), "layers": [layer], "scale": v[9]}, x)


def flatten_gradient(g):
    layer = g["layers"][0]
    return np.concatenate([np.ravel(layer.weight), np.ravel(layer.bias), [g["scale"]]])


@pytest.mark.parametrize("mode", MODES)
def test_gradient_has_the_structure_of_the_parameters(mode):
    g = ad.grad(model_loss, mode=mode)(params(), X)
    assert isinstance(g["layers"], list) and isinstance(g["layers"][0], Layer)
    assert g["layers"][0].weight.shape == (3, 2)
    assert g["name"] is None and g["steps"] is None and g["unused"] is None  # static leaves
    want = ad.grad(vector_loss, mode="symbolic")(as_vector(params()), X)
    np.testing.assert_allclose(flatten_gradient(g), want, rtol=1e-13, atol=1e-13)


def test_the_issue_examples_work():
    g = ad.grad(lambda p: ad.sum(p[0]) + ad.sum(p[1]))([np.ones((3, 8)), np.zeros(8)])
    np.testing.assert_array_equal(g[0], np.ones((3, 8)))
    np.testing.assert_array_equal(g[1], np.ones(8))
    g = ad.grad(lambda p: ad.sum(p["w"] ** 2))({"w": np.array([1.0, 2.0])})
    np.testing.assert_array_equal(g["w"], [2.0, 4.0])


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "symbolic"])
def test_jacobian_nests_output_structure_over_input_structure(transform):
    def f(p):
        return {"prod": p["a"] * p["b"], "pair": (ad.sin(p["a"]), p["b"] ** 2)}

    p = {"a": np.array([0.3, 0.5]), "b": 2.0}
    jac = {
        "jacrev": ad.jacrev(f),
        "jacfwd": ad.jacfwd(f),
        "symbolic": ad.jacobian(f, mode="symbolic"),
    }[transform](p)
    np.testing.assert_allclose(jac["prod"]["a"], 2.0 * np.eye(2))
    np.testing.assert_allclose(jac["prod"]["b"], [0.3, 0.5])
    np.testing.assert_allclose(jac["pair"][0]["a"], np.diag(np.cos([0.3, 0.5])))
    np.testing.assert_allclose(jac["pair"][0]["b"], [0.0, 0.0])
    np.testing.assert_allclose(jac["pair"][1]["b"], 4.0)
    assert np.shape(jac["pair"][1]["a"]) == (2,)


def test_jacobian_with_argnums_tuple_puts_the_tuple_inside_the_output_structure():
    jac = ad.jacrev(lambda x, y: (x * y, x + y), argnums=(0, 1))(2.0, 3.0)
    assert [[float(v) for v in row] for row in jac] == [[3.0, 2.0], [1.0, 1.0]]


@pytest.mark.parametrize("mode", ["fwd-over-rev", "rev-over-rev", "rev-over-fwd", "symbolic"])
def test_hessian_of_a_pytree_nests_it_over_itself(mode):
    p = {"a": np.array([0.3, 0.5]), "b": 2.0}
    h = ad.hessian(lambda p: ad.sum(p["a"] ** 2) * p["b"] ** 3, mode=mode)(p)
    np.testing.assert_allclose(h["a"]["a"], 2 * 8.0 * np.eye(2))
    np.testing.assert_allclose(h["a"]["b"], 2 * np.array([0.3, 0.5]) * 12.0)
    np.testing.assert_allclose(h["b"]["b"], 0.34 * 12.0)


@pytest.mark.parametrize("mode", ["fwd-over-rev", "rev-over-rev", "rev-over-fwd", "fwd-over-fwd"])
def test_hvp_and_jvp_and_vjp_take_pytrees(mode):
    p = {"a": np.array([0.3, 0.5]), "b": 2.0}
    v = {"a": np.array([1.0, -1.0]), "b": 0.5}

    def f(p):
        return ad.sum(p["a"] ** 2) * p["b"] ** 3

    hv = ad.hvp(f, p, v, mode)
    np.testing.assert_allclose(hv["a"], 16.0 * v["a"] + 2 * p["a"] * 12.0 * 0.5)
    np.testing.assert_allclose(hv["b"], np.dot(2 * p["a"] * 12.0, v["a"]) + 0.34 * 12.0 * 0.5)
    value, tangent = ad.jvp(f, (p,), (v,))
    np.testing.assert_allclose(value, 0.34 * 8.0)
    np.testing.assert_allclose(tangent, np.dot(2 * p["a"] * 8.0, v["a"]) + 0.34 * 12.0 * 0.5)
    value, pullback = ad.vjp(lambda p: {"y": p["a"] * p["b"]}, p)
    np.testing.assert_allclose(value["y"], [0.6, 1.0])
    (cotangent,) = pullback({"y": np.array([1.0, 2.0])})
    np.testing.assert_allclose(cotangent["a"], [2.0, 4.0])
    np.testing.assert_allclose(cotangent["b"], 0.3 + 1.0)


def test_register_pytree_node_follows_jax():
    class Point:
        def __init__(self, x, y, label):
            self.x, self.y, self.label = x, y, label

    ad.register_pytree_node(
        Point, lambda p: ((p.x, p.y), p.label), lambda label, c: Point(*c, label)
    )
    g = ad.grad(lambda p: p.x**2 * p.y)(Point(3.0, 2.0, "a"))
    assert isinstance(g, Point) and g.label == "a"
    assert (float(g.x), float(g.y)) == (12.0, 9.0)
    with pytest.raises(ValueError, match="registered already"):
        ad.register_pytree_node(Point, lambda p: ((), None), lambda a, c: None)


def test_state_dict_and_functional_call_interoperate():
    _ = nn.init.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    x, y = np.random.default_rng(1).standard_normal((5, 2)), np.ones((5, 1))

    def loss(state):
        return nn.functional.mse_loss(nn.functional_call(model, state, x), y)

    g = ad.grad(loss)(model.state_dict())
    assert type(g) is type(model.state_dict()) and list(g) == list(model.state_dict())
    nn.functional.mse_loss(model(x), y).backward()
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(g[name], parameter.grad.numpy(), rtol=1e-13, atol=1e-15)


def test_per_example_gradients_of_a_module_average_to_the_batch_gradient():
    _ = nn.init.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((7, 3)), rng.standard_normal((7, 2))
    per_example = nn.per_example_gradients(model, nn.functional.mse_loss, x, y)
    nn.functional.mse_loss(model(x), y).backward()  # the mean over the batch
    for name, parameter in model.named_parameters():
        assert per_example[name].shape == (7, *parameter.shape)
        np.testing.assert_allclose(
            per_example[name].mean(axis=0), parameter.grad.numpy(), rtol=0, atol=1e-12
        )
    row = nn.functional_call  # the fourth example alone, by an ordinary reverse pass
    state = {n: p.detach().numpy() for n, p in model.named_parameters()}
    alone = ad.grad(lambda s: nn.functional.mse_loss(row(model, s, x[3:4]), y[3:4]))(state)
    for name in state:
        np.testing.assert_allclose(per_example[name][3], alone[name], rtol=0, atol=1e-12)
    with pytest.raises(TypeError, match="one-hot"):
        nn.per_example_gradients(model, nn.functional.mse_loss, x, np.zeros(7, dtype=int))


@pytest.mark.parametrize("mode", MODES)
def test_has_aux_returns_the_auxiliary_data_without_derivatives(mode):
    def f(x):
        y = ad.sin(x)
        return ad.sum(y * y), {"y": y, "note": "kept"}

    x = np.array([0.2, 0.9])
    g, aux = ad.grad(f, has_aux=True, mode=mode)(x)
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x), rtol=1e-14)
    assert type(aux["y"]) is np.ndarray and aux["note"] == "kept"
    np.testing.assert_allclose(aux["y"], np.sin(x))
    (value, aux), g2 = ad.value_and_grad(f, has_aux=True, mode=mode)(x)
    np.testing.assert_allclose(value, np.sum(np.sin(x) ** 2))
    np.testing.assert_array_equal(g, g2)


@pytest.mark.parametrize("jacobian", [ad.jacfwd, ad.jacrev])
def test_has_aux_on_jacobians_and_vjp(jacobian):
    jac, aux = jacobian(lambda x: (x**2, x + 1), has_aux=True)(np.array([1.0, 3.0]))
    np.testing.assert_array_equal(jac, np.diag([2.0, 6.0]))
    assert type(aux) is np.ndarray and aux.tolist() == [2.0, 4.0]
    value, pullback, aux = ad.vjp(lambda x: (x**2, x + 1), np.array([1.0, 3.0]), has_aux=True)
    np.testing.assert_array_equal(value, [1.0, 9.0])
    np.testing.assert_array_equal(aux, [2.0, 4.0])
    np.testing.assert_array_equal(pullback(np.ones(2))[0], [2.0, 6.0])


@pytest.mark.parametrize("mode", MODES)
def test_stop_gradient_has_zero_derivative_in_every_mode(mode):
    # d/dx [x * c] with c = stop_gradient(x) is c, not 2x.
    assert float(ad.grad(lambda x: x * ad.stop_gradient(x), mode=mode)(3.0)) == 3.0
    assert float(ad.stop_gradient(3.0)) == 3.0


def test_stop_gradient_in_second_order_and_vmap():
    h = ad.hessian(lambda x: x**2 * ad.stop_gradient(x) ** 2)(2.0)
    assert float(h) == 8.0  # 2 * c with c = 4
    g = ad.vmap(ad.grad(lambda x: x * ad.stop_gradient(x)))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0])


@pytest.mark.parametrize("mode", MODES)
def test_repeated_argnums_give_the_same_gradient_in_every_mode(mode):
    """JAX's behaviour: a position named twice gets its derivative twice (issue 21, item 4)."""
    g = ad.grad(lambda x, y: x * y, argnums=(0, 0, 1), mode=mode)(2.0, 3.0)
    assert [float(v) for v in g] == [3.0, 3.0, 2.0]
    j = ad.jacobian(
        lambda x, y: x * y, argnums=(1, 1), mode="reverse" if mode == "reverse" else mode
    )
    assert [float(v) for v in j(2.0, 3.0)] == [2.0, 2.0]
    assert [float(v) for v in ad.jacrev(lambda x, y: x * y, argnums=(0, 0))(2.0, 3.0)] == [3.0, 3.0]


def forgets_return(x):
    ad.sum(x * x)


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: ad.grad(f),
        lambda f: ad.grad(f, mode="forward"),
        lambda f: ad.grad(f, mode="symbolic"),
        lambda f: ad.value_and_grad(f),
        ad.jacrev,
        ad.jacfwd,
        lambda f: ad.jacobian(f, mode="symbolic"),
        ad.hessian,
        lambda f: ad.hessian(f, mode="symbolic"),
        lambda f: lambda x: ad.vjp(f, x),
        lambda f: lambda x: ad.jvp(f, (x,), (x,)),
        lambda f: ad.vmap(f),
    ],
)
def test_a_function_that_returns_none_is_refused(transform):
    """Issue 21, item 5: None is an error, never a zero gradient."""
    with pytest.raises(TypeError, match="forget a `return`"):
        transform(forgets_return)(np.array([1.0, 2.0]))


def test_an_output_that_does_not_depend_on_the_inputs_is_fine():
    assert float(ad.grad(lambda x: 5.0)(1.0)) == 0.0
    np.testing.assert_array_equal(ad.jacrev(lambda x: np.ones(2))(np.ones(3)), np.zeros((2, 3)))


def test_check_grad_refuses_a_function_that_returns_none():
    with pytest.raises(TypeError, match="forget a `return`"):
        ad.check_grad(forgets_return, np.array([1.0, 2.0]))


@pytest.mark.parametrize("mode", MODES)
def test_none_as_a_differentiated_argument_is_refused(mode):
    with pytest.raises(TypeError, match="argument 0 is None"):
        ad.grad(lambda x: x * x, mode=mode)(None)
    # A None inside a container is a static leaf.
    assert ad.grad(lambda p: p[0] * 2.0, mode=mode)((1.0, None))[1] is None


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_grad_of_a_tuple_output_points_to_jacobian_and_has_aux(mode):
    with pytest.raises(TypeError, match=r"jacobian.*has_aux=True"):
        ad.grad(lambda x: (x * x, x), mode=mode)(2.0)


def test_check_grad_and_compare_take_pytrees():
    report = ad.check_grad(model_loss, params(), X, argnums=0)
    assert report.passed
    assert "p_layers_0_weight" in str(report)
    comparison = ad.compare(model_loss, params(), X, argnums=0)
    assert all(row.passed for row in comparison.rows)


def test_submodules_load_lazily_on_first_use():
    code = (
        "import sys, adcompare as ad\n"
        "names = ['testing', 'graph', 'nn', 'optim', 'adbench', 'bench']\n"
        "print(any(f'adcompare.{n}' in sys.modules for n in names))\n"
        "print(all(getattr(ad, n).__name__ == f'adcompare.{n}' for n in names + ['symbolic']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ad.nope


def test_compile_takes_pytrees_and_refuses_another_structure():
    compiled = ad.compile(model_loss, params(), X)
    other = params()
    other["layers"][0] = Layer(other["layers"][0].weight * 0.5, other["layers"][0].bias + 1.0)
    value, g = compiled.value_and_grad(other, X)
    np.testing.assert_allclose(value, model_loss(other, X), rtol=1e-14)
    want = ad.grad(model_loss)(other, X)
    np.testing.assert_allclose(flatten_gradient(g), flatten_gradient(want), rtol=1e-13)
    assert g["name"] is None and isinstance(g["layers"][0], Layer)
    with pytest.raises(TypeError, match="static leaf 'other'"):
        compiled({**params(), "name": "other"}, X)
    with pytest.raises(TypeError, match="compile again for the new structure"):
        compiled({**params(), "extra": 1.0}, X)


@pytest.mark.parametrize("mode", MODES[:2])
def test_a_ragged_tuple_of_numbers_is_a_container_not_an_array_literal(mode):
    # autograd's check_grads passes ((x,), v): numpy cannot read it as one array.
    f = lambda p: p[0][0] * p[0][1] + 3.0 * p[1] ** 2
    g = ad.grad(f, mode=mode)(((1.5, 2.0), 0.5))
    np.testing.assert_allclose(g[0], [2.0, 1.5])  # d/dx of x·y: y, x
    assert g[1] == pytest.approx(3.0)  # d/dv of 3v²: 6v
    leaves, _ = ad.tree_flatten(((1.0,), 2.0, [[1, 2], [3, 4]]))
    assert leaves == [(1.0,), 2.0, [[1, 2], [3, 4]]]  # rectangular literals stay one leaf
