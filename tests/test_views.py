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


# --- recorded writes through an alias: every tensor sharing the memory follows ------------------


def test_a_recorded_write_through_a_view_reaches_the_base():
    # y[0:2] becomes x[0:2]², so d sum(y) / dx = [2 x0, 2 x1, 1] (PyTorch too).
    x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    view = y[0:2]
    view *= x[0:2]
    ad.sum(y).backward()
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 4.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 1.0])


def test_a_recorded_write_on_the_base_reaches_its_views():
    # The view is y[0:2] = x[0:2]² after the write: gradient [2 x0, 2 x1, 0].
    x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    view = y[0:2]
    y *= x
    ad.sum(view).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 0.0])


def test_a_recorded_write_through_a_reshaped_transpose_reaches_every_alias():
    # y = x (2×3); the write multiplies the memory of y.T's first row (y[:, 0]) by
    # w, so sum(y * c) = Σ c x with c[:, 0] scaled by w: the gradient is c there.
    x = ad.Tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    w = ad.Tensor([10.0, 20.0], requires_grad=True)
    c = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = x * 1.0
    first_row_of_transpose = ad.transpose(y)[0]
    first_row_of_transpose *= w
    flat = ad.reshape(y, (6,))
    ad.sum(y * c).backward()
    expected = c.copy()
    expected[:, 0] *= [10.0, 20.0]
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(w.grad.numpy(), c[:, 0] * [1.0, 4.0])  # c · x[:, 0]
    np.testing.assert_array_equal(flat.detach().numpy(), y.detach().numpy().ravel())


def test_a_view_that_does_not_overlap_the_write_keeps_its_graph():
    x = ad.Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 2.0
    left, right = y[0:2], y[2:4]
    left *= x[0:2]
    ad.sum(right).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 2.0, 2.0])


def test_the_augmented_slice_assignment_idiom_is_right():
    # y[0:2] *= 3 is y.__setitem__(s, y[s].__imul__(3)): two recorded writes.
    x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y[0:2] *= 3.0
    ad.sum(y).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 12.0, 6.0])


def test_a_recorded_write_through_a_view_of_a_leaf_is_refused():
    w = ad.Tensor([1.0, 2.0], requires_grad=True)
    view = w[0:1]
    with pytest.raises(RuntimeError, match=r"leaf tensor that requires grad.*no_grad"):
        view *= 2.0
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])  # refused before writing


def test_taking_many_views_keeps_the_alias_list_short():
    # Each view is noted on the shared counter; dead ones are pruned as it grows.
    x = ad.Tensor(np.arange(4.0), requires_grad=True)
    y = x * 1.0
    total = 0.0
    for i in range(1000):
        total = total + ad.sum(y[i % 4 : i % 4 + 1])
    assert len(y._version[1]) < 64
    total.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [250.0, 250.0, 250.0, 250.0])
