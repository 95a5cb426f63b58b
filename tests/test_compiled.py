"""Tape replay: ``adcompare.compile`` against the eager engine, guards, errors."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench.problems import PROBLEMS, default_problems
from adcompare.engines.replay import CompileError
from adcompare.ops.registry import raw

from .opcases import case_id, draw, op_cases

CASES = [case for case in op_cases() if case[0].nargs is None or case[0].differentiable]


def _weighted(op, params, weights, complex_output=False):
    def f(*args):
        total = ad.sum(weights * op.fn(*args, **params))
        return ad.real(total) if complex_output else total  # grad needs a real output

    return f


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_replays_value_and_gradient_at_new_inputs(case):
    op, shapes, params = case
    recorded_at, params = draw(op, shapes, params, seed=1)
    new_inputs, _ = draw(op, shapes, None, seed=3)
    positions = tuple(range(len(shapes))) if op.nargs is None else op.differentiable
    out_shape = np.shape(op.fn(*recorded_at, **params))
    weights = np.random.default_rng(4).standard_normal(out_shape)
    f = _weighted(op, params, weights, np.iscomplexobj(op.fn(*recorded_at, **params)))
    compiled = ad.compile(f, *recorded_at, argnums=positions)
    value, grads = compiled.value_and_grad(*new_inputs)
    eager_value, eager_grads = ad.value_and_grad(f, argnums=positions)(*new_inputs)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12, atol=1e-12)
    for got, expected in zip(grads, eager_grads):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled(*new_inputs), eager_value, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", default_problems())
def test_benchmark_problems_replay_their_gradients(name):
    problem = PROBLEMS[name]
    size = {key: 6 for key in problem.sweeps}
    inst = problem.build(**size)
    f = inst.on(ad)
    if inst.m != 1:
        f = (lambda g: lambda x: ad.sum(g(x) ** 2))(f)
    compiled = ad.compile(f, inst.x)
    new_point = inst.x + 0.1 * np.random.default_rng(0).standard_normal(inst.x.shape)
    value, gradient = compiled.value_and_grad(new_point)
    eager_value, eager_gradient = ad.value_and_grad(f)(new_point)
    np.testing.assert_allclose(value, eager_value, rtol=1e-12)
    np.testing.assert_allclose(gradient, eager_gradient, rtol=1e-10, atol=1e-12)
    assert compiled.recordings == 1


def _chain(x, length=40):
    for _ in range(length // 4):
        x = ad.tanh(ad.sin(x) * 1.01 + 0.5)
    return ad.sum(x)


def test_scalar_replay_matches_array_replay_and_finite_differences():
    # A short chain: the gradient of a long one vanishes below what differences resolve.
    scalar = ad.compile(lambda x: _chain(x, 8), np.array([0.3]))
    array = ad.compile(lambda x: _chain(x[0:1], 8) + 0.0 * ad.sum(x), np.array([0.3, 0.0]))
    assert scalar.program.scalar and not array.program.scalar
    for point in [0.7, -1.1, 2.5]:
        value, gradient = scalar.value_and_grad(np.array([point]))
        array_value, array_gradient = array.value_and_grad(np.array([point, 0.0]))
        h = 1e-6
        numeric = (scalar(np.array([point + h])) - scalar(np.array([point - h]))) / (2 * h)
        np.testing.assert_allclose(value, array_value, rtol=1e-14)
        np.testing.assert_allclose(gradient[0], array_gradient[0], rtol=1e-13)
        np.testing.assert_allclose(gradient[0], numeric, rtol=1e-6)
        assert gradient.shape == (1,) and gradient.dtype == np.float64


def _reverse_sweep(source: str) -> list[str]:
    return source.split("# reverse sweep\n")[1].splitlines()[:-1]  # without the return


def _targets_chain(x, length=60):
    # The targets' size-1 chain: each step reads x again, so x's cotangent sums many terms.
    y = x
    for i in range(length):
        y = [ad.sin(y), y * x, ad.cos(y), y + x, ad.tanh(y), ad.exp(y)][i % 6]
    return ad.sum(y)


@pytest.mark.parametrize("f", [_chain, _targets_chain], ids=["tanh-sin", "targets"])
def test_scalar_reverse_sweep_nests_values_read_once_bit_for_bit(monkeypatch, f):
    from adcompare.engines.replay import source

    merged = ad.compile(f, np.array([0.3]))
    monkeypatch.setattr(source, "MERGE_DEPTH", 0)  # every value on a line of its own
    lined = ad.compile(f, np.array([0.3]))
    assert merged.program.scalar and lined.program.scalar
    assert merged.program.instructions == lined.program.instructions
    sweep, one_per_line = (
        _reverse_sweep(merged.program.source),
        _reverse_sweep(lined.program.source),
    )
    assert len(one_per_line) == merged.program.instructions - merged.program.forward_steps
    assert len(sweep) < len(one_per_line) / 2
    # The forward pass stays one line per op, as the trace table lists them.
    forward = merged.program.source.split("# reverse sweep")[0]
    assert forward == lined.program.source.split("# reverse sweep")[0]
    for point in [0.3, -0.8, 1.7]:
        x = np.array([point])
        value, gradient = merged.value_and_grad(x)
        lined_value, lined_gradient = lined.value_and_grad(x)
        eager_value, eager_gradient = ad.value_and_grad(f)(x)
        assert value == lined_value and gradient[0] == lined_gradient[0]  # bit for bit
        np.testing.assert_allclose(value, eager_value, rtol=1e-14)
        np.testing.assert_allclose(gradient, eager_gradient, rtol=1e-13)


def test_a_merged_line_nests_at_most_merge_depth_values():
    from adcompare.engines.replay.source import MERGE_DEPTH

    source = ad.compile(_targets_chain, np.array([0.3])).program.source
    for line in _reverse_sweep(source):
        depth = deepest = 0
        for character in line.split(" = ", 1)[1]:
            depth += {"(": 1, ")": -1}.get(character, 0)
            deepest = max(deepest, depth)
        # A merged value is parenthesised unless it is a call, whose own parentheses
        # count; each merged level adds at most one pair beyond those of the calls.
        assert deepest <= 2 * MERGE_DEPTH


def test_a_value_read_twice_or_by_a_guard_keeps_its_name():
    def f(x):
        y = ad.sin(x)
        return ad.sum(y * y)  # y read twice: the sweep reads it by name

    source = ad.compile(f, np.array([0.4])).program.source
    assert "v1_sin = sin(x)" in source and "v1_sin" in "".join(_reverse_sweep(source))

    def g(x):
        z = ad.exp(x) * 2.0
        if ad.sum(z) > 1.0:  # a guard reads z's sum
            return ad.sum(z * x)
        return ad.sum(-z)

    compiled = ad.compile(g, np.array([0.5]))
    assert compiled.program.guards == 1 and "# guard" in compiled.program.source
    np.testing.assert_allclose(compiled.grad(np.array([0.7])), ad.grad(g)(np.array([0.7])))
    np.testing.assert_allclose(compiled.grad(np.array([-3.0])), ad.grad(g)(np.array([-3.0])))


def test_replay_does_one_call_per_recorded_instruction():
    # Per step, forward: sin, ·1.01, +0.5, tanh (4). Backward: tanh's g·(1 − out·out) is 3,
    # ·1.01 is 1, +0.5 is none, sin's g·cos x is 2 (6). Plus the sum; its backward (the
    # seed broadcast to x's shape) involves no input, so it is folded into a constant: a
    # constant of ones, so the last tanh's product with it goes (x·1 is x).
    for length in (8, 40, 400):
        program = ad.compile(lambda x, n=length: _chain(x, n), np.array([0.3])).program
        assert program.instructions == 10 * (length // 4)
        assert program.guards == 0


def test_a_mask_is_recorded_once():
    # Forward: x > 0, where, ·x, sum (4). Backward: g·relu(x) and g·x for the product,
    # where(g·x, 0, mask) for relu, and one add joining x's two contributions; but g is
    # ones, so g·relu(x) is relu(x), and where(x, 0, mask) repeats the forward relu(x):
    # one add remains (1).
    compiled = ad.compile(lambda x: ad.sum(ad.relu(x) * x), np.array([1.0, -2.0, 3.0]))
    assert compiled.program.instructions == 5
    assert compiled.program.source.count("where(") == 1
    np.testing.assert_allclose(compiled.grad(np.array([-1.0, 2.0, 3.0])), [0.0, 4.0, 6.0])


def test_a_guard_catches_a_branch_flip():
    def f(x):
        if ad.sum(x) > 0:
            return ad.sum(x**2)
        return ad.sum(-(x**3))

    compiled = ad.compile(f, np.array([1.0, 2.0]))
    assert compiled.program.guards == 1
    assert "    # guard: bool() of v2_np_greater was True" in compiled.program.source.splitlines()
    np.testing.assert_allclose(compiled.grad(np.array([3.0, 1.0])), [6.0, 2.0])
    assert compiled.recordings == 1
    # The sum turns negative: the recorded branch would give 2x = [-4, -2]; -3x² is right.
    np.testing.assert_allclose(compiled.grad(np.array([-2.0, 1.0])), [-12.0, -3.0])
    assert compiled.recordings == 2


def test_float_and_item_guards_record_again_when_they_change():
    def f(x):
        scale = float(ad.sum(x))  # a Python number computed from x
        return ad.sum(x * scale)

    compiled = ad.compile(f, np.array([1.0, 2.0]))
    # d/dx of x·s with s frozen as a number: s (the value read, not differentiated)
    np.testing.assert_allclose(compiled.grad(np.array([1.0, 2.0])), [3.0, 3.0])
    np.testing.assert_allclose(compiled.grad(np.array([2.0, 2.0])), [4.0, 4.0])
    assert compiled.recordings == 2


def test_masks_are_recomputed_without_recording_again():
    f = lambda x: ad.sum(ad.relu(x) * ad.abs(x) + ad.maximum(x, 0.5 * x))
    compiled = ad.compile(f, np.array([1.0, -2.0, 3.0]))
    point = np.array([-1.5, 2.0, -0.25])
    np.testing.assert_allclose(compiled.grad(point), ad.grad(f)(point), rtol=1e-14)
    assert compiled.recordings == 1


def test_a_mask_that_only_meets_constants_is_recomputed():
    # where(mask, 1, -1) has no traced argument: only the mask ties it to x.
    compiled = ad.compile(lambda x: ad.sum(ad.where(x > 0, 1.0, -1.0) * x), np.ones(3))
    point = np.array([2.0, -3.0, 0.5])
    value, gradient = compiled.value_and_grad(point)
    assert value == np.abs(point).sum()
    np.testing.assert_allclose(gradient, np.sign(point))
    assert compiled.recordings == 1


def test_logsumexp_shift_is_recomputed():
    f = lambda x: ad.logsumexp(x)
    compiled = ad.compile(f, np.zeros(4))
    point = np.array([800.0, 801.0, 799.0, 0.0])  # would overflow with the recorded shift 0
    value, gradient = compiled.value_and_grad(point)
    shifted = np.exp(point - point.max())
    np.testing.assert_allclose(value, point.max() + np.log(shifted.sum()))
    np.testing.assert_allclose(gradient, shifted / shifted.sum())


def test_argnums_tuple_and_constant_arguments():
    f = lambda x, y, c: ad.sum(x * y + c * x**2)
    x, y, c = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.5, 0.5])
    compiled = ad.compile(f, x, y, c, argnums=(0, 1))
    gx, gy = compiled.grad(x + 1, y, c * 2)
    np.testing.assert_allclose(gx, y + 2 * (c * 2) * (x + 1))
    np.testing.assert_allclose(gy, x + 1)


def test_new_shapes_are_recorded_separately():
    compiled = ad.compile(lambda x: ad.sum(x**2), np.zeros(3))
    np.testing.assert_allclose(compiled.grad(np.arange(5.0)), 2 * np.arange(5.0))
    np.testing.assert_allclose(compiled.grad(np.ones(3)), [2.0, 2.0, 2.0])
    assert compiled.recordings == 2


def test_outputs_do_not_alias_the_recording():
    compiled = ad.compile(lambda x: ad.sum(2.0 * x), np.zeros(2))
    first = compiled.grad(np.ones(2))
    first[:] = 99.0
    np.testing.assert_allclose(compiled.grad(np.ones(2)), [2.0, 2.0])


def test_scalar_replay_falls_back_to_numpy_at_float_errors():
    compiled = ad.compile(lambda x: ad.sum(1.0 / x), np.array([2.0]))
    assert compiled.program.scalar
    with np.errstate(divide="ignore"):
        value, gradient = compiled.value_and_grad(np.array([0.0]))
    assert value == np.inf and np.isinf(gradient[0])


def test_unfollowable_uses_are_refused_with_a_clear_error():
    with pytest.raises(CompileError, match="plain numpy array"):
        ad.compile(lambda x: ad.sum(x * np.asarray(x)), np.ones(2))
    with pytest.raises(CompileError, match="tolist"):
        ad.compile(lambda x: ad.sum(x * raw(x).tolist()[0]), np.ones(2))
    with pytest.raises(CompileError, match="scalar output"):
        ad.compile(lambda x: x * 2.0, np.ones(2))


def test_the_gradient_of_a_complex_output_is_refused_as_grad_refuses_it():
    f = lambda x: ad.sum(x * (1.0 + 2.0j))
    with pytest.raises(TypeError, match="real-valued output"):
        ad.grad(f)(np.ones(3))
    with pytest.raises(CompileError, match="real-valued output"):
        ad.compile(f, np.ones(3))
    # Its real part is a real function: grad and the replay agree on d/dx Re(Σ x(1+2i)) = 1.
    real_part = ad.compile(lambda x: ad.real(f(x)), np.ones(3))
    assert np.array_equal(real_part.grad(np.full(3, 2.0)), np.ones(3))


def test_bad_arguments_are_refused():
    compiled = ad.compile(lambda x: ad.sum(x), np.ones(2))
    with pytest.raises(TypeError, match="takes 1 argument"):
        compiled(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="plain arrays"):
        compiled(ad.Tensor(np.ones(2)))
    with pytest.raises(ValueError, match="argnums"):
        ad.compile(lambda x: ad.sum(x), np.ones(2), argnums=3)


def test_functions_that_change_their_own_constants_are_refused():
    limit = np.ones(1)

    def f(x):
        above = ad.sum(x) > limit  # compared with the array itself, not a copy
        limit[...] *= -1
        return ad.sum(x) if above else ad.sum(x**2)

    compiled = ad.compile(f, np.array([0.25, 0.25]))
    with pytest.raises(CompileError, match="not a deterministic function"):
        compiled.grad(np.array([0.25, 0.25]))


# --- indices, masks and closed-over arrays: recomputed or guarded, never frozen ----------


def _positive_squares(x):
    return ad.sum(x[x > 0] ** 2)


def test_a_boolean_mask_is_recomputed_at_replay():
    compiled = ad.compile(_positive_squares, np.array([1.0, -3.0, 2.0]))
    # Σ over x_i > 0 of x_i², gradient 2 x_i there and 0 elsewhere.
    value, gradient = compiled.value_and_grad(np.array([-1.0, 3.0, 2.0]))
    assert value == 13.0
    np.testing.assert_array_equal(gradient, [0.0, 6.0, 4.0])
    assert compiled.recordings == 1  # two entries selected again: the same program


def test_the_number_of_selected_entries_is_a_guard():
    # mean divides by the count, a Python number taken from the shape.
    compiled = ad.compile(lambda x: ad.mean(x[x > 0] ** 2), np.array([1.0, -3.0, 2.0]))
    point = np.array([1.0, 2.0, 4.0])
    value, gradient = compiled.value_and_grad(point)
    assert value == 21.0 / 3
    np.testing.assert_allclose(gradient, 2 * point / 3, rtol=1e-15)
    assert compiled.recordings == 2
    assert "guard: the shape of" in compiled.program.source
    # On one element the program would be a scalar one; a mask turning false must not
    # replay the element it selected at recording.
    single = ad.compile(_positive_squares, np.array([2.0]))
    assert single.value_and_grad(np.array([-2.0])) == (0.0, np.array([0.0]))


def test_len_of_a_masked_selection_follows_the_mask():
    def f(x):
        selected = x[x > 0]
        return ad.sum(selected) * len(selected)

    compiled = ad.compile(f, np.array([1.0, -3.0, 2.0]))
    for point in ([1.0, 2.0, 5.0], [-1.0, -2.0, 5.0], [4.0, -2.0, 1.0]):
        point = np.array(point)
        count = np.count_nonzero(point > 0)
        value, gradient = compiled.value_and_grad(point)
        assert value == count * point[point > 0].sum()
        np.testing.assert_array_equal(gradient, np.where(point > 0, count, 0.0))


def test_nonzero_of_a_traced_mask_is_recomputed():
    f = lambda x: ad.sum(x[np.nonzero(x < 0)] * x[0])
    compiled = ad.compile(f, np.array([1.0, -3.0, 2.0, -1.0]))
    point = np.array([2.0, 4.0, -1.0, -5.0])
    value, gradient = compiled.value_and_grad(point)
    assert value == 2.0 * (-1.0 - 5.0)
    # ∂/∂x_0 = Σ negatives; ∂/∂x_i = x_0 at the negatives.
    np.testing.assert_array_equal(gradient, [-6.0, 0.0, 2.0, 2.0])
    assert compiled.recordings == 1
    # A number numpy computes from a mask is recomputed too.
    mean_of_positives = lambda x: ad.sum(ad.where(x > 0, x, 0.0)) / np.count_nonzero(x > 0)
    compiled = ad.compile(mean_of_positives, np.array([1.0, -3.0, 2.0]))
    value, gradient = compiled.value_and_grad(np.array([1.0, 3.0, 2.0]))
    assert value == 2.0
    np.testing.assert_allclose(gradient, [1 / 3, 1 / 3, 1 / 3], rtol=1e-15)


def test_integer_arguments_are_inputs_read_at_replay():
    compiled = ad.compile(lambda x, n: ad.sum(x[n]), np.arange(4.0), 1)
    value, gradient = compiled.value_and_grad(np.arange(4.0), 3)
    assert value == 3.0
    np.testing.assert_array_equal(gradient, [0.0, 0.0, 0.0, 1.0])
    assert compiled.recordings == 1
    # An integer array may repeat an entry: its gradient counts the repeats.
    squares = ad.compile(lambda x, i: ad.sum(x[i] ** 2), np.arange(4.0), np.array([0, 1, 2]))
    value, gradient = squares.value_and_grad(np.array([1.0, 2.0, 3.0, 4.0]), np.array([3, 3, 0]))
    assert value == 16.0 + 16.0 + 1.0
    np.testing.assert_array_equal(gradient, [2.0, 0.0, 0.0, 16.0])
    assert squares.recordings == 1
    scaled = ad.compile(lambda x, n: ad.sum(x * n), np.ones(2), 2)
    value, gradient = scaled.value_and_grad(np.ones(2), 5)
    assert value == 10.0
    np.testing.assert_array_equal(gradient, [5.0, 5.0])


def test_integers_that_shape_the_program_are_guarded_by_value():
    def repeated(x, n):
        for _ in range(n):
            x = ad.sin(x)
        return ad.sum(x)

    compiled = ad.compile(repeated, np.array([0.5]), 2)
    value, gradient = compiled.value_and_grad(np.array([0.5]), 3)
    s1, s2 = np.sin(0.5), np.sin(np.sin(0.5))
    np.testing.assert_allclose(value, np.sin(s2), rtol=1e-15)
    np.testing.assert_allclose(gradient, [np.cos(s2) * np.cos(s1) * np.cos(0.5)], rtol=1e-15)
    assert compiled.recordings == 2
    head = ad.compile(lambda x, n: ad.sum(x[:n] ** 2), np.arange(5.0), 2)
    value, gradient = head.value_and_grad(np.arange(5.0), 4)
    assert value == 0.0 + 1.0 + 4.0 + 9.0
    np.testing.assert_array_equal(gradient, [0.0, 2.0, 4.0, 6.0, 0.0])


def test_boolean_arguments_are_inputs_read_at_replay():
    compiled = ad.compile(lambda x, keep: ad.sum(x[keep] * 3.0), np.ones(3), np.ones(3, bool))
    value, gradient = compiled.value_and_grad(np.array([1.0, 2.0, 4.0]), [True, False, True])
    assert value == 15.0
    np.testing.assert_array_equal(gradient, [3.0, 0.0, 3.0])
    flip = ad.compile(lambda x, up: ad.sum(ad.where(up, x**2, -x)), np.ones(2), True)
    value, gradient = flip.value_and_grad(np.array([3.0, 1.0]), False)
    assert value == -4.0
    np.testing.assert_array_equal(gradient, [-1.0, -1.0])
    assert flip.recordings == 1


W = np.array([1.0, 2.0, 3.0])


def test_mutated_globals_change_the_value_and_the_gradient_alike():
    f = lambda x: ad.sum(W * x) + ad.sum(ad.exp(W)) * x[0]
    compiled = ad.compile(f, np.ones(3))
    saved = W.copy()
    try:
        W[0] = 100.0
        point = np.array([0.5, 1.0, 2.0])
        value, gradient = compiled.value_and_grad(point)
        eager_value, eager_gradient = ad.value_and_grad(f)(point)
        np.testing.assert_allclose(value, W @ point + np.exp(W).sum() * 0.5, rtol=1e-15)
        np.testing.assert_allclose(gradient, W + [np.exp(W).sum(), 0.0, 0.0], rtol=1e-15)
        np.testing.assert_allclose((value, *gradient), (eager_value, *eager_gradient))
    finally:
        W[:] = saved


def test_mutated_closures_change_the_value_and_the_gradient_alike():
    weights = np.array([[1.0, 2.0], [3.0, 4.0]])
    # The linear term's gradient, W·1, involves no input: it must not be folded in.
    compiled = ad.compile(lambda x: ad.sum(weights.T @ x) + ad.sum(x**3), np.ones(2))
    weights *= -0.5
    point = np.array([0.3, -0.2])
    value, gradient = compiled.value_and_grad(point)
    np.testing.assert_allclose(value, weights.sum(axis=1) @ point + (point**3).sum())
    np.testing.assert_allclose(gradient, weights.sum(axis=1) + 3 * point**2, rtol=1e-15)
    # A mask and an index array f holds are read at replay too.
    keep, pick = np.array([True, False, True]), np.array([0, 0, 2])
    compiled = ad.compile(lambda x: ad.sum(x[keep] ** 2) + ad.sum(x[pick]), np.ones(3))
    keep[:], pick[:] = [False, True, True], [1, 2, 2]
    value, gradient = compiled.value_and_grad(np.array([1.0, 2.0, 3.0]))
    assert value == (4.0 + 9.0) + (2.0 + 3.0 + 3.0)
    np.testing.assert_array_equal(gradient, [0.0, 4.0 + 1.0, 6.0 + 2.0])


def test_round_and_tolist_say_what_to_do():
    with pytest.raises(CompileError, match=r"round\(float\(x\)\)"):
        ad.compile(lambda x: ad.sum(x) * round(x[0]), np.ones(2))
    with pytest.raises(CompileError, match=r"tolist\(\) of a traced value.*float\(x\[i\]\)"):
        ad.compile(lambda x: ad.sum(x) * x.tolist()[0], np.ones(2))


def test_binding_a_global_to_another_array_records_again():
    global W
    f = lambda x: ad.sum(W * x)
    compiled = ad.compile(f, np.ones(3))
    saved = W
    try:
        W = np.array([4.0, 5.0, 6.0])
        value, gradient = compiled.value_and_grad(np.ones(3))
        assert value == 15.0
        np.testing.assert_array_equal(gradient, W)
        assert compiled.recordings == 2
        assert compiled.value_and_grad(np.ones(3))[0] == 15.0 and compiled.recordings == 2
    finally:
        W = saved


def test_other_threads_ops_stay_out_of_a_recording():
    import threading

    started, release = threading.Event(), threading.Event()
    seen = []

    def other():
        started.wait()
        seen.append(type(ad.exp(np.ones(2))))  # a plain op while f is being recorded
        release.set()

    def f(x):
        started.set()
        release.wait(5)
        return ad.sum(x * np.ones(2))

    thread = threading.Thread(target=other)
    thread.start()
    ad.compile(f, np.ones(2))
    thread.join()
    assert seen == [np.ndarray]


def test_writing_into_a_mask_is_refused():
    def f(x):
        keep = x > 0
        keep[0] = True  # a replay would recompute x > 0 and lose this
        return ad.sum(ad.where(keep, x, 0.0))

    with pytest.raises(CompileError, match=r"np\.where\(positions, new_value, m\)"):
        ad.compile(f, np.array([1.0, 2.0, 3.0]))


MASK_OWNER = np.array([1.0, -1.0, 2.0])


def test_numpy_on_a_global_array_is_recomputed_after_the_array_changes():
    # W > 0 runs on a plain global array while f is recorded: frozen unless the change of
    # W's contents is noticed. Eager execution is the reference.
    f = lambda x: ad.sum(x[MASK_OWNER > 0] ** 2)
    x = np.array([3.0, 4.0, 5.0])
    compiled = ad.compile(f, x)
    try:
        MASK_OWNER[1] = 1.0  # now every entry is selected
        value, gradient = compiled.value_and_grad(x)
        eager_value, eager_gradient = ad.value_and_grad(f)(x)
        assert value == eager_value == 50.0
        np.testing.assert_array_equal(gradient, eager_gradient)
        assert compiled.recordings == 2
    finally:
        MASK_OWNER[1] = -1.0


def test_a_constant_cotangent_is_not_mistaken_for_a_freed_traced_number():
    # On 0-d inputs numpy returns scalars, whose traced copies are found by memory
    # address; a constant cotangent (here +1 for the inner sum) allocated where a freed
    # one had been was read as that slot, and dy came back -1 instead of +1.
    def g(x, y):
        return ad.sum(-(x - ad.sum(ad.where(y > 0, y, -y))) + ad.where(x > 5, x, -x))

    compiled = ad.compile(g, np.array(1.0), np.array(1.0), argnums=(0, 1))
    for point in [(1.0, 1.0), (7.0, -2.0), (-3.0, 0.5)]:
        args = tuple(np.array(v) for v in point)
        expected = ad.grad(g, argnums=(0, 1))(*args)
        np.testing.assert_array_equal(compiled.grad(*args), expected)


@pytest.mark.parametrize(
    "f, args",
    [
        # x * y's gradient for x is y, here as a view of it (a reshape, a transpose, a slice).
        (lambda x, y: ad.sum(x * ad.reshape(y, (3,))), (np.ones(3), np.arange(3.0).reshape(3, 1))),
        (lambda x, y: ad.sum(x * ad.transpose(y)), (np.ones((2, 3)), np.arange(6.0).reshape(3, 2))),
        (lambda x, y: ad.sum(x * y[1:]), (np.ones(3), np.arange(4.0))),
        # A keepdims sum over a length-1 axis: its gradient is a broadcast to the same shape.
        (
            lambda x, y: ad.sum(ad.tanh(ad.sum(x, axis=-1, keepdims=True))) + ad.sum(y),
            (np.array([[-2.9], [-0.9]]), np.ones(2)),
        ),
        # Both gradients are the same traced value.
        (lambda x, y: ad.sum(ad.sin(x[0]) * (x + y)), (np.array([0.3, 0.7]), np.array([1.0, 2.0]))),
        # A 0-d input: y * 1.0 is y after simplify, and the expand_dims a view of it.
        (lambda x, y: ad.sum(x * ad.expand_dims(y * 1.0, 0)), (np.ones(1), np.array(3.0))),
        # A broadcast of a 0-d traced value; imag of a real array (both read-only in numpy).
        (lambda x, y: ad.sin(ad.sum(x)) + ad.sum(y), (np.arange(1.0, 4.0), np.ones(2))),
        (lambda x, y: ad.sum(x * ad.imag(y)) + ad.sum(y), (np.ones(3), np.arange(1.0, 4.0))),
    ],
    ids=[
        "reshape-of-input",
        "transpose-of-input",
        "slice-of-input",
        "broadcast",
        "one-value-twice",
        "view-of-a-0-d-input",
        "broadcast-of-0-d",
        "imag-of-real",
    ],
)
def test_replayed_gradients_are_fresh_arrays_that_share_nothing(f, args):
    # A gradient that shared an input's memory would change under `x -= lr * gx`.
    compiled = ad.compile(f, *args, argnums=(0, 1))
    inputs = [np.copy(a) for a in args]
    gradients = compiled.grad(*inputs)
    expected = ad.grad(f, argnums=(0, 1))(*args)
    for g, e in zip(gradients, expected, strict=True):
        np.testing.assert_array_equal(g, e)
        assert g.flags.writeable
        assert not any(np.shares_memory(g, a) for a in inputs)
    assert not np.shares_memory(gradients[0], gradients[1])
    again = compiled.grad(*inputs)
    assert not any(np.shares_memory(g, h) for g in gradients for h in again)


def test_a_view_found_only_at_call_time_is_copied_too():
    # Recorded with a transposed y, reshape copies; called with a contiguous y, it is
    # a view, so which outputs are views is decided per call, not per recording.
    f = lambda x, y: ad.sum(x * ad.reshape(y, (6,)))
    compiled = ad.compile(f, np.ones(6), np.arange(6.0).reshape(3, 2).T, argnums=(0, 1))
    y = np.arange(6.0).reshape(2, 3)
    gx, _ = compiled.grad(np.ones(6), y)
    gx -= 1.0
    np.testing.assert_array_equal(y, np.arange(6.0).reshape(2, 3))
    value = ad.compile(ad.ravel, np.ones((4, 3)).T, mode="forward")(y)
    assert not np.shares_memory(value, y)


@pytest.mark.parametrize("reduce", [ad.sum, ad.mean], ids=["sum", "mean"])
def test_a_scalar_replay_sums_minus_zero_to_plus_zero_as_numpy_does(reduce):
    f = lambda x: reduce(-x)
    compiled = ad.compile(f, np.array([0.5]))
    assert compiled.program.scalar
    value = compiled(np.array([0.0]))
    assert not np.signbit(value) and not np.signbit(np.sum(np.array([-0.0])))
