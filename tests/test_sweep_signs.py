"""The eager sweep carries negations (``y - x``, ``-x``) instead of computing them.

Each case is run twice: as the sweep does it, and with the negation hints
removed, so that every negation is computed where the rule makes it. Negation is
exact and every built-in rule is linear in its cotangent, so the two must agree
bit for bit (on these programs the sign of every zero too: in general a held
total cannot tell a scattered zero from a negated one); and against finite
differences, so that neither is wrong in the same way.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import adcompare as ad
from adcompare.engines.reverse.sweep import IN_PLACE_FROM
from adcompare.ops import OPS
from adcompare.ops.registry import Hints, unbroadcast
from adcompare.ops.shape import _covered_ranges, _outside

from .test_transforms import rosenbrock, rosenbrock_gradient

NEGATING = [op for op in OPS.values() if op.hints.vjp_negates is not None]


@pytest.fixture
def computed_negations(monkeypatch):
    """A context in which every negation is computed by its rule, as before carrying."""

    def without():
        for op in NEGATING:
            monkeypatch.setattr(op, "hints", dataclasses.replace(op.hints, vjp_negates=None))

    return without


def assert_same_bits(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def finite_difference(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.empty_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


SIDE = 70  # 70 × 70 = 4900 elements: above IN_PLACE_FROM, so owned sums are added into
assert SIDE * SIDE >= IN_PLACE_FROM

PROGRAMS = {
    # a negated share scattered first into a slice, then shares of both signs added
    "rosenbrock": lambda x: rosenbrock(x.reshape(-1)),
    # negated, fresh, then a positive share over a box: one pass, the rest negated
    "box of a matrix": lambda x: (
        ad.sum(ad.sin(x[1:, 2:-1]) - x[:-1, 1:-2] ** 2) - ad.sum(x[3] * x[3])
    ),
    "reversed and single rows": lambda x: (
        ad.sum(-(x[::-1] * 0.5) - (1.0 - x[2]) ** 2) + ad.sum(ad.tanh(x[2]))
    ),
    "integer arrays": lambda x: ad.sum(-ad.exp(0.1 * x[[0, 0, 3]])) + ad.sum(x[[0, 2]] ** 2),
    "strided slices": lambda x: ad.sum(ad.cos(x[::2]) - x[1::2] * x[::2]) - ad.sum(x[::3]),
    "double negation": lambda x: ad.sum(ad.negative(-(x * x))) - ad.sum(-x[1:]),
    "fan-out of a negated share": lambda x: ad.sum(ad.sin(-(x[1:] + x[:-1])) * 2.0),
    "a negated share of a scalar element": lambda x: ad.sum(x * x) - x[2, 3] * 3.0,
    # then a positive one into the same element
    "an element after a negated slice": lambda x: x[2, 3] * 3.0 + ad.sum(1.0 - x[1:]),
    "only negated shares": lambda x: ad.sum(1.0 - ad.sin(x[1:])) - ad.sum(x),
    # the shares reaching one record, in the order the sweep adds them:
    "negated, negated, positive": lambda x: _shares(x, ("-", "-", "+")),
    "positive, positive, negated": lambda x: _shares(x, ("+", "+", "-")),
    "positive, negated": lambda x: _shares(x, ("+", "-")),
    "negated, positive, negated": lambda x: _shares(x, ("-", "+", "-")),
    # a negated scalar, spread by the sum: negated before it grows, not after
    "a constant minus a sum of squares": lambda x: 3.0 - 0.5 * ad.sum(ad.sin(x) * ad.sin(x)),
}


def _shares(x, signs):
    """A sum of ``sin(x)``'s uses with these signs: the sweep meets them last first."""
    s = ad.sin(x)
    total = 0.0
    for k, sign in reversed(list(enumerate(signs))):
        term = ad.sum(s * (k + 2.0)) if sign == "+" else -ad.sum(s)
        total = total + term
    return total


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("side", [4, SIDE])
def test_carried_negations_give_the_computed_ones_bit_for_bit(name, side, computed_negations):
    f = PROGRAMS[name]
    x = np.random.default_rng(side).uniform(-1.0, 1.0, (side, side))
    with ad.count() as carried_cost:
        carried = ad.grad(f)(x)
    computed_negations()
    with ad.count() as computed_cost:
        computed = ad.grad(f)(x)
    assert_same_bits(carried, computed)
    # Carrying a sign never adds element work: it is folded, or computed once.
    assert carried_cost.elements["numpy"] <= computed_cost.elements["numpy"]
    if side == 4:
        np.testing.assert_allclose(carried, finite_difference(f, x), rtol=1e-6, atol=1e-8)


