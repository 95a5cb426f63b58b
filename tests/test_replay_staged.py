"""Staged replay: the early stage runs what does not depend on the late arguments and keeps
what the late stage reads; together they give value_and_grad's numbers, bit for bit, and
compute no instruction twice."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.adbench.generate import generate_lstm
from adcompare.adbench.lstm import character_step
from adcompare.engines.replay.record import Instruction


def tanh_step(w, x, bar):
    """<tanh(w·x), bar>: its gradient in bar is the new state tanh(w·x)."""
    return ad.sum(ad.tanh(w * x) * bar)


def lstm_step(main, extra, hidden, cell, now, following, hidden_bar, cell_bar):
    """One LSTM character's adjoint: ⟨new state, bars⟩ plus its log-likelihood term."""
    layers = main.shape[0]
    weights = [main[j, : main.shape[1] // 2] for j in range(layers)]
    biases = [main[j, main.shape[1] // 2 :] for j in range(layers)]
    hiddens, cells = [hidden[j] for j in range(layers)], [cell[j] for j in range(layers)]
    term = character_step(
        weights, biases, extra[1], extra[2], now * extra[0], hiddens, cells, following
    )
    return term + ad.sum(ad.stack(hiddens) * hidden_bar) + ad.sum(ad.stack(cells) * cell_bar)


def _lstm_arguments(seed: int = 0):
    data = generate_lstm(2, 3, 4)
    layers, _, bits = data.sizes
    rng = np.random.default_rng(seed)
    main = data.main_params.reshape(layers, 8 * bits)
    extra = data.extra_params.reshape(3, bits)
    known = (main, extra, data.state[:, 0], data.state[:, 1], data.sequence[0], data.sequence[1])
    late = (rng.normal(size=(layers, bits)), rng.normal(size=(layers, bits)))
    return known, late


def _bits(result) -> list[bytes]:
    value, grads = result
    return [np.asarray(value).tobytes()] + [np.asarray(g).tobytes() for g in grads]


def _op_names(program) -> list[str]:
    return [s.op.name for s in program.steps if isinstance(s, Instruction) and s.kind == "op"]


def test_the_two_stages_give_value_and_grad_bit_for_bit_and_the_late_state_gradient_early():
    known, late = _lstm_arguments()
    compiled = ad.compile(lstm_step, *known, *late, argnums=tuple(range(8)))
    stages = compiled.staged(*known, *late, late=(6, 7))
    for seed in (1, 2):  # new arguments, replayed by the same two programs
        known, late = _lstm_arguments(seed)
        known = (known[0] * (1 + 0.1 * seed), *known[1:])
        started = stages(*known)
        value, grads = started.known
        assert value is None and all(g is None for g in grads[:5])
        # ⟨state, bars⟩'s gradient in the bars is the new state, known before any bar, as
        # is the gradient in the next character (the log-likelihood's, bars play no part).
        whole = compiled.value_and_grad(*known, *late)
        assert [g.tobytes() for g in grads[5:]] == [g.tobytes() for g in whole[1][5:]]
        assert _bits(started.finish(*late)) == _bits(whole)
    assert stages.recordings == 1


def test_the_late_stage_runs_no_instruction_of_the_forward_pass_again():
    known, late = _lstm_arguments()
    compiled = ad.compile(lstm_step, *known, *late, argnums=tuple(range(8)))
    early, later = compiled.staged(*known, *late, late=(6, 7), value=False).programs()
    whole = compiled.program
    forward = _op_names(whole)[: whole.forward_steps]
    # 2 layers, 3 each: the gates' sigmoids (by tanh), the change, the cell's
    assert forward.count("tanh") == 6 and "tanh" not in _op_names(later)
    # Between them the stages run the whole program's instructions, less the value's.
    assert early.instructions + later.instructions <= whole.instructions


def test_without_the_value_the_late_stage_is_shorter_and_gives_none():
    w, x, bar = np.array([0.5, 1.0]), np.array([2.0, 3.0]), np.array([1.0, -1.0])
    compiled = ad.compile(tanh_step, w, x, bar, argnums=(0, 1, 2))
    with_value = compiled.staged(w, x, bar, late=(2,))
    without = compiled.staged(w, x, bar, late=(2,), value=False)
    value, grads = without(w, x).finish(bar)
    expected = compiled.value_and_grad(w, x, bar)
    assert value is None and [g.tobytes() for g in grads] == [g.tobytes() for g in expected[1]]
    assert without.programs()[1].instructions < with_value.programs()[1].instructions
    # d/dw Σ tanh(w x)·bar = bar·x·(1 − tanh²(w x)), by hand
    np.testing.assert_allclose(grads[0], bar * x * (1 - np.tanh(w * x) ** 2), rtol=1e-15)


def test_a_branch_on_a_known_argument_records_again_and_one_on_a_late_one_runs_the_whole():
    def branchy(w, bar):
        scale = 2.0 if ad.sum(w) > 0 else -3.0  # a guard on w: in the early stage
        y = ad.sin(w) * scale
        if ad.sum(bar) > 0:  # a guard on bar: in the late stage
            return ad.sum(y * bar)
        return ad.sum(y * y * bar)

    def by_hand(w, bar):
        scale = 2.0 if w.sum() > 0 else -3.0
        y, dy = np.sin(w) * scale, np.cos(w) * scale
        if bar.sum() > 0:
            return np.sum(y * bar), (dy * bar, y)
        return np.sum(y * y * bar), (2 * y * dy * bar, y * y)

    w0, bar0 = np.array([0.3, 0.4]), np.array([1.0, 2.0])
    compiled = ad.compile(branchy, w0, bar0, argnums=(0, 1))
    stages = compiled.staged(w0, bar0, late=(1,))
    for w, bar in [(w0, bar0), (-w0, bar0), (-w0, -bar0), (w0, -bar0)]:
        value, grads = stages(w).finish(bar)
        expected, gradients = by_hand(w, bar)
        assert float(value) == pytest.approx(expected, rel=1e-15)
        for got, want in zip(grads, gradients):
            np.testing.assert_allclose(got, want, rtol=1e-15)
    assert stages.recordings == 3  # recorded again each time the branch on w turns


def test_late_arguments_of_another_shape_run_the_whole_program():
    w, x, bar = np.array([0.5, 1.0]), np.array([2.0, 3.0]), np.array([1.0, -1.0])
    compiled = ad.compile(lambda w, x, bar: ad.sum(ad.tanh(w * x)) * ad.sum(bar), w, x, bar,
                          argnums=(0, 2))  # fmt: skip
    stages = compiled.staged(w, x, bar, late=(2,))
    _, (g_w, g_bar) = stages(w, x).finish(np.ones(5))
    np.testing.assert_allclose(g_bar, np.full(5, np.sum(np.tanh(w * x))), rtol=1e-15)
    np.testing.assert_allclose(g_w, 5 * x * (1 - np.tanh(w * x) ** 2), rtol=1e-15)


def test_results_share_no_memory_with_the_arguments_or_each_other():
    def f(w, bar):  # the new state is w itself, and a view of it: both must come back copied
        return ad.sum(w * bar) + ad.sum(w[1:] * bar[:-1])

    w, bar = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    compiled = ad.compile(f, w, bar, argnums=(0, 1))
    started = compiled.staged(w, bar, late=(1,))(w)
    early_bar_gradient = started.known[1][1]
    early_bar_gradient += 1.0  # written into: the late stage reads its own copy
    _, (g_w, g_bar) = started.finish(bar)
    assert g_bar is early_bar_gradient  # the known result, handed back as it was given
    g_bar -= 1.0
    for result in (g_w, g_bar):
        assert not np.shares_memory(result, w) and not np.shares_memory(result, bar)
    assert not np.shares_memory(g_w, g_bar)
    np.testing.assert_array_equal(g_bar, w + np.array([2.0, 3.0, 0.0]))
    np.testing.assert_array_equal(g_w, bar + np.array([0.0, 0.5, -1.0]))


def test_a_known_result_that_a_kept_value_views_is_handed_out_as_a_copy():
    def f(w, bar1, bar2):  # y = 2w is the bar1 gradient; the late stage reads y[1:] alone
        y = w * 2.0
        return ad.sum(y * bar1) + ad.sum(y[1:] * bar2 * bar2)

    w, bar1, bar2 = np.array([0.1, 0.2, 0.3]), np.ones(3), np.array([1.0, 2.0])
    compiled = ad.compile(f, w, bar1, bar2, argnums=(0, 1, 2))
    started = compiled.staged(w, bar1, bar2, late=(1, 2), value=False)(w)
    known = started.known[1][1]
    np.testing.assert_array_equal(known, 2.0 * w)
    known += 100.0  # the caller's to write into: the late stage's y[1:] is not this memory
    _, (g_w, g_bar1, g_bar2) = started.finish(bar1, bar2)
    assert g_bar1 is known  # handed back as it was given
    np.testing.assert_array_equal(g_bar2, 2.0 * bar2 * (2.0 * w[1:]))  # ∂/∂bar2 = 2·bar2·y[1:]
    np.testing.assert_array_equal(g_w, 2.0 * (bar1 + np.r_[0.0, bar2 * bar2]))


def test_an_array_f_reads_changed_in_place_is_read_as_it_is_now():
    weights = np.array([1.0, 2.0])

    def f(x, bar):
        return ad.sum(ad.exp(x * weights) * bar)

    x, bar = np.array([0.1, 0.2]), np.array([1.0, 1.0])
    stages = ad.compile(f, x, bar, argnums=(0, 1)).staged(x, bar, late=(1,))
    weights *= 3.0
    _, (g_x, g_bar) = stages(x).finish(bar)
    np.testing.assert_allclose(g_bar, np.exp(3 * x * np.array([1.0, 2.0])), rtol=1e-15)
    np.testing.assert_allclose(g_x, 3 * np.array([1.0, 2.0]) * g_bar, rtol=1e-15)


MASKED = np.array([1.0, -1.0, 2.0])


def masked(x, bar):  # MASKED > 0 is plain numpy: computed once, when f is recorded
    return ad.sum(ad.exp(x) * (MASKED > 0) * bar)


def test_the_stages_record_again_when_an_array_f_reads_changed_whoever_recorded_last():
    x, bar = np.array([0.1, 0.2, 0.3]), np.ones(3)
    compiled = ad.compile(masked, x, bar, argnums=(0, 1))
    stages = compiled.staged(x, bar, late=(1,))
    stages(x).finish(bar)
    MASKED[:] = [-1.0, 1.0, 1.0]
    compiled.value_and_grad(x, bar)  # the compiled function records again, seeing it first
    _, (g_x, g_bar) = stages(x).finish(bar)
    np.testing.assert_array_equal(g_bar, np.exp(x) * np.array([0.0, 1.0, 1.0]))
    np.testing.assert_array_equal(g_x, np.exp(x) * np.array([0.0, 1.0, 1.0]))
    assert stages.recordings == 2
    # Changed between the two stages: the second runs the whole program, as it is now.
    started = stages(x)
    MASKED[:] = [1.0, 1.0, -1.0]
    _, (g_x, g_bar) = started.finish(bar)
    np.testing.assert_array_equal(g_x, np.exp(x) * np.array([1.0, 1.0, 0.0]))
    # The other way round: the stages see the change first, the compiled function after.
    compiled.value_and_grad(x, bar)
    MASKED[:] = [-1.0, -1.0, 1.0]
    stages(x).finish(bar)
    _, (g_x, g_bar) = compiled.value_and_grad(x, bar)
    np.testing.assert_array_equal(g_x, np.exp(x) * np.array([0.0, 0.0, 1.0]))


def test_bad_uses_say_what_to_do():
    w, bar = np.ones(2), np.ones(2)
    compiled = ad.compile(tanh_step, w, w, bar, argnums=(0, 2))
    with pytest.raises(TypeError, match="late must be a tuple of argument positions below 3"):
        compiled.staged(w, w, bar, late=2)
    with pytest.raises(TypeError, match=r"each named once, not \(2, 2\)"):
        compiled.staged(w, w, bar, late=(2, 2))
    stages = compiled.staged(w, w, bar, late=(2,))
    with pytest.raises(TypeError, match=r"give the 2 argument\(s\) that are not late"):
        stages(w)
    started = stages(w, w)
    with pytest.raises(TypeError, match=r"give the 1 argument\(s\) that are late"):
        started.finish()
    started.finish(bar)
    with pytest.raises(RuntimeError, match="finished already; start another"):
        started.finish(bar)
    forward = ad.compile(tanh_step, w, w, bar, mode="forward")
    with pytest.raises(TypeError, match="staged replays a reverse-mode program"):
        forward.staged(w, w, bar, late=(2,))
