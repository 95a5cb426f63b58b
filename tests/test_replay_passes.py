"""The replay compiler's passes: each removes what it says, and every result stays
bit-identical to the unoptimised program's, on every registry op and on random programs.

The registry and random-program tests write in place at every size (the memory
passes otherwise leave arrays under ``IN_PLACE_FROM`` bytes alone), so every pass
runs on them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import adcompare as ad
from adcompare.engines.replay import CompiledFunction, memory
from adcompare.engines.replay.passes import fuse_unbroadcast

from .opcases import case_id, draw, op_cases
from .test_fuzz import programs

CASES = [case for case in op_cases() if case[0].nargs is None or case[0].differentiable]


def assert_bit_identical(got, expected):
    got, expected = _leaves(got), _leaves(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype
        assert g.tobytes() == e.tobytes(), f"{g} != {e}"


def assert_identical_but_nan_signs(got, expected):
    """Bit-identical, except that a NaN matches a NaN of either sign (IEEE leaves
    the sign of an operation's NaN unspecified: ``a - b`` and ``a + (-b)`` differ)."""
    for g, e in zip(_leaves(got), _leaves(expected), strict=True):
        g, e = np.asarray(g), np.asarray(e)
        assert np.array_equal(np.isnan(g), np.isnan(e))
        assert_bit_identical(np.where(np.isnan(g), np.nan, g), np.where(np.isnan(e), np.nan, e))


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


@pytest.fixture
def in_place_at_every_size(monkeypatch):
    monkeypatch.setattr(memory, "IN_PLACE_FROM", 0)


def both(f, args, argnums, mode="reverse"):
    plain = ad.compile(f, *args, argnums=argnums, optimise=False, mode=mode)
    optimised = ad.compile(f, *args, argnums=argnums, mode=mode)
    return plain, optimised


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_gives_bit_identical_results_after_the_passes(case, in_place_at_every_size):
    op, shapes, params = case
    recorded_at, params = draw(op, shapes, params, seed=1)
    new_inputs, _ = draw(op, shapes, None, seed=3)
    positions = tuple(range(len(shapes))) if op.nargs is None else op.differentiable
    out = op.fn(*recorded_at, **params)
    weights = np.random.default_rng(4).standard_normal(np.shape(out))
    # A gradient needs a real output: a complex one (the FFTs) is differentiated by its real part.
    part = ad.real if np.iscomplexobj(out) else (lambda value: value)
    f = lambda *args: ad.sum(part(weights * op.fn(*args, **params)))
    plain, optimised = both(f, recorded_at, positions)
    untouched = [np.copy(x) for x in new_inputs]
    assert_bit_identical(optimised.value_and_grad(*new_inputs), plain.value_and_grad(*new_inputs))
    assert_bit_identical(tuple(new_inputs), tuple(untouched))  # never written in place
    assert optimised.program.instructions <= plain.program.instructions


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_op_gives_bit_identical_jacobians_after_the_passes_in_forward_mode(
    case, in_place_at_every_size
):
    op, shapes, params = case
    recorded_at, params = draw(op, shapes, params, seed=1)
    new_inputs, _ = draw(op, shapes, None, seed=3)
    positions = tuple(range(len(shapes))) if op.nargs is None else op.differentiable
    f = lambda *args: op.fn(*args, **params)
    plain, optimised = both(f, recorded_at, positions, mode="forward")
    assert_bit_identical(
        optimised.value_and_jacobian(*new_inputs), plain.value_and_jacobian(*new_inputs)
    )
    assert optimised.program.instructions <= plain.program.instructions


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs())
def test_random_programs_give_bit_identical_results_after_the_passes(
    program, in_place_at_every_size
):
    if not program.weights:
        return
    argnums = tuple(range(len(program.inputs)))
    # The program's values lie in its ops' domains at its inputs, not always at the moved
    # point (a log's argument may turn negative there): both programs then give the same
    # NaNs, whose signs IEEE leaves to each operation.
    moved = [x * 0.97 for x in program.inputs]
    for mode, method in (("reverse", "value_and_grad"), ("forward", "value_and_jacobian")):
        plain, optimised = both(program, program.inputs, argnums, mode=mode)
        got, expected = (getattr(c, method) for c in (optimised, plain))
        assert_bit_identical(got(*program.inputs), expected(*program.inputs))
        with np.errstate(all="ignore"):
            assert_identical_but_nan_signs(got(*moved), expected(*moved))


def _stats(compiled) -> dict:
    return {s.name: (s.before, s.after) for s in compiled.stats()}


