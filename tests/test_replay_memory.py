"""The replay's memory passes: scattered cotangents added in place, results written into
dead buffers, peak live bytes reported; never an array anyone still reads."""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.engines.replay import CompiledFunction
from adcompare.engines.replay.memory import IN_PLACE_FROM, accumulate_in_place, reuse_buffers
from adcompare.engines.replay.passes import PASSES, eliminate_dead_code

from .test_replay_passes import assert_bit_identical


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    residual = x[1:] - x[:-1] ** 2
    gradient = np.zeros_like(x)
    gradient[:-1] = -400.0 * x[:-1] * residual - 2.0 * (1.0 - x[:-1])
    gradient[1:] += 200.0 * residual
    return gradient


def _ops(compiled) -> list[str]:
    return [
        step.op.name if step.kind == "op" else step.base[1]
        for step in compiled.program.steps
        if hasattr(step, "kind")
    ]


def test_scattered_cotangents_are_added_where_they_land():
    x = np.linspace(-1.0, 1.5, 7)
    algebra = PASSES[: PASSES.index(eliminate_dead_code) + 1]
    before = CompiledFunction(rosenbrock, 0, (x,), passes=algebra)
    after = CompiledFunction(rosenbrock, 0, (x,), passes=(*algebra, accumulate_in_place))
    # x[:-1] is read three times, x[1:] once: three scatters into zeros, two sums.
    # Two scatters at one index become one scatter of their sum; the third adds
    # into that scatter's result in place.
    assert (_ops(before).count("scatter_add"), _ops(before).count("add")) == (3, 3)
    assert (_ops(after).count("scatter_add"), _ops(after).count("add")) == (1, 2)
    assert _ops(after).count("add_at") == 1
    for point in (x, np.ones(7), np.array([1.0, 1.0, -0.0, 0.0, 2.0, 1.0, 1.0])):
        assert_bit_identical(after.value_and_grad(point), before.value_and_grad(point))
        np.testing.assert_allclose(after.grad(point), rosenbrock_gradient(point), rtol=1e-14)


def test_adding_in_place_keeps_the_zeros_a_scatter_would_add_outside_its_index():
    # At x = 1 every term of x[:-1]'s cotangent is -0.0 (-2·(1 − 1) and −400·1·0), and
    # x[1:]'s cotangent reaches element 0 only as the scatter's +0.0: -0.0 + 0.0 = +0.0.
    compiled = ad.compile(rosenbrock, np.ones(5))
    gradient = compiled.grad(np.ones(5))
    assert not np.signbit(gradient[0])
    assert_bit_identical(
        gradient, ad.compile(rosenbrock, np.ones(5), optimise=False).grad(np.ones(5))
    )


def test_large_results_are_written_into_buffers_nobody_reads_any_more():
    n = IN_PLACE_FROM // 8 * 4
    x = np.linspace(-1.0, 1.5, n)
    f = lambda x: ad.sum(ad.exp(ad.sin(x) * x) * ad.cos(x))
    before = CompiledFunction(f, 0, (x,), passes=PASSES[: PASSES.index(reuse_buffers)])
    after = ad.compile(f, x)
    assert "out=" not in before.program.source
    assert after.program.source.count("out=") >= 3
    peak = lambda compiled: {name: (a, b) for name, a, b in compiled.stats()}["peak live bytes"]
    # As recorded, six arrays of n numbers are alive at once (sin x, exp, cos x and three
    # products of the reverse sweep); optimised, five, and one more without reuse.
    assert peak(after) == (6 * 8 * n, 5 * 8 * n)
    assert peak(before)[1] > peak(after)[1]
    moved = x[::-1].copy()
    untouched = moved.copy()
    assert_bit_identical(after.value_and_grad(moved), before.value_and_grad(moved))
    assert_bit_identical(moved, untouched)  # the argument is never a buffer to reuse
    np.testing.assert_allclose(after.grad(moved), ad.grad(f)(moved), rtol=1e-13)


def test_small_results_keep_their_own_memory():
    x = np.linspace(-1.0, 1.5, IN_PLACE_FROM // 8 // 2)
    f = lambda x: ad.sum(ad.exp(ad.sin(x) * x) * ad.cos(x))
    assert "out=" not in ad.compile(f, x).program.source


def test_no_buffer_is_reused_while_a_view_of_it_or_an_output_is_alive():
    n = IN_PLACE_FROM // 8 * 2

    def f(x, w):
        y = x * 3.0  # read only through the view below
        head = ad.reshape(y, (2, -1))[0]
        z = ad.sin(w) * 2.0  # shaped like y: it would take y's buffer, were the view ignored
        return ad.sum(head * ad.sum(z * z))

    x, w = np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n)
    plain = CompiledFunction(f, (0, 1), (x, w), passes=())
    reused = CompiledFunction(f, (0, 1), (x, w), passes=(reuse_buffers,))
    point = (x * 0.5, w + 0.25)
    assert_bit_identical(reused.value_and_grad(*point), plain.value_and_grad(*point))
    value, gradients = reused.value_and_grad(*point)
    again = reused.value_and_grad(*point)
    assert_bit_identical(again, (value, gradients))  # results are never a later call's buffer


