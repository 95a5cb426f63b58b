"""Forward-mode replay: ``compile(f, mode="forward")`` against eager ``jacfwd``, guards."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad

from .opcases import case_id, draw, op_cases

CASES = [case for case in op_cases() if case[0].nargs is None or case[0].differentiable]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_replays_value_and_jacobian_at_new_inputs(case):
    op, shapes, params = case
    recorded_at, params = draw(op, shapes, params, seed=1)
    new_inputs, _ = draw(op, shapes, None, seed=3)
    positions = tuple(range(len(shapes))) if op.nargs is None else op.differentiable
    f = lambda *args: op.fn(*args, **params)
    compiled = ad.compile(f, *recorded_at, argnums=positions, mode="forward")
    value, jacobians = compiled.value_and_jacobian(*new_inputs)
    eager_jacobians = ad.jacfwd(f, argnums=positions)(*new_inputs)
    np.testing.assert_allclose(value, f(*new_inputs), rtol=1e-12, atol=1e-12)
    for got, expected in zip(jacobians, eager_jacobians):
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled(*new_inputs), value, rtol=1e-12, atol=1e-12)


def _mixed(x):
    return ad.tanh(x[:3] * x[1:4]) + ad.exp(ad.sin(x[4:]) * 0.5)


def test_chunks_of_lanes_give_the_whole_jacobian():
    # 7 inputs in chunks of 3: three replays, the last with two padding lanes.
    x = np.linspace(-1.0, 1.0, 7)
    compiled = ad.compile(_mixed, x, mode="forward", chunk_size=3)
    point = np.linspace(0.2, 1.4, 7)
    expected = ad.jacfwd(_mixed)(point)
    np.testing.assert_allclose(compiled.jacobian(point), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(compiled.jacobian(point), ad.jacrev(_mixed)(point), rtol=1e-12)
    assert compiled.recordings == 1


def test_jvp_replays_one_direction_or_several_lanes():
    compiled = ad.compile(_mixed, np.ones(7), mode="forward")
    point = np.linspace(0.2, 1.4, 7)
    direction = np.random.default_rng(0).standard_normal(7)
    value, tangent = compiled.jvp((point,), (direction,))
    eager_value, eager_tangent = ad.jvp(_mixed, (point,), (direction,))
    np.testing.assert_allclose(value, eager_value, rtol=1e-15)
    np.testing.assert_allclose(tangent, eager_tangent, rtol=1e-13)
    directions = np.random.default_rng(1).standard_normal((2, 7))
    _, tangents = compiled.jvp((point,), (directions,))
    jacobian = ad.jacfwd(_mixed)(point)
    np.testing.assert_allclose(tangents, directions @ jacobian.T, rtol=1e-12)
    with pytest.raises(ValueError, match=r"does not fit argument 0 of shape \(7,\)"):
        compiled.jvp((point,), (np.ones(3),))


def test_a_guard_catches_a_branch_flip_in_forward_mode():
    def f(x):
        if ad.sum(x) > 0:
            return x**2
        return -(x**3)

    compiled = ad.compile(f, np.array([1.0, 2.0]), mode="forward")
    assert compiled.program.guards == 1
    np.testing.assert_allclose(compiled.jacobian(np.array([3.0, 1.0])), np.diag([6.0, 2.0]))
    assert compiled.recordings == 1
    # The sum turns negative: the recorded branch would give diag(2x); -3x² is right.
    np.testing.assert_allclose(compiled.jacobian(np.array([-2.0, 1.0])), np.diag([-12.0, -3.0]))
    assert compiled.recordings == 2


def test_masks_and_selected_shapes_follow_new_inputs_in_forward_mode():
    f = lambda x: ad.relu(x) * ad.abs(x) + ad.maximum(x, 0.5 * x)
    compiled = ad.compile(f, np.array([1.0, -2.0, 3.0]), mode="forward")
    point = np.array([-1.5, 2.0, -0.25])
    np.testing.assert_allclose(compiled.jacobian(point), ad.jacfwd(f)(point), rtol=1e-14)
    assert compiled.recordings == 1
    # How many entries x[x > 0] holds is a shape guard.
    g = lambda x: ad.sum(x[x > 0] ** 2) * ad.mean(x[x > 0])
    compiled = ad.compile(g, np.array([1.0, -3.0, 2.0]), mode="forward")
    point = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(compiled.jacobian(point), ad.grad(g)(point), rtol=1e-14)
    assert compiled.recordings == 2


def test_closed_over_arrays_are_read_at_replay_in_forward_mode():
    weights = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = lambda x: weights @ ad.sin(x)
    compiled = ad.compile(f, np.ones(2), mode="forward")
    weights *= -0.5
    point = np.array([0.3, -0.2])
    np.testing.assert_allclose(compiled.jacobian(point), weights * np.cos(point), rtol=1e-15)
    np.testing.assert_allclose(compiled(point), weights @ np.sin(point), rtol=1e-15)


def test_several_arguments_and_constant_outputs():
    f = lambda x, y: ad.sum(x * y) * y
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0, 0.5])[:2]
    compiled = ad.compile(f, x, y, argnums=(0, 1), mode="forward")
    jx, jy = compiled.jacobian(x + 1, y * 2)
    ex, ey = ad.jacfwd(f, argnums=(0, 1))(x + 1, y * 2)
    np.testing.assert_allclose(jx, ex, rtol=1e-15)
    np.testing.assert_allclose(jy, ey, rtol=1e-15)
    constant = ad.compile(lambda x: np.ones(3), np.ones(2), mode="forward")
    np.testing.assert_array_equal(constant.jacobian(np.zeros(2)), np.zeros((3, 2)))


def test_each_mode_refuses_the_other_modes_calls():
    forward = ad.compile(ad.sin, np.ones(2), mode="forward")
    with pytest.raises(TypeError, match='value_and_jacobian, or compile f with mode="reverse"'):
        forward.grad(np.ones(2))
    reverse = ad.compile(lambda x: ad.sum(ad.sin(x)), np.ones(2))
    with pytest.raises(TypeError, match='value_and_grad, or compile f with mode="forward"'):
        reverse.jacobian(np.ones(2))
    with pytest.raises(ValueError, match='mode must be "reverse" or "forward"'):
        ad.compile(ad.sin, np.ones(2), mode="sideways")
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        ad.compile(ad.sin, np.ones(2), mode="forward", chunk_size=0)
    with pytest.raises(TypeError, match="not pytrees"):
        ad.compile(lambda p: p["w"], {"w": np.ones(2)}, mode="forward")
