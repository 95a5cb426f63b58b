"""Random programs with masks and index arguments: a replay equals eager execution.

Each program transforms ``x`` elementwise, then adds terms that select from
the result with masks (``z[z > c]``, ``where``, ``nonzero``, ``len`` of a
selection) or with its other arguments (an integer array, an integer, a
boolean mask). It is compiled at one point and replayed at others, chosen
so that masks flip and selections change size; value and gradient must
equal eager reverse mode's there.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import adcompare as ad
from adcompare.sparsity import jacobian_pattern

SIZE = 5

ELEMENTWISE = {
    "sin": ad.sin,
    "tanh": ad.tanh,
    "square": lambda z: z * z,
    "affine": lambda z: 1.5 * z - 0.25,
    "relu": ad.relu,
    "abs": ad.abs,
}


def _mask_select(z, c, index, k, keep):
    selected = z[z > c]
    return ad.sum(ad.sin(selected) * selected)


def _mask_count(z, c, index, k, keep):
    selected = z[z < c]
    return ad.sum(selected) / (1 + len(selected))


def _nonzero(z, c, index, k, keep):
    return ad.sum(z[np.nonzero(z >= c)] ** 2)


def _where(z, c, index, k, keep):
    return ad.sum(ad.where(z > c, ad.tanh(z), z * z))


def _integer_array(z, c, index, k, keep):
    return ad.sum(ad.exp(z[index]) * c)


def _integer(z, c, index, k, keep):
    return z[k] * z[0]


def _boolean_mask(z, c, index, k, keep):
    return ad.sum(z[keep] * z[keep][::-1])


def _maximum(z, c, index, k, keep):
    return ad.sum(ad.maximum(z, c))


# Decisions ops take from values: an order, positions, a sign.
RANKS = np.arange(1.0, SIZE + 1.0)


def _sort(z, c, index, k, keep):
    return ad.sum(ad.sort(z) * RANKS)


def _partition(z, c, index, k, keep):
    return ad.sum(ad.partition(z, 2) * RANKS)


def _median(z, c, index, k, keep):
    return ad.median(z) * z[0]


def _quantile(z, c, index, k, keep):
    return ad.quantile(z, 0.3) + ad.percentile(z * z, 80.0)


def _take(z, c, index, k, keep):
    return ad.sum(ad.take(z, index) * RANKS[:3]) + ad.sum(ad.take_along_axis(z, index, 0))


def _slogdet_sign(z, c, index, k, keep):
    # det = z0 z1 - pi/2 takes both signs and, for numbers of a few decimals, never 0.
    s = np.sqrt(np.pi / 2)
    sign, _ = ad.slogdet(ad.reshape(ad.stack([z[0], z[0] * 0.0 + s, z[1] * 0.0 + s, z[1]]), (2, 2)))
    return sign * ad.sum(z) * c


TERMS = [
    _mask_select,
    _mask_count,
    _nonzero,
    _where,
    _integer_array,
    _integer,
    _boolean_mask,
    _maximum,
    _sort,
    _partition,
    _median,
    _quantile,
    _take,
    _slogdet_sign,
]
#: Terms whose output's shape does not follow x's values: they have a global pattern.
SHAPED_BY_VALUES = {_mask_select, _mask_count, _nonzero}

points = st.lists(
    st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3)),
    min_size=SIZE,
    max_size=SIZE,
).map(np.array)
arguments = st.tuples(
    points,
    st.lists(st.integers(0, SIZE - 1), min_size=3, max_size=3).map(np.array),
    st.integers(-SIZE, SIZE - 1),
    st.lists(st.booleans(), min_size=SIZE, max_size=SIZE).map(np.array),
)
programs = st.tuples(
    st.lists(st.sampled_from(sorted(ELEMENTWISE)), max_size=3),
    st.lists(
        st.tuples(st.sampled_from(TERMS), st.floats(-1.0, 1.0).map(lambda v: round(v, 2))),
        min_size=1,
        max_size=4,
    ),
)


def _program(steps, terms):
    def f(x, index, k, keep):
        z = x
        for name in steps:
            z = ELEMENTWISE[name](z)
        total = 0.0
        for term, c in terms:
            total = total + term(z, c, index, k, keep)
        return total

    return f


@settings(max_examples=60, deadline=None)
@given(programs, arguments, st.lists(arguments, min_size=1, max_size=3))
def test_replay_equals_eager_execution_at_new_inputs(program, recorded_at, new_inputs):
    f = _program(*program)
    compiled = ad.compile(f, *recorded_at)
    # The recording point negated flips every mask that compares with zero.
    flipped = (-recorded_at[0], *recorded_at[1:])
    for args in [flipped, *new_inputs]:
        value, gradient = compiled.value_and_grad(*args)
        eager_value, eager_gradient = ad.value_and_grad(f)(*args)
        np.testing.assert_allclose(value, eager_value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gradient, eager_gradient, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(compiled(*args), eager_value, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(programs, arguments, st.lists(arguments, min_size=1, max_size=2))
def test_forward_replay_equals_eager_execution_at_new_inputs(program, recorded_at, new_inputs):
    f = _program(*program)
    compiled = ad.compile(f, *recorded_at, mode="forward")
    flipped = (-recorded_at[0], *recorded_at[1:])
    for args in [flipped, *new_inputs]:
        value, jacobian = compiled.value_and_jacobian(*args)
        np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jacobian, ad.jacfwd(f)(*args), rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(programs, arguments, st.lists(points, min_size=1, max_size=2))
def test_a_sparsity_pattern_traced_at_one_point_holds_at_others(program, recorded_at, others):
    """The terms' vector: traced at one x, its global pattern holds at every other x."""
    steps, terms = program
    assume(not any(term in SHAPED_BY_VALUES for term, _ in terms))
    _, index, k, keep = recorded_at

    def f(x):
        return ad.stack([_program(steps, [term])(x, index, k, keep) for term in terms])

    pattern = jacobian_pattern(f, recorded_at[0]).toarray()
    for x in [-recorded_at[0], *others]:
        jacobian = np.asarray(ad.jacfwd(f)(x))
        assert not ((jacobian != 0) & ~pattern).any()