def test_tangent_lanes_are_bit_identical_with_buffers_reused():
    f = lambda x: ad.tanh(x) * ad.exp(ad.sum(x[:4]))
    x = np.linspace(-1.0, 1.0, 8)
    plain = ad.compile(f, x, mode="forward", optimise=False)
    optimised = ad.compile(f, x, mode="forward")
    lanes = (np.outer(np.linspace(0.0, 1.0, IN_PLACE_FROM // 8 // 4), np.arange(8.0)),)
    assert_bit_identical(optimised.jvp((x,), lanes), plain.jvp((x,), lanes))
    assert "out=" in optimised.program.source  # recorded again for these many lanes


def test_zeros_are_added_only_where_an_earlier_piece_may_have_left_minus_zero():
    # Three disjoint pieces: the first one swept is scattered (its -0.0s stay -0.0),
    # the second is added in place and adds +0.0 over the first piece only, and the
    # third adds zeros nowhere: after the second, no element can hold -0.0.
    f = lambda x: ad.sum(x[:3] ** 2) + ad.sum(ad.sin(x[3:5])) + ad.sum(x[5:] ** 3)
    x = np.array([-0.0, 0.0, -1.0, 0.5, 2.0, -0.0, 1.0])
    # Before lowering, which puts disjoint pieces in place instead (test_replay_lower).
    optimised = CompiledFunction(f, 0, (x,), passes=PASSES[: PASSES.index(reuse_buffers) + 1])
    outsides = [
        dict(step.kwargs)["outside"][1]
        for step in optimised.program.steps
        if getattr(step, "base", None) and step.base[1] == "add_at"
    ]
    assert len(outsides) == 2 and len(outsides[0]) == 1 and outsides[1] == ()
    assert outsides[0][0] in [(slice(0, 3),), (slice(3, 5),), (slice(5, 7),)]
    gradient = optimised.grad(x)
    assert_bit_identical(gradient, ad.compile(f, x, optimise=False).grad(x))
    assert not np.signbit(gradient[0])  # 2·(-0.0) plus the other pieces' +0.0


def test_a_view_of_a_merged_subexpression_keeps_its_buffer_alive():
    # abs(x) is recorded twice and merged into one value; the second copy was reshaped,
    # so the reshape is a view of the merged buffer although the recorded values do not
    # say so. Writing a * w1 into that buffer in place would change what abs's rule
    # reads in the sweep: d/dx Σ (w1 + w2)|x| is (w1 + w2) sign(x).
    n = IN_PLACE_FROM  # large enough to be written in place
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.standard_normal((3, n))

    def f(x):
        a = ad.abs(x)
        b = ad.abs(ad.reshape(ad.abs(x), (n,)))
        return ad.sum(a * w1) + ad.sum(b * w2)

    optimised = ad.compile(f, x)
    assert "out=" in optimised.program.source  # the memory passes did run
    at = rng.standard_normal(n)
    expected = (w1 + w2) * np.sign(at)
    np.testing.assert_allclose(optimised.grad(at), expected, rtol=1e-15, atol=0)
    assert_bit_identical(optimised.grad(at), ad.compile(f, x, optimise=False).grad(at))


def test_a_forward_program_of_many_inputs_keeps_no_identity_of_them():
    # Seeds are the identity over the inputs, n² numbers: for 20,000 inputs (3.2 GB) a
    # value or a JVP builds one chunk of lanes, and the Jacobian builds each chunk in
    # turn; none is kept past the bound.
    import tracemalloc

    n = 20_000
    tracemalloc.start()
    compiled = ad.compile(lambda x: ad.sum(ad.sin(x)), np.zeros(n), mode="forward")
    x = np.linspace(-1.0, 1.0, n)
    value = compiled(x)
    _, tangent = compiled.jvp((x,), (np.ones(n),))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert value == np.sum(np.sin(x)) and np.isclose(tangent, np.sum(np.cos(x)), rtol=1e-12)
    assert peak < 256 * 2**20, f"{peak / 2**20:.0f} MiB"
    assert compiled._chunks == {}


def test_seeds_built_chunk_by_chunk_give_the_kept_ones_jacobian(monkeypatch):
    import adcompare.engines.replay as replay

    def f(x, y):
        return ad.tanh(x[:, None] * y[None, :]).ravel()

    x, y = np.linspace(0.1, 0.9, 5), np.linspace(-1.0, 1.0, 3)
    expected = ad.jacfwd(f, argnums=(0, 1))(x, y)
    monkeypatch.setattr(replay, "KEPT_SEED_BYTES", 0)
    compiled = ad.compile(f, x, y, argnums=(0, 1), mode="forward", chunk_size=3)
    got = compiled.jacobian(x, y)
    assert compiled._chunks == {}
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-15, atol=0)
