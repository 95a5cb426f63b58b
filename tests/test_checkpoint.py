"""Checkpointing: checkpoint(f), checkpoint.scan and the revolve schedules."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import adcompare as ad
from adcompare.revolve import revolve_actions, revolve_advances, schedule

# --- checkpoint(f) -------------------------------------------------------------------


def layer(x, w):
    return ad.tanh(x * w) * w + ad.sin(x)


def chain(block, x, weights):
    for w in weights:
        x = block(x, w)
    return ad.sum(x * x)


X0 = np.array([0.3, -0.8, 1.1])
WEIGHTS = (1.3, 0.7, -0.4)


def test_checkpointed_gradient_is_bit_identical_to_the_taped_one():
    taped = ad.grad(lambda x: chain(layer, x, WEIGHTS))(X0)
    checked = ad.grad(lambda x: chain(ad.checkpoint(layer), x, WEIGHTS))(X0)
    assert np.array_equal(taped, checked)
    # and both are the derivative: a central difference agrees
    fd = [
        (chain(layer, X0 + 1e-6 * e, WEIGHTS) - chain(layer, X0 - 1e-6 * e, WEIGHTS)).item() / 2e-6
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(checked, fd, rtol=1e-7)


def test_parameters_passed_as_arguments_get_bit_identical_gradients():
    def run(block):
        x = ad.Tensor(X0, requires_grad=True)
        ws = [ad.Tensor(w, requires_grad=True) for w in WEIGHTS]
        chain(block, x, ws).backward()
        return [x.grad.numpy(), *(w.grad.numpy() for w in ws)]

    for taped, checked in zip(run(layer), run(ad.checkpoint(layer))):
        assert np.array_equal(taped, checked)


def test_the_interior_is_not_taped_and_is_recomputed_once_per_sweep():
    x = ad.Tensor(X0, requires_grad=True)
    with ad.count() as forward:
        y = chain(ad.checkpoint(layer), x, WEIGHTS)
    # three checkpoint records and their outputs' square and sum: no tanh, sin, ...
    assert forward.by_op["reverse", "checkpoint"] == 3
    assert forward.by_op["reverse", "tanh"] == 0
    with ad.count() as backward:
        y.backward()
    # layer applies 5 ops (multiply, tanh, multiply, sin, add); each block re-runs once
    assert backward.recomputed_ops == 3 * 5
    assert backward.by_op["reverse", "tanh"] == 3


def test_tuple_inputs_and_outputs():
    def cell(h, c, w):
        return ad.tanh(h * w + c), c * ad.sigmoid(h)

    def loss(h, c, w, wrap):
        for _ in range(3):
            h, c = wrap(cell)(h, c, w)
        return ad.sum(h * c)

    args = (np.array([0.2, -0.5]), np.array([0.4, 0.1]), np.array([0.9, 1.2]))
    taped = ad.grad(lambda *a: loss(*a, lambda f: f), argnums=(0, 1, 2))(*args)
    checked = ad.grad(lambda *a: loss(*a, ad.checkpoint), argnums=(0, 1, 2))(*args)
    for t, c in zip(taped, checked):
        assert np.array_equal(t, c)


def test_nested_checkpoints():
    inner = ad.checkpoint(layer)

    def outer(x, w):
        return inner(inner(x, w), w)

    taped = ad.grad(lambda x: chain(lambda x, w: layer(layer(x, w), w), x, WEIGHTS))(X0)
    x = ad.Tensor(X0, requires_grad=True)
    with ad.count() as cost:
        chain(ad.checkpoint(outer), x, WEIGHTS).backward()
    assert np.array_equal(taped, x.grad.numpy())
    # per outer block, its re-run applies the two inner records, each one op that runs
    # layer on plain arrays (where tanh and sin are ops and numpy does the products
    # and the sum): 3 ops each; then each inner record re-runs layer on a tape: 5 ops
    assert cost.recomputed_ops == 3 * (2 * 3 + 2 * 5)


@pytest.mark.parametrize("mode", ["fwd-over-rev", "rev-over-rev", "rev-over-fwd"])
def test_second_order_through_a_checkpoint(mode):
    taped = ad.hessian(lambda x: chain(layer, x, WEIGHTS), mode=mode)(X0)
    checked = ad.hessian(lambda x: chain(ad.checkpoint(layer), x, WEIGHTS), mode=mode)(X0)
    np.testing.assert_allclose(checked, taped, rtol=1e-13, atol=1e-13)
    assert not np.allclose(taped, 0)


def test_create_graph_through_a_checkpoint():
    def gradient_norm(block):
        x = ad.Tensor(X0, requires_grad=True)
        (g,) = ad.autograd_grad(chain(block, x, WEIGHTS), [x], create_graph=True)
        (h,) = ad.autograd_grad(ad.sum(g * g), [x])
        return h.numpy()

    taped = gradient_norm(layer)
    np.testing.assert_allclose(gradient_norm(ad.checkpoint(layer)), taped, rtol=1e-13)
    # d/dx |∇f|² = 2 H ∇f, by the Hessian from the other composition
    grad = ad.grad(lambda x: chain(layer, x, WEIGHTS))(X0)
    hessian = ad.hessian(lambda x: chain(layer, x, WEIGHTS))(X0)
    np.testing.assert_allclose(taped, 2 * hessian @ grad, rtol=1e-12)


def test_forward_mode_runs_the_function_directly():
    _, tangent = ad.jvp(lambda x: chain(ad.checkpoint(layer), x, WEIGHTS), (X0,), (X0,))
    grad = ad.grad(lambda x: chain(layer, x, WEIGHTS))(X0)
    np.testing.assert_allclose(tangent, grad @ X0, rtol=1e-13)


def test_a_closed_over_tensor_is_refused():
    w = ad.Tensor(2.0, requires_grad=True)
    x = ad.Tensor(X0, requires_grad=True)
    with pytest.raises(TypeError, match=r"pass the tensor as an argument"):
        ad.checkpoint(lambda x: x * w)(x)


# --- the schedule ----------------------------------------------------------------------


@functools.cache
def fewest_advances(steps: int, snapshots: int) -> int:
    """Brute force over every first snapshot position (independent of revolve.py)."""
    if steps == 1:
        return 0
    if snapshots == 1:
        # restore x0 and advance to the step before the last unreversed one, each time
        return sum(range(steps))
    return min(
        j + fewest_advances(steps - j, snapshots - 1) + fewest_advances(j, snapshots)
        for j in range(1, steps)
    )


def test_the_closed_form_equals_the_dynamic_programme():
    for steps in range(1, 70):
        for snapshots in range(1, 7):
            assert revolve_advances(steps, snapshots) == fewest_advances(steps, snapshots)


@pytest.mark.parametrize("snapshots", [1, 2, 3, 5, 8])
def test_the_schedule_is_optimal_and_within_its_snapshots(snapshots):
    for steps in [1, 2, 3, 4, 7, 10, 21, 35, 56, 100, 333]:
        plan = schedule(steps, snapshots)
        assert plan.advances == revolve_advances(steps, snapshots)
        assert plan.reversals == steps
        assert plan.peak_snapshots <= snapshots
        assert [a[1] for a in plan.actions if a[0] == "reverse"] == list(range(steps))[::-1]


def most_advances_of_one_step(plan) -> int:
    counts = np.zeros(plan.steps, dtype=int)
    for action in plan.actions:
        if action[0] == "advance":
            counts[action[1] : action[2]] += 1
    return int(counts.max())


def test_the_binomial_bound_is_tight():
    # β(s, r) = C(s + r, s) steps are the most that s snapshots reverse advancing no
    # step more than r times; one step more makes some step advance r + 1 times.
    for s, r in [(1, 3), (2, 2), (3, 3), (4, 2), (5, 1), (2, 5)]:
        most = math.comb(s + r, s)
        assert most_advances_of_one_step(schedule(most, s)) == r
        assert most_advances_of_one_step(schedule(most + 1, s)) == r + 1
        # at the bound the closed form is r·l - β(s + 1, r - 1)
        assert revolve_advances(most, s) == r * most - math.comb(s + r, s + 1)


def _replay(steps, actions):
    """Execute a schedule symbolically: each action must have the state it needs."""
    held, current, reversed_ = {}, None, []
    for action in actions:
        kind = action[0]
        if kind == "snapshot":
            held[action[1]] = action[1]
            current = action[1] if current is None else current
            assert current == action[1]
        elif kind == "advance":
            assert current == action[1]
            current = action[2]
        elif kind == "restore":
            current = held[action[1]]
        elif kind == "reverse":
            assert current == action[1]
            reversed_.append(action[1])
            current = None
        else:
            del held[action[1]]
    assert not held
    return reversed_


@pytest.mark.parametrize("snapshots", [1, 3, 64, "sqrt"])
def test_every_action_has_the_state_it_needs(snapshots):
    for steps in [1, 2, 9, 50, 101]:
        assert _replay(steps, schedule(steps, snapshots).actions) == list(range(steps))[::-1]


def test_the_sqrt_scheme_holds_about_two_root_n_states():
    for steps in [4, 100, 1000]:
        plan = schedule(steps, "sqrt")
        assert plan.peak_snapshots <= 2 * int(np.ceil(np.sqrt(steps)))
        # every state is recomputed about once: the segments' interiors
        assert plan.advances < 2 * steps


def test_a_long_schedule_is_generated_lazily():
    kinds = {"advance": 0, "reverse": 0}
    for action in revolve_actions(100_000, 64):
        if action[0] in kinds:
            kinds[action[0]] += 1 if action[0] == "reverse" else action[2] - action[1]
    assert kinds == {"advance": revolve_advances(100_000, 64), "reverse": 100_000}


def test_bad_snapshot_counts_are_refused():
    with pytest.raises(ValueError, match="at least one snapshot"):
        schedule(10, 0)
    with pytest.raises(ValueError, match="positive whole number of steps"):
        schedule(0, 3)


# --- checkpoint.scan ---------------------------------------------------------------------

STATE = 20


def decay_step(carry, x, w):
    return carry + 0.05 * ad.tanh(carry * w + x)


def scan_run(steps, snapshots, *, with_xs=False):
    w = ad.Tensor(np.linspace(0.2, 0.8, STATE), requires_grad=True)
    carry = ad.Tensor(np.linspace(-1.0, 1.0, STATE), requires_grad=True)
    xs = np.sin(np.arange(steps * STATE, dtype=float)).reshape(steps, STATE) * 0.1
    xs = ad.Tensor(xs, requires_grad=True) if with_xs else None
    step = decay_step if with_xs else (lambda c, x, w: decay_step(c, 0.0, w))
    with ad.count() as cost:
        out = ad.checkpoint.scan(
            step, carry, xs, length=None if with_xs else steps, snapshots=snapshots, args=(w,)
        )
        ad.sum(out * out).backward()
    grads = [carry.grad.numpy(), w.grad.numpy()] + ([xs.grad.numpy()] if with_xs else [])
    return cost, grads


@pytest.mark.parametrize(("steps", "snapshots"), [(1, 1), (2, 1), (7, 2), (30, 3), (45, 4)])
def test_scan_recomputes_exactly_what_revolve_says(steps, snapshots):
    cost, grads = scan_run(steps, snapshots)
    _, taped = scan_run(steps, None)
    for g, t in zip(grads, taped):
        assert np.array_equal(g, t)
    # the forward pass advanced steps - 1 times and ran the last step for the output;
    # the sweep does the rest of the schedule's advances and runs each step on a tape
    assert cost.recomputed_steps == revolve_advances(steps, snapshots) - (steps - 1) + steps
    assert cost.peak_snapshots <= snapshots


def test_scan_differentiates_the_inputs_sequence():
    cost, grads = scan_run(12, 3, with_xs=True)
    _, taped = scan_run(12, None, with_xs=True)
    for g, t in zip(grads, taped):
        np.testing.assert_array_equal(g, t)
    assert cost.recomputed_steps == revolve_advances(12, 3) - 11 + 12


def test_scan_peak_tape_is_snapshots_plus_one_step():
    def tape_bytes(f, *shapes):
        with ad.count() as cost:
            f(*(ad.Tensor(np.ones(shape), requires_grad=True) for shape in shapes))
        return cost.tape_bytes

    step_tape = tape_bytes(lambda c, w: decay_step(c, 0.0, w), STATE, STATE)
    state = 8 * STATE
    # the stated constant: the scan's own record keeps its inputs (carry and w), and
    # the loss after it keeps the final state
    record = 2 * state + tape_bytes(lambda out: ad.sum(out * out), STATE)
    for steps in [10, 60]:
        for snapshots in [1, 2, 5]:
            cost, _ = scan_run(steps, snapshots)
            assert cost.peak_tape_bytes <= snapshots * state + step_tape + record
            assert cost.live_tape_bytes == 0
        taped, _ = scan_run(steps, None)
        assert taped.peak_tape_bytes >= steps * step_tape
    assert scan_run(60, 5)[0].peak_tape_bytes == scan_run(10, 5)[0].peak_tape_bytes


def test_scan_tuple_carry_and_the_sqrt_scheme():
    def cell(carry, x, w):
        h, c = carry
        return ad.tanh(h * w + c), 0.9 * c + 0.1 * ad.sin(h)

    def loss(h, c, w, snapshots):
        h, c = ad.checkpoint.scan(cell, (h, c), length=25, snapshots=snapshots, args=(w,))
        return ad.sum(h * c)

    args = (np.array([0.2, -0.5]), np.array([0.4, 0.1]), np.array([0.9, 1.2]))
    taped = ad.grad(lambda *a: loss(*a, None), argnums=(0, 1, 2))(*args)
    for snapshots in [3, "sqrt"]:
        checked = ad.grad(lambda *a: loss(*a, snapshots), argnums=(0, 1, 2))(*args)
        for t, c in zip(taped, checked):
            assert np.array_equal(t, c)


@pytest.mark.parametrize("mode", ["fwd-over-rev", "rev-over-rev"])
def test_second_order_through_a_scan(mode):
    def loss(w, snapshots):
        out = ad.checkpoint.scan(
            lambda c, x, w: decay_step(c, 0.0, w),
            np.linspace(-1.0, 1.0, 3),
            length=9,
            snapshots=snapshots,
            args=(w,),
        )
        return ad.sum(out * out)

    w0 = np.array([0.5, 0.4, 0.3])
    taped = ad.hessian(lambda w: loss(w, None), mode=mode)(w0)
    np.testing.assert_allclose(ad.hessian(lambda w: loss(w, 2), mode=mode)(w0), taped, rtol=1e-12)


def test_a_second_sweep_with_retain_graph_gives_the_same_gradient():
    w = ad.Tensor(np.array([0.5, 0.4]), requires_grad=True)
    out = ad.checkpoint.scan(
        lambda c, x, w: decay_step(c, 0.0, w), np.ones(2), length=10, snapshots=2, args=(w,)
    )
    loss = ad.sum(out)
    loss.backward(retain_graph=True)
    first = w.grad.numpy().copy()
    with ad.count() as cost:
        loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * first)
    # the forward phase's snapshots were used up: the whole schedule runs again,
    # every advance and one taped run per step
    assert cost.recomputed_steps == revolve_advances(10, 2) + 10


def test_forward_mode_through_a_scan_keeps_no_tape():
    def loss(w):
        out = ad.checkpoint.scan(
            lambda c, x, w: decay_step(c, 0.0, w), np.ones(3), length=200, snapshots=4, args=(w,)
        )
        return ad.sum(out)

    w0 = np.array([0.5, 0.4, 0.3])
    with ad.count() as cost:
        forward = ad.jacfwd(loss)(w0)
    assert cost.tape_records == 0 and cost.recomputed_steps == 0
    np.testing.assert_allclose(forward, ad.grad(loss)(w0), rtol=1e-13)


def test_scan_arguments_are_checked():
    with pytest.raises(ValueError, match="give xs"):
        ad.checkpoint.scan(decay_step, np.ones(2))
    with pytest.raises(ValueError, match="at least one snapshot"):
        w = ad.Tensor(np.ones(2), requires_grad=True)
        ad.checkpoint.scan(decay_step, np.ones(2), length=3, snapshots=0, args=(w,))


@pytest.mark.parametrize(
    "build",
    [lambda a, b: (a, b), lambda a, b: {"a": a, "b": b}, lambda a, b: [a, {"b": b}]],
    ids=["tuple", "dict", "nested"],
)
def test_a_checkpointed_function_may_return_a_tree(build):
    block = ad.checkpoint(lambda v: build(ad.sin(v), v * v))
    leaves = lambda v: ad.pytree.tree_leaves(block(v))
    loss = lambda v: ad.sum(leaves(v)[0] * leaves(v)[1])
    x = np.array([0.3, -1.2, 2.0])
    assert ad.pytree.tree_structure(block(x)) == ad.pytree.tree_structure(build(x, x))
    want = np.cos(x) * x**2 + 2 * x * np.sin(x)  # d/dx sum(sin(x) x^2)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(ad.grad(loss, mode=mode)(x), want, rtol=1e-14)