def test_rosenbrock_backward_computes_no_negation_and_matches_the_formula(computed_negations):
    x = np.where(np.arange(5000) % 2 == 0, -1.2, 1.0)
    leaf = ad.Tensor(x, requires_grad=True)
    y = rosenbrock(leaf)
    with ad.count() as carried:
        y.backward()
    np.testing.assert_allclose(leaf.grad.numpy(), rosenbrock_gradient(x), rtol=1e-13)
    computed_negations()
    leaf = ad.Tensor(x, requires_grad=True)
    y = rosenbrock(leaf)
    with ad.count() as computed:
        y.backward()
    # Two subtractions, each negating a full-size share, in the computed sweep only.
    assert computed.by_op[("numpy", "negative")] == 2
    assert carried.by_op[("numpy", "negative")] == 0
    assert computed.elements["numpy"] - carried.elements["numpy"] == 2 * (x.size - 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_negated_value_is_computed_where_it_leaves_the_sweep(dtype, computed_negations):
    # retain_grad on a negated record, a target of autograd_grad, and a leaf that
    # already holds a gradient: each sees the value, not the negation carried.
    x0 = np.linspace(-1.0, 1.0, 5000).astype(dtype)

    def run():
        x = ad.Tensor(x0, requires_grad=True)
        x.grad = ad.Tensor(np.ones_like(x0))
        a = 1.0 - x[1:]
        a.retain_grad()  # a's record receives b's share of it negated
        b = ad.sin(x[:-1]) - a
        (db,) = ad.autograd_grad(ad.sum(b), [a], retain_graph=True)
        ad.sum(b).backward()
        return x.grad.numpy(), a.grad.numpy(), db.numpy()

    carried = run()
    computed_negations()
    for got, expected in zip(carried, run()):
        assert got.dtype == dtype
        assert_same_bits(got, expected)
    np.testing.assert_array_equal(carried[1], -np.ones_like(x0[1:]))
    np.testing.assert_array_equal(carried[2], carried[1])
    expected = 1.0 + np.append(np.cos(x0[:-1]), 0.0) + np.append(0.0, np.ones_like(x0[1:]))
    np.testing.assert_allclose(carried[0], expected, rtol=1e-6)


def test_higher_order_derivatives_through_negations_are_unchanged():
    x = ad.Tensor(np.array([0.3, -0.7, 1.1]), requires_grad=True)
    y = ad.sum(-(x**3) - (1.0 - x) ** 2)
    (g,) = ad.autograd_grad(y, [x], create_graph=True)
    (h,) = ad.autograd_grad(ad.sum(g), [x])
    x0 = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), -3.0 * x0**2 + 2.0 * (1.0 - x0))
    np.testing.assert_allclose(h.numpy(), -6.0 * x0 - 2.0)


@pytest.mark.parametrize("op", NEGATING, ids=lambda op: op.name)
def test_a_negation_hint_says_what_its_rule_computes(op):
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((3, 4)), rng.standard_normal((4,))][: op.nargs]
    out = op.value(*args)
    out_bar = rng.standard_normal(np.shape(out))
    for i, negates in enumerate(op.hints.vjp_negates):
        expected = -unbroadcast(out_bar, np.shape(args[i]))
        got = op.vjp_rules[i](out, *args, out_bar)
        if negates:
            np.testing.assert_array_equal(got, expected)
        else:
            assert not np.array_equal(got, expected)


def test_new_rules_replace_the_negation_they_had(monkeypatch):
    # A test or user swapping subtract's rules must see them run, not the old sign.
    subtract = OPS["subtract"]
    halved = (subtract.vjp[0], lambda out, x, y, out_bar: out_bar * -0.5)
    x = np.linspace(0.0, 1.0, 5)
    with monkeypatch.context() as patch:
        patch.setattr(subtract, "vjp", halved)
        assert subtract.vjp_negates is None
        np.testing.assert_allclose(ad.grad(lambda v: ad.sum(1.0 - v))(x), np.full(5, -0.5))
    assert subtract.vjp_negates == (False, True)  # its own rules back, and their hint
    np.testing.assert_array_equal(ad.grad(lambda v: ad.sum(1.0 - v))(x), np.full(5, -1.0))


def test_a_negation_hint_needs_one_entry_per_argument():
    with pytest.raises(ValueError, match="vjp_negates needs one bool per argument position"):
        ad.defop(
            "negates_wrong_length",
            np.subtract,
            nargs=2,
            jvp=(lambda out, x, y, d: d, lambda out, x, y, d: -d),
            vjp=(lambda out, x, y, g: g, lambda out, x, y, g: -g),
            hints=Hints(vjp_negates=(True,)),
        )


@pytest.mark.parametrize(
    ("shape", "index"),
    [
        ((7,), (slice(2, 5),)),
        ((4, 6), (slice(1, 3), 2)),
        ((3, 4, 5), (1, slice(1, 3), slice(0, 5))),
    ],
)
def test_the_slabs_outside_a_box_cover_everything_else_once(shape, index):
    ranges = _covered_ranges(index, shape)
    hits = np.zeros(shape, dtype=int)
    hits[index] += 100
    for slab in _outside(ranges):
        hits[slab] += 1
    np.testing.assert_array_equal(hits[index], 100)
    assert np.all((hits == 100) | (hits == 1))


# --- what a reviewer's differential fuzz found ----------------------------------------------

