"""Views share their base's version counter: a write through any alias is caught.

A basic slice, a reshape or a transpose shares memory with its input. As in
PyTorch, the tensor and all its views count in-place writes together, so a
write through any of them after a value was saved for backward makes
``backward`` raise instead of returning a wrong gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad

MODIFIED = "modified by an in-place operation"


def test_a_write_on_the_base_after_a_slice_was_saved_is_caught():
    # Issue 21's example: without the check, w.grad = [0.878, 1.0, 0], although
    # cos(w[1]) = 0.540 at the values sin read.
    w = ad.Tensor([0.5, 1.0, 1.5], requires_grad=True)
    loss = ad.sum(ad.sin(w[0:2]))
    with ad.no_grad():
        w -= 1.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_a_write_on_the_base_after_a_reshape_was_saved_is_caught():
    w = ad.Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    square = ad.reshape(w, (2, 2))
    loss = ad.sum(square * square)
    with ad.no_grad():
        w *= 2
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_a_write_through_a_transpose_after_the_base_was_saved_is_caught():
    w = ad.Tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    loss = ad.sum(ad.sin(w))
    with ad.no_grad():
        w.T[0] += 1.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_a_write_through_a_slice_of_a_computed_tensor_is_caught():
    x = ad.Tensor([0.1, 0.2, 0.3], requires_grad=True)
    y = ad.exp(x)  # exp's rule reads its output y
    loss = ad.sum(y)
    with ad.no_grad():
        y[1:][0] = 7.0
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_a_write_through_a_view_of_a_view_is_caught():
    w = ad.Tensor(np.arange(1.0, 13.0), requires_grad=True)
    loss = ad.sum(ad.log(w))
    inner = ad.transpose(ad.reshape(w, (3, 4)))[1:3]
    with ad.no_grad():
        inner *= 0.5
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_a_write_on_the_base_invalidates_a_value_saved_from_a_view_of_a_view():
    w = ad.Tensor(np.linspace(0.1, 1.2, 12), requires_grad=True)
    corner = ad.reshape(w, (3, 4))[1:, :2]
    loss = ad.sum(ad.sin(corner))
    w.detach()[5] = 0.0  # a detached tensor shares the data, as in PyTorch
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


def test_the_error_says_what_to_do():
    w = ad.Tensor([0.5, 1.0], requires_grad=True)
    loss = ad.sum(ad.sin(w[0:1]))
    with ad.no_grad():
        w += 1.0
    with pytest.raises(RuntimeError, match=r"\.clone\(\)|out-of-place"):
        loss.backward()


def test_a_write_on_a_view_that_no_saved_value_reads_is_allowed():
    # sum's rule reads nothing and mul by a constant reads only the constant:
    # the write changes no saved value, so backward is right (PyTorch allows it).
    w = ad.Tensor([0.5, 1.0, 1.5], requires_grad=True)
    loss = ad.sum(3.0 * w[0:2])
    with ad.no_grad():
        w -= 1.0
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0, 0.0])


def test_a_write_on_an_unrelated_tensor_is_allowed():
    w = ad.Tensor([0.5, 1.0, 1.5], requires_grad=True)
    copy = w * 1.0  # new memory: writing it changes nothing sin saved
    loss = ad.sum(ad.sin(w[0:2]))
    with ad.no_grad():
        copy[0:2] -= 1.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [np.cos(0.5), np.cos(1.0), 0.0], rtol=1e-15)


def test_a_gradient_through_views_is_right_when_nothing_is_written():
    w = ad.Tensor(np.arange(1.0, 7.0), requires_grad=True)
    square = ad.transpose(ad.reshape(w, (2, 3)))[0:2]  # w[0], w[3], w[1], w[4]
    ad.sum(square * square).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 0.0, 8.0, 10.0, 0.0])


def test_a_copy_does_not_share_the_counter():
    # Fancy indexing copies: writing the copy leaves the saved base alone.
    w = ad.Tensor([0.5, 1.0, 1.5], requires_grad=True)
    loss = ad.sum(ad.sin(w))
    picked = w[[0, 2]]
    with ad.no_grad():
        picked *= 2.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos([0.5, 1.0, 1.5]), rtol=1e-15)


def test_a_write_on_the_input_of_a_rule_that_reads_only_its_output_is_allowed():
    # exp's rule reads exp(w), not w: the gradient is the saved output (PyTorch too).
    w = ad.Tensor(np.arange(1.0, 7.0).reshape(2, 3) / 4, requires_grad=True)
    expected = np.exp(w.detach().numpy())
    loss = ad.sum(ad.exp(w))
    with ad.no_grad():
        w.T[0] += 1.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-15)


def test_a_reshape_that_copies_does_not_share_the_counter():
    # Reshaping a transpose to one axis needs a copy (numpy makes one): writing the
    # copy leaves the memory sin saved alone, so backward is allowed and right.
    w = ad.Tensor(np.arange(1.0, 7.0).reshape(2, 3) / 4, requires_grad=True)
    loss = ad.sum(ad.sin(w))
    flat = ad.reshape(w.T, (6,))
    with ad.no_grad():
        flat *= 2.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos(np.arange(1.0, 7.0).reshape(2, 3) / 4))
