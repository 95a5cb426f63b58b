"""numpy functions and operators meet boxes: dispatch, or a clear refusal."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad


def test_ndarray_on_the_left_gives_a_box():
    a = np.array([1.0, 2.0])
    t = ad.Tensor([3.0, 5.0], requires_grad=True)
    out = a - t
    assert isinstance(out, ad.Tensor) and out.grad_fn.name == "SubBackward"
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [-1.0, -1.0])
    d = a * ad.Dual([3.0, 5.0], [1.0, 0.0])
    assert isinstance(d, ad.Dual)
    np.testing.assert_array_equal(d.tangent, [1.0, 0.0])
    assert isinstance(2.0**t, ad.Tensor) and isinstance(a @ t, ad.Tensor)


def test_numpy_functions_dispatch_to_the_op_set():
    t = ad.Tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    y = np.sum(np.sin(t) * np.exp(t), axis=0)
    assert isinstance(y, ad.Tensor)
    np.mean(y).backward()
    x = t.detach().numpy()
    np.testing.assert_allclose(t.grad.numpy(), 0.5 * np.exp(x) * (np.cos(x) + np.sin(x)))
    d = np.maximum(ad.Dual(2.0, 1.0), 1.0)
    assert d.tangent == 1.0
    assert np.abs(ad.Dual(-2.0, 1.0)).tangent == -1.0


def test_functions_without_rules_refuse_to_drop_the_derivative():
    t = ad.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"np\.unwrap.*adcompare\.stop_gradient"):
        np.unwrap(t)
    # What the message recommends works, in both modes.
    np.testing.assert_array_equal(np.unwrap(ad.stop_gradient(t)), [1.0, 2.0])
    for mode in ("reverse", "forward"):
        constant = lambda v: float(np.unwrap(ad.stop_gradient(v))[0]) * v
        assert ad.grad(constant, mode=mode)(np.array([3.0]))[0] == 3.0
    with pytest.raises(TypeError, match=r"np\.spacing.*drop"):
        np.spacing(ad.Dual(1.5, 1.0))
    with pytest.raises(TypeError, match=r"adcompare\.sum"):
        np.add.reduce(t)
    # Values that carry no derivative go through numpy as usual.
    assert np.allclose(ad.Tensor([1.0, 2.0]), [1.0, 2.0])
    np.testing.assert_array_equal(np.unwrap(ad.Tensor([1.0, 2.0])), [1.0, 2.0])


def test_comparisons_give_plain_booleans():
    t = ad.Tensor([1.0, 3.0], requires_grad=True)
    mask = t > 2.0
    assert isinstance(mask, np.ndarray) and mask.tolist() == [False, True]
    assert (ad.Dual(1.0, 1.0) == 1.0).item() is True
    assert np.isfinite(t).all()


def test_methods_follow_numpy():
    t = ad.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert t.sum(axis=0).shape == (3,)
    assert t.mean().item() == 2.5
    assert t.reshape(3, 2).shape == (3, 2) and t.reshape((6,)).shape == (6,)
    assert t.T.shape == (3, 2) and t.transpose(1, 0).shape == (3, 2)
    assert t.max(axis=1).detach().numpy().tolist() == [2.0, 5.0]
    assert len(t) == 2 and [row.shape for row in t] == [(3,), (3,)]
    assert t[np.arange(2), np.array([2, 0])].detach().numpy().tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="0-d"):
        len(ad.Tensor(1.0))


def test_shape_errors_name_the_op_and_both_shapes():
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(2, 3\)"):
        ad.Tensor(np.ones((2, 3))) @ np.ones((2, 3))
    with pytest.raises(ValueError, match=r"multiply.*\(3,\).*\(4,\)"):
        ad.Tensor(np.ones(3), requires_grad=True) * np.ones(4)
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4,\)"):
        ad.reshape(np.ones((2, 3)), (4,))
    with pytest.raises(ValueError, match=r"axis 2 is out of range.*rank 2"):
        ad.sum(np.ones((2, 3)), axis=2)
    with pytest.raises(IndexError, match=r"getitem.*\(3,\)"):
        ad.Tensor(np.ones(3))[5]