INDEXED = {
    # numpy reads a boolean scalar as a 0-d mask: a new axis, not the integer 1 or 0
    "x[True] beside a negated slice": lambda x: ad.sum(ad.sin(x[True])) + ad.sum(-(x[0:2])),
    "x[False] beside a negated slice": lambda x: ad.sum(x[False] * 2.0) + ad.sum(-(x[0:2])),
    "x[1:, True] beside a negated row": lambda x: ad.sum(x[1:, True] * 2.0) + ad.sum(-(x[0])),
    # a sequence inside the index is an integer array, which may repeat a position
    "x[(0, 0),]": lambda x: ad.sum(x[(0, 0),] * 2.0),
    "x[(0, 0),] beside a slice": lambda x: ad.sum(x[(0, 0),] * 2.0) + ad.sum(x[0:2] * 3.0),
    "x[range(3)] beside a negated slice": lambda x: ad.sum(x[range(3)] * 2.0) + ad.sum(-(x[0:2])),
}


@pytest.mark.parametrize("name", INDEXED)
def test_boolean_scalars_and_sequences_in_an_index_are_differentiated_as_numpy_reads_them(name):
    f = INDEXED[name]
    x = np.linspace(0.1, 1.0, 12).reshape(3, 4) if "1:, True" in name else np.linspace(0.1, 1, 6)
    np.testing.assert_allclose(ad.grad(f)(x), finite_difference(f, x), rtol=1e-6, atol=1e-8)


def test_a_users_rule_gets_its_cotangent_with_its_sign():
    # Clipping a gradient is not linear: the negation must be computed before it.
    @ad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda saved, g: (ad.clip(g, -0.5, 2.0),))
    g = ad.grad(lambda x: ad.sum(-clip_gradient(x)))(np.ones(3))
    np.testing.assert_array_equal(g, [-0.5, -0.5, -0.5])


def test_a_users_accumulate_hook_keeps_its_signature_and_only_adds():
    calls = []

    def accumulate(total, out, x, out_bar, k):
        calls.append(k)
        total[k] += out_bar

    take = ad.defop(
        "take_with_a_users_hook",
        lambda x, k: np.asarray(x)[k],
        jvp=lambda out, x, x_dot, k: x_dot[..., k],
        vjp=lambda out, x, g, k: ad.scatter_add(g, index=(k,), shape=np.shape(x)),
        hints=Hints(accumulate_vjp=accumulate),
    )
    del OPS["take_with_a_users_hook"]  # out of the registry; the function keeps its record
    x = np.arange(1.0, 6.0)
    both = ad.grad(lambda x: ad.sum(take(x, k=slice(1, 3)) * 2.0) + ad.sum(take(x, k=slice(2, 5))))
    np.testing.assert_array_equal(both(x), [0.0, 2.0, 3.0, 1.0, 1.0])
    assert calls == [slice(1, 3)]
    # into a total held negated (1 - x[0:2] came first): the sweep subtracts it itself
    calls.clear()
    mixed = ad.grad(lambda x: ad.sum(take(x, k=slice(1, 3)) * 2.0) + ad.sum(1.0 - x[0:2]))
    np.testing.assert_array_equal(mixed(x), [-1.0, 1.0, 2.0, 0.0, 0.0])
    assert calls == []


def test_a_freed_graph_still_says_so_after_a_negation():
    x = ad.Tensor(np.linspace(0.1, 1.0, 6), requires_grad=True)
    h = ad.sin(x)
    ad.sum(h).backward()
    with pytest.raises(RuntimeError, match="already freed"):
        ad.sum(-h).backward()


def test_a_float32_input_gets_a_float32_gradient_through_a_wider_constant():
    y32, c64 = np.ones((), np.float32), np.ones(())
    for f, expected in ((lambda y: c64 - ad.sum(y), -1.0), (lambda y: -(c64 - y), 1.0)):
        g = ad.grad(f)(y32)
        assert np.asarray(g).dtype == np.float32 and float(g) == expected
    leaf = ad.Tensor(y32, requires_grad=True)
    (g,) = ad.autograd_grad(c64 - ad.sum(leaf), [leaf])
    assert g.dtype == np.float32 and float(g.numpy()) == -1.0


def test_an_empty_sequence_in_an_index_selects_nothing_as_in_numpy():
    x = np.arange(20.0).reshape(4, 5)
    for index in ((range(0),), (slice(None), ()), ((), 1), ([],)):
        assert ad.Tensor(x)[index].shape == x[index].shape
    g = ad.grad(lambda a: ad.sum(a[range(0)]) + ad.sum(a[:, ()]) + ad.sum(a[0] * 2.0))(x)
    np.testing.assert_array_equal(g, np.where(np.arange(4)[:, None] == 0, 2.0, 0.0) + 0 * x)


@pytest.mark.parametrize("mask", [[True, False], np.ones((1, 4), bool), np.ones(5, bool)])
def test_a_mask_of_the_wrong_shape_is_refused_as_numpy_refuses_it(mask):
    x = np.arange(20.0).reshape(4, 5)
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[mask]
    with pytest.raises(IndexError, match="boolean index did not match"):
        ad.Tensor(x)[mask]
    with pytest.raises(IndexError, match="boolean index did not match"):
        ad.grad(lambda a: ad.sum(a[mask]))(x)
