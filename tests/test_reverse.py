"""The reverse engine: PyTorch's semantics, its errors, and its memory."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import adcompare as ad
from adcompare.engines.reverse import IN_PLACE_FROM


def test_worked_example_by_one_backward_sweep():
    x = ad.Tensor(2.0, requires_grad=True)
    y = ad.Tensor(3.0, requires_grad=True)
    f = 3 * x**2 + x * y + 5 * y**2
    with ad.count() as cost:
        f.backward()
    assert f.item() == 63.0
    assert (x.grad.item(), y.grad.item()) == (15.0, 32.0)  # 6x + y, x + 10y
    assert cost.sweeps == 1


def test_mean_of_reciprocals_has_gradient_minus_one_over_ten_x_squared():
    values = np.arange(1.0, 11.0)
    x = ad.Tensor(values, requires_grad=True)
    ad.mean(1 / x).backward()
    np.testing.assert_allclose(x.grad.numpy(), -1 / (10 * values**2), rtol=1e-15)


def test_retain_grad_accumulation_and_freed_graph():
    w = ad.Tensor([2.0], requires_grad=True)
    x = ad.Tensor([1.0, 2.0])
    y = x * w
    y.retain_grad()
    loss = ad.mean(y)
    loss.backward(retain_graph=True)
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.5])
    np.testing.assert_array_equal(w.grad.numpy(), [1.5])
    assert x.grad is None
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0])
    with pytest.raises(RuntimeError, match=r"already freed.*retain_graph=True"):
        loss.backward()


def test_leaf_flags_and_contagious_requires_grad():
    a = ad.Tensor([1.0, 2.0], requires_grad=True)
    b = ad.Tensor([3.0, 4.0])
    c = a * b
    assert a.is_leaf and b.is_leaf and not c.is_leaf
    assert c.requires_grad and not b.requires_grad
    assert (b * 2).grad_fn is None
    assert c.grad_fn.name == "MulBackward"
    assert repr(c) == "tensor([3., 8.], grad_fn=<MulBackward>)"
    assert repr(a) == "tensor([1., 2.], requires_grad=True)"
    leaf_record = c.grad_fn.next_functions[0][0]
    assert leaf_record.name == "AccumulateGrad" and leaf_record.variable is a
    assert c.grad_fn.next_functions[1] == (None, 0)


def test_grad_is_assignable_and_accumulates():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])  # 2 * 2x
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        x.grad = np.zeros(3)


def test_backward_on_non_scalar_needs_a_gradient_of_the_right_shape():
    x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match=r"shape \(3,\).*gradient=<array of shape \(3,\)>"):
        y.backward()
    with pytest.raises(ValueError, match=r"gradient has shape \(2,\).*shape \(3,\)"):
        y.backward(np.ones(2))
    y.backward(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 12.0])


def test_backward_without_requires_grad_says_what_to_do():
    with pytest.raises(RuntimeError, match="requires_grad=True"):
        (ad.Tensor(2.0) * 3).backward()
    with ad.no_grad():
        y = ad.Tensor(2.0, requires_grad=True) * 3
    with pytest.raises(RuntimeError, match="no_grad"):
        y.backward()


def test_in_place_change_of_a_saved_value_is_detected():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y += 1  # exp's rule needs its output, which this overwrites
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    b = x * 2
    c = b * b
    b[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        c.sum().backward()


def test_in_place_ops_are_differentiated():
    x = ad.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y *= x  # y = x², d/dx = 2x
    y[1] = 10.0 * x[0]  # y = [x0², 10 x0, x2²]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 1.0 + 10.0, 0.0, 2 * 3.0])
    np.testing.assert_allclose(y.detach().numpy(), [1.0, 10.0, 9.0])


def test_in_place_on_a_leaf_needs_no_grad():
    w = ad.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        w -= 1.0
    with ad.no_grad():
        w -= 1.0
    assert w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 1.0])
    with pytest.raises(IndexError, match="repeats positions"):
        v = w * 1.0
        v[[0, 0]] = 1.0


def test_long_chain_backpropagates_without_recursion():
    x = ad.Tensor(1.5, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = -y
    y.backward()
    assert x.grad.item() == 1.0  # (-1) ** 1_000_000


def test_saved_values_are_freed_unless_retained():
    x = ad.Tensor(np.ones(1000), requires_grad=True)
    y = ad.sin(x) * x
    loss = y.sum()
    nodes = [y.grad_fn, y.grad_fn.next[0]]
    assert all(n.saved_bytes == 8000 * 2 for n in nodes[:1])  # sin(x) and x
    assert nodes[1].saved_bytes == 8000  # sin keeps x
    loss.backward(retain_graph=True)
    assert nodes[1].saved_bytes == 8000
    loss.backward()
    assert [n.saved_bytes for n in nodes] == [0, 0]


def test_graph_out_of_scope_is_collected_without_the_cycle_collector():
    gc.disable()
    try:
        x = ad.Tensor(np.ones(3), requires_grad=True)
        y = (x * 2).exp().sum()
        y_record = weakref.ref(y.grad_fn)
        first_record = weakref.ref(y.grad_fn.next[0].next[0])
        del y
        assert y_record() is None and first_record() is None
        z = x * x
        z.retain_grad()
        z_ref = weakref.ref(z)
        record = weakref.ref(z.grad_fn)
        del z
        assert z_ref() is None and record() is None
    finally:
        gc.enable()


def test_no_grad_is_thread_local_and_a_decorator():
    w = ad.Tensor(1.0, requires_grad=True)
    seen = {}

    def other_thread():
        seen["enabled"] = ad.is_grad_enabled()

    with ad.no_grad():
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert not ad.is_grad_enabled()
    assert seen["enabled"] and ad.is_grad_enabled()

    @ad.no_grad()
    def untracked(t):
        return t * 2

    assert not untracked(w).requires_grad
    assert ad.is_grad_enabled()
    with ad.no_grad():
        with ad.enable_grad():
            assert (w * 2).requires_grad
        assert not (w * 2).requires_grad


def test_detach_numpy_and_asarray_never_drop_a_derivative_silently():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\.detach\(\)\.numpy\(\)"):
        x.numpy()
    with pytest.raises(RuntimeError, match="detach"):
        np.asarray(x * 2)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d.data[0] = 7.0  # detach shares memory, as in PyTorch
    assert x.data[0] == 7.0
    assert np.asarray(d).tolist() == [7.0, 2.0]


def test_integer_inputs_promote_and_float32_stays():
    i = ad.Tensor([1, 2, 3], requires_grad=True)
    assert i.dtype == np.float64
    assert ad.Tensor([1, 2]).dtype == np.int64
    f32 = ad.Tensor(np.ones(3, np.float32), requires_grad=True)
    (f32 * f32).sum().backward()
    assert f32.grad.dtype == np.float32
    assert repr(f32) == "tensor([1., 1., 1.], dtype=float32, requires_grad=True)"
    with pytest.raises(RuntimeError, match="leaf"):
        (f32 * 2).requires_grad = False


def test_create_graph_differentiates_the_backward_sweep():
    x = ad.Tensor(3.0, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    first = x.grad
    assert first.item() == 27.0 and first.requires_grad
    x.grad = None
    first.backward()
    assert x.grad.item() == 18.0  # d²/dx² x³ = 6x


def test_autograd_grad_leaves_dot_grad_alone():
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    unused = ad.Tensor(1.0, requires_grad=True)
    y = (x * x * x).sum()
    dx, du = ad.autograd_grad(y, [x, unused], create_graph=True)
    np.testing.assert_array_equal(dx.detach().numpy(), [3.0, 12.0])
    assert du.item() == 0.0 and x.grad is None
    (d2,) = ad.autograd_grad(dx.sum(), [x])
    np.testing.assert_array_equal(d2.numpy(), [6.0, 12.0])


def test_mixing_engines_at_one_level_is_an_error():
    with pytest.raises(TypeError, match="cannot combine a Dual and a Tensor"):
        ad.Dual(1.0, 1.0) * ad.Tensor(2.0)


# Below IN_PLACE_FROM elements the sweep sums cotangents out of place; above, in place.
SIZES = (5, IN_PLACE_FROM + 3)


@pytest.mark.parametrize("n", SIZES)
def test_cotangents_summed_in_place_match_the_hand_gradient_and_leave_inputs_alone(n):
    # Rosenbrock's three reads of x (x[1:], two x[:-1]), an integer index that repeats a
    # position and a retained intermediate: the sweep adds into arrays it owns, in place.
    x0 = np.resize([-1.2, 1.0, 0.5, 2.0, -0.3], n)
    x = ad.Tensor(x0.copy(), requires_grad=True)
    y = x * 1.0
    y.retain_grad()
    f = ad.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2) + ad.sum(y[[0, 0, 4]])
    seed = np.array(1.0)
    f.backward(gradient=seed)
    expected = np.zeros_like(x0)
    expected[:-1] += -400.0 * x0[:-1] * (x0[1:] - x0[:-1] ** 2) - 2.0 * (1.0 - x0[:-1])
    expected[1:] += 200.0 * (x0[1:] - x0[:-1] ** 2)
    expected[[0, 4]] += [2.0, 1.0]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-13)
    np.testing.assert_allclose(y.grad.numpy(), expected, rtol=1e-13)
    assert y.grad.numpy() is not x.grad.numpy()
    assert seed == 1.0


@pytest.mark.parametrize("n", SIZES)
def test_a_retained_cotangent_is_not_changed_by_later_in_place_sums(n):
    x = ad.Tensor(np.arange(float(n)), requires_grad=True)
    y = x * 2.0
    z = y * 1.0
    z.retain_grad()
    total = ad.sum(z[1:]) + ad.sum(z[:-1]) + ad.sum(y[:2])
    total.backward()
    reads = np.full(n, 2.0)
    reads[[0, -1]] = 1.0
    np.testing.assert_allclose(z.grad.numpy(), reads)
    reads[:2] += 1.0
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * reads)


@pytest.mark.parametrize("n, sums_out_of_place", [(SIZES[0], 2), (SIZES[1], 1)])
def test_only_large_cotangent_sums_are_added_in_place(n, sums_out_of_place):
    # y is read three times, so two contributions are summed. Small: each by an op-set
    # add, out of place (numpy's per-call overhead makes that the cheaper way). Large:
    # the first sum makes an array the sweep owns and the second adds into it in place.
    x = ad.Tensor(np.linspace(-1.0, 1.0, n), requires_grad=True)
    y = x * 1.0
    total = ad.sum(ad.sin(y)) + ad.sum(ad.exp(y)) + ad.sum(y)
    with ad.count() as cost:
        total.backward()
    assert cost.by_op["numpy", "add"] == sums_out_of_place
    expected = np.cos(x.data) + np.exp(x.data) + 1.0
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14)


def test_gradients_that_one_cotangent_reaches_twice_get_memory_of_their_own():
    # add passes its cotangent to both inputs unchanged: each leaf's .grad, each captured
    # input and each of two outputs seeded with one array still gets an array of its own.
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    y = ad.Tensor([3.0, 4.0], requires_grad=True)
    seed = np.array([1.0, 10.0])
    (x + y).backward(gradient=seed)
    x.grad.numpy()[0] = 99.0  # an optimizer's in-place update of one gradient
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 10.0])
    seed = np.array([1.0, 10.0])
    middle = x + 0.0
    dmiddle, dx = ad.autograd_grad(middle + y, [middle, x], grad_outputs=seed)
    dmiddle.numpy()[1] = -1.0
    np.testing.assert_array_equal(dx.numpy(), [1.0, 10.0])
    dx_of_first, dy_of_second = ad.autograd_grad([x * 1.0, y * 1.0], [x, y], [seed, seed])
    assert not np.shares_memory(dx_of_first.numpy(), dy_of_second.numpy())


# --- the tape keeps what the positions that need a gradient read ---------------------


def test_a_product_with_a_constant_keeps_the_constant_not_the_tensor():
    c = np.linspace(1.0, 2.0, 1000)
    p = ad.Tensor(np.linspace(-1.0, 1.0, 1000), requires_grad=True)
    with ad.count() as one_side:
        y = ad.sum(c * p)
    q = ad.Tensor(c, requires_grad=True)
    with ad.count() as both_sides:
        ad.sum(q * p)
    assert one_side.tape_bytes == c.nbytes
    assert both_sides.tape_bytes == 2 * c.nbytes
    y.backward()
    np.testing.assert_array_equal(p.grad.numpy(), c)  # d(c·p)/dp = c


def test_a_quotient_by_a_tensor_keeps_the_divisor_and_the_result_not_the_numerator():
    x = np.array([1.0, -2.0, 3.0])
    p = ad.Tensor([2.0, 4.0, -1.0], requires_grad=True)
    with ad.count() as cost:
        y = ad.sum(x / p)
    assert cost.tape_bytes == 2 * x.nbytes  # p and x / p
    y.backward()
    np.testing.assert_allclose(p.grad.numpy(), -x / p.data**2, rtol=1e-15)


def test_changing_a_value_the_tape_did_not_keep_is_allowed():
    # Only q's gradient is needed, and it reads c alone: q may change in place
    # (as in PyTorch); changing c, which the rule reads, is caught.
    p = ad.Tensor([1.0, 2.0], requires_grad=True)
    c = ad.Tensor([3.0, 5.0])
    q = p * 1.0
    y = ad.sum(q * c)
    q += 10.0
    y.backward()
    np.testing.assert_array_equal(p.grad.numpy(), [3.0, 5.0])
    q = p * 1.0
    y = ad.sum(q * c)
    c += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_vjp_reads_must_name_inputs_of_the_op_once_per_position():
    from adcompare.ops.registry import Hints, defop

    with pytest.raises(ValueError, match="one tuple per argument position"):
        defop(
            "bad_reads",
            np.multiply,
            nargs=2,
            jvp=(None, None),
            vjp=(None, None),
            hints=Hints(vjp_reads=(("y",), ("z",))),
        )


def test_gradients_handed_to_two_inputs_have_memory_of_their_own():
    # add passes its cotangent to both inputs unchanged: each gradient still gets
    # its own array, so changing one in place leaves the other alone (PyTorch too).
    x0, y0 = np.ones(3), np.full(3, 2.0)
    weights = np.array([1.0, 2.0, 3.0])
    f = lambda x, y: ad.sum((x + y) * weights)
    x = ad.Tensor(x0, requires_grad=True)
    y = ad.Tensor(y0, requires_grad=True)
    f(x, y).backward()
    by_grad = ad.grad(f, argnums=(0, 1))(x0, y0)
    by_jacrev = ad.jacrev(f, argnums=(0, 1))(x0, y0)
    for first, second in [(x.grad.numpy(), y.grad.numpy()), by_grad, by_jacrev]:
        np.testing.assert_array_equal(first, weights)
        np.testing.assert_array_equal(second, weights)
        first[0] = 99.0
        np.testing.assert_array_equal(second, weights)
