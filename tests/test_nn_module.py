"""Module bookkeeping: registration, names, printing, modes, saving and loading."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad
from adcompare import nn


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.array([2.0]))
        self.body = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2, bias=False))
        self.head = nn.Linear(2, 1)
        self.note = "not a parameter"

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


def test_parameters_register_in_assignment_order_with_pytorch_names():
    model = TwoLayers()
    names = [name for name, _ in model.named_parameters()]
    assert names == [
        "scale",
        "body.0.weight",
        "body.0.bias",
        "body.2.weight",
        "head.weight",
        "head.bias",
    ]
    shapes = [p.shape for p in model.parameters()]
    assert shapes == [(1,), (4, 3), (4,), (2, 4), (1, 2), (1,)]
    assert list(model.state_dict()) == names
    assert [type(m).__name__ for m in model.children()] == ["Sequential", "Linear"]
    module_names = [name for name, _ in model.named_modules()]
    assert module_names == ["", "body", "body.0", "body.1", "body.2", "head"]


def test_a_shared_parameter_is_listed_once():
    layer = nn.Linear(2, 2)
    model = nn.Sequential(layer, nn.ReLU(), layer)
    assert len(list(model.parameters())) == 2
    assert len(list(model.modules())) == 3  # Sequential, Linear once, ReLU


def test_reassigning_an_attribute_moves_it_between_registries():
    model = TwoLayers()
    model.head = "plain value"
    assert "head.weight" not in dict(model.named_parameters())
    model.head = nn.Linear(2, 1)
    assert "head.weight" in dict(model.named_parameters())
    del model.head
    assert not hasattr(model, "head")
    with pytest.raises(TypeError, match=r"nn\.Parameter"):
        model.scale = ad.Tensor([1.0])


def test_missing_attribute_raises_attribute_error_so_hasattr_works():
    model = TwoLayers()
    assert hasattr(model, "body") and hasattr(model, "scale") and hasattr(model, "note")
    assert not hasattr(model, "tail")
    with pytest.raises(AttributeError, match="'TwoLayers' object has no attribute 'tail'"):
        _ = model.tail
    assert getattr(model, "tail", None) is None


def test_forgetting_super_init_is_explained():
    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter([1.0])

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Broken()


def test_module_without_forward_says_so():
    with pytest.raises(NotImplementedError, match="define forward"):
        nn.Module()(1.0)


def test_nested_repr_matches_pytorch_layout():
    assert repr(TwoLayers()) == (
        "TwoLayers(\n"
        "  (body): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "    (1): Tanh()\n"
        "    (2): Linear(in_features=4, out_features=2, bias=False)\n"
        "  )\n"
        "  (head): Linear(in_features=2, out_features=1, bias=True)\n"
        ")"
    )
    assert repr(nn.CrossEntropyLoss(reduction="sum")) == "CrossEntropyLoss(reduction='sum')"


def test_train_and_eval_reach_every_submodule():
    model = TwoLayers().eval()
    assert not any(m.training for m in model.modules())
    assert model.train() is model
    assert all(m.training for m in model.modules())


def test_linear_layout_and_initialisation_follow_pytorch():
    layer = nn.Linear(50, 40, generator=np.random.default_rng(5))
    bound = 1 / math.sqrt(50)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert weight.shape == (40, 50) and bias.shape == (40,)
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    # Uniform on ±bound has standard deviation bound/√3; 2,000 draws pin it to a few percent.
    assert abs(weight.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.is_leaf
    same = nn.Linear(50, 40, generator=np.random.default_rng(5))
    np.testing.assert_array_equal(same.weight.detach().numpy(), weight)
    with pytest.raises(ValueError, match="in_features must be a positive integer"):
        nn.Linear(0, 3)


def test_parameter_is_a_leaf_tensor_that_requires_grad():
    p = nn.Parameter(np.array([1, 2]))
    assert isinstance(p, ad.Tensor) and p.requires_grad and p.is_leaf
    assert p.dtype == np.float64
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.]")
    y = p * 3
    assert type(y) is ad.Tensor and not y.is_leaf


def test_state_dict_round_trip_reproduces_outputs():
    nn.init.manual_seed(1)
    source = TwoLayers()
    nn.init.manual_seed(2)
    target = TwoLayers()
    x = np.random.default_rng(0).normal(size=(5, 3))
    with ad.no_grad():
        before = target(x).numpy()
        expected = source(x).numpy()
    assert not np.allclose(before, expected)
    target.load_state_dict(source.state_dict())
    with ad.no_grad():
        np.testing.assert_array_equal(target(x).numpy(), expected)
    # Loading copies: changing the source afterwards leaves the target alone.
    with ad.no_grad():
        source.head.bias += 1.0
        np.testing.assert_array_equal(target(x).numpy(), expected)


def test_state_dict_shares_memory_with_the_parameters_as_in_pytorch():
    layer = nn.Linear(2, 1)
    state = layer.state_dict()
    with ad.no_grad():
        layer.bias -= 1.0
    np.testing.assert_array_equal(state["bias"].numpy(), layer.bias.detach().numpy())


def test_load_state_dict_names_missing_unexpected_and_misshapen_keys():
    layer = nn.Linear(2, 3)
    good = {name: t.numpy().copy() for name, t in layer.state_dict().items()}
    with pytest.raises(RuntimeError, match=r"missing key.*bias"):
        layer.load_state_dict({"weight": good["weight"]})
    with pytest.raises(RuntimeError, match=r"unexpected key.*extra"):
        layer.load_state_dict({**good, "extra": np.zeros(1)})
    with pytest.raises(RuntimeError, match=r"size mismatch for weight.*\(2, 3\).*\(3, 2\)"):
        layer.load_state_dict({**good, "weight": np.zeros((2, 3))})
    before = layer.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError):
        layer.load_state_dict({**good, "weight": np.ones((3, 2)), "bias": np.zeros(2)})
    np.testing.assert_array_equal(layer.weight.detach().numpy(), before)  # nothing half-loaded
    layer.load_state_dict({"bias": np.zeros(3)}, strict=False)
    np.testing.assert_array_equal(layer.bias.detach().numpy(), np.zeros(3))


def test_zero_grad_sets_none_or_zeros():
    model = TwoLayers()
    model(np.ones((2, 3))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    for p in model.parameters():
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape))
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_evaluation_under_no_grad_records_nothing():
    model = TwoLayers()
    with ad.count() as cost, ad.no_grad():
        out = model(np.ones((4, 3)))
    assert cost.tape_records == 0 and cost.ops["reverse"] == 0
    assert not out.requires_grad and out.grad_fn is None


def test_sequential_indexing_and_flatten():
    model = nn.Sequential(nn.Flatten(), nn.Linear(6, 2), nn.Sigmoid())
    assert len(model) == 3 and isinstance(model[-1], nn.Sigmoid)
    assert [type(m).__name__ for m in model[1:]] == ["Linear", "Sigmoid"]
    x = np.arange(24.0).reshape(4, 2, 3)
    np.testing.assert_array_equal(nn.Flatten()(x), x.reshape(4, 6))
    np.testing.assert_array_equal(nn.Flatten(0, 1)(x), x.reshape(8, 3))
    assert model(x).shape == (4, 2)
    with pytest.raises(TypeError, match="not a Module"):
        nn.Sequential(nn.ReLU(), np.tanh)