def test_simplify_removes_exact_identities_and_folds_negations_into_sums():
    x = np.array([-0.0, 0.0, 1.5, -2.0])
    y = np.array([0.5, -0.0, 3.0, 1.0])
    # x*1, x/1, x-0, x+(-0), -(-x) are x to the bit; a + (-b) is a - b to the bit.
    twice = lambda v: ad.negative(ad.negative(v))
    f = lambda x, y: ad.sum(((x * 1.0) / 1.0 - 0.0 + (-0.0)) * 2.0 + twice(y) + (-x) * (-y))
    plain, optimised = both(f, (x, y), (0, 1))
    ops = lambda c: [getattr(s, "op", None) and s.op.name for s in c.program.steps]
    assert ops(plain).count("negative") == 6
    # *1, /1, -0, +(-0) and -(-y) are gone; (-x) * (-y) is x * y. In the reverse sweep
    # the seed's cotangent, an array of ones, is the number 1.0, so the products with
    # it go too, and the negations of the multiply's rules fold into the sums.
    assert ops(optimised) == ["multiply", "add", "multiply", "add", "sum", "add", "add"]
    assert_bit_identical(optimised.value_and_grad(x, y), plain.value_and_grad(x, y))


def _negations(compiled) -> int:
    return sum(getattr(s, "op", None) is ad.OPS["negative"] for s in compiled.program.steps)


def _cos_chain(x):
    # Each cos's rule negates sin(...); the products that read it carry the sign
    # on to a sum, or to the next cos's negation, which cancels it.
    y = x
    for _ in range(3):
        y = ad.cos(y * x) + x
    return ad.sum(y)


@pytest.mark.parametrize("n", [6, 1], ids=["array", "size-1 (the scalar program)"])
def test_negations_are_carried_through_products_until_a_sum_folds_them(n):
    x = np.linspace(-2.5, 1.7, n)
    plain, optimised = both(_cos_chain, (x,), 0)
    assert _negations(plain) == 3
    assert _negations(optimised) == 0
    assert optimised.program.scalar == (n == 1)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e308]
    points = [-x, x * 0.9] + [np.full(n, v) for v in special]
    for point in points:
        with np.errstate(all="ignore"):
            got, expected = optimised.value_and_grad(point), plain.value_and_grad(point)
        assert_identical_but_nan_signs(got, expected)


def test_negations_are_carried_through_quotients_both_ways():
    x, y = np.array([1.5, -0.0, 0.0, 2.0]), np.array([0.5, 3.0, -2.0, -0.0])
    # -cos(y) * y divides; the quotient's rule negates again for y; sin(x)'s share too.
    f = lambda x, y: ad.sum(ad.exp(x) - ad.sin(x) / (-ad.cos(y) * y))
    plain, optimised = both(f, (x + 1.0, y + 1.0), (0, 1))
    assert (_negations(plain), _negations(optimised)) == (4, 0)  # 2 left if not carried
    for point in ((x, y), (y, x), (-x, y)):
        with np.errstate(all="ignore"):  # zeros on both sides of a quotient
            got, expected = optimised.value_and_grad(*point), plain.value_and_grad(*point)
        assert_identical_but_nan_signs(got, expected)


def test_a_negation_nothing_folds_stays_where_it_is_computed_once():
    # Carried, -x would be computed on x*y and on x*z (sin reads both), and on each
    # gradient: more elements than negating x once, so the pass does not carry it.
    f = lambda x, y, z: ad.sum(ad.sin(-x * y) + ad.sin(-x * z))
    args = (np.array([0.5, -1.0, 0.0]), np.array([2.0, 0.0, -0.0]), np.array([1.0, 3.0, -2.0]))
    plain, optimised = both(f, args, (1, 2))
    assert _negations(optimised) == 1
    assert_bit_identical(optimised.value_and_grad(*args), plain.value_and_grad(*args))


_ONES = np.ones(1)
_Z, _W, _ZERO = np.array([1 + 1j]), np.array([1 + 0j]), np.array([0j])


@pytest.mark.parametrize(
    "f, recorded_at, replayed_at",
    [
        # Complex: parts cancel to +0 one way and -0 the other; a complex quotient by
        # zero divides by its absolute real part; a real operand's imaginary part is +0.
        (lambda x, z, w: ad.sum(ad.real(-((-z) * w)) * x), (_ONES, _Z, _Z), (_ONES, _Z, _Z)),
        (lambda x, z, w: ad.sum(ad.real(1.0 + w / (-z)) * x), (_ONES, _Z, _W), (_ONES, _ZERO, _W)),
        (lambda x, z, w: ad.sum(ad.real((-w) / (-z)) * x), (_ONES, _Z, _W), (_ONES, _ZERO, _W)),
        (
            lambda x, z, w: ad.sum(ad.imag((-x) * (-z))),
            (_ONES, _Z, _W),
            (np.array([2.0]), np.array([-1 - 0.0j]), _W),
        ),
        # (inf+nanj) * 1 is nan+nanj, not the identity it is on real numbers.
        (
            lambda x, z, w: ad.sum(ad.real(z * 1.0) * x),
            (_ONES, _Z, _W),
            (_ONES, np.array([complex(np.inf, np.nan)]), _W),
        ),
        # Integers: a negation wraps (-uint8(1) is 255), so no sign folds past one.
        (
            lambda x, n: ad.sum(x + ad.negative(n) * x),
            (np.array([1.0, 2.0]), np.array([1, 2], np.uint8)),
            (np.array([1.0, 2.0]), np.array([1, 2], np.uint8)),
        ),
        (
            lambda x, n: ad.sum(x + ad.negative(n)),
            (np.array([1.0]), np.array([1], np.uint8)),
            (np.array([1.0]), np.array([1], np.uint8)),
        ),
        (
            lambda x, n, m: ad.sum(((-n) / (-m)) * x),
            (np.array([1.0, 2.0]), np.array([1, 2], np.uint8), np.array([3, 4], np.uint8)),
            (np.array([1.0, 2.0]), np.array([1, 2], np.uint8), np.array([3, 4], np.uint8)),
        ),
    ],
    ids=[
        "complex-product",
        "complex-quotient-by-negated-zero",
        "complex-both-negated",
        "real-times-complex",
        "complex-times-one",
        "uint8-product",
        "uint8-sum",
        "uint8-quotient",
    ],
)
def test_signs_fold_only_where_exact_real_floats_not_complex_or_integers(
    f, recorded_at, replayed_at
):
    plain, optimised = both(f, recorded_at, 0)
    with np.errstate(all="ignore"):
        got, expected = optimised.value_and_grad(*replayed_at), plain.value_and_grad(*replayed_at)
    assert_identical_but_nan_signs(got, expected)


def test_adding_positive_zero_is_kept_because_it_turns_negative_zero_positive():
    x = np.array([-0.0, 1.0])
    plain, optimised = both(lambda x: ad.sum((x + 0.0) * np.array([1.0, 0.0])), (x,), 0)
    kept = [s for s in optimised.program.steps if getattr(s, "op", None) is ad.OPS["add"]]
    assert kept, "x + 0.0 must stay: (-0.0) + 0.0 is +0.0"
    assert_bit_identical(optimised.value_and_grad(x), plain.value_and_grad(x))


def test_common_subexpressions_are_computed_once():
    # sin(x) appears twice in the forward pass; both uses read one result.
    f = lambda x: ad.sum(ad.sin(x) * ad.sin(x))
    x = np.linspace(0.1, 1.0, 5)
    plain, optimised = both(f, (x,), 0)
    sines = lambda c: sum(getattr(s, "op", None) is ad.OPS["sin"] for s in c.program.steps)
    assert sines(plain) == 2 and sines(optimised) == 1
    assert_bit_identical(optimised.value_and_grad(x), plain.value_and_grad(x))


def test_constants_are_folded_as_f_is_recorded():
    # exp(sin(2)) holds no input: it runs once, at recording, and enters as a constant.
    f = lambda x: ad.sum(x * ad.exp(ad.sin(2.0)))
    plain = ad.compile(f, np.ones(4), optimise=False)
    assert [s.op.name for s in plain.program.steps] == ["multiply", "sum"]
    np.testing.assert_allclose(plain(np.full(4, 2.0)), 8 * np.exp(np.sin(2.0)), rtol=1e-15)


def test_guards_stay_where_the_value_they_read_can_change():
    f = lambda x: ad.sum(x**2) if ad.sum(x) > 0 else ad.sum(-x)
    compiled = ad.compile(f, np.ones(3))
    assert compiled.program.guards == 1
    np.testing.assert_array_equal(compiled.grad(-np.ones(3)), -np.ones(3))
    assert compiled.recordings == 2


def test_fused_unbroadcasting_lets_ops_broadcast_and_sums_drop_the_axes_they_sum():
    # The reshape's rule reshapes the cotangent the subtraction unbroadcast to (5, 1, 2):
    # a sum keeping axis -2 for the reshape to drop (the means come first: the second
    # argument's share is negated after its sum). The log-sum-exp's rule broadcasts its
    # cotangent (5, 7, 1) to (5, 7, 2) before multiplying by exp(y).
    def f(means, points):
        centred = ad.reshape(means, (5, 1, 2)) - points
        return ad.sum(ad.log(ad.sum(ad.exp(centred * centred), axis=-1)))

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((5, 2)), rng.standard_normal((5, 7, 2)))
    plain = CompiledFunction(f, (0, 1), args, passes=())
    fused = CompiledFunction(f, (0, 1), args, passes=(fuse_unbroadcast,))

    def pattern(compiled):
        steps = [s for s in compiled.program.steps if getattr(s, "op", None)]
        made = {s.out: s.op.name for s in steps}
        reads = [(made.get(slot), s.op.name) for s in steps for kind, slot in s.args if kind == "s"]
        return reads.count(("sum", "reshape")), reads.count(("broadcast_to", "multiply"))

    assert pattern(plain) == (1, 1)
    assert pattern(fused) == (0, 0)
    assert _stats(fused)["eliminate_dead_code"][1] == plain.program.instructions - 2
    moved = tuple(a * 0.9 + 0.1 for a in args)
    assert_bit_identical(fused.value_and_grad(*moved), plain.value_and_grad(*moved))
    gradient = ad.grad(f, argnums=(0, 1))(*moved)
    for got, expected in zip(fused.grad(*moved), gradient):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
